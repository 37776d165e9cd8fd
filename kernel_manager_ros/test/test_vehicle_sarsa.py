"""SARSA of the redesign (vehicle/sarsa.py): the update rule by hand, the greedy rule, and the
program applying a speed rule."""
import numpy as np
import pytest

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.experiments.vehicle import ExperimentConfig
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.vehicle.mission import MissionConfig
from kernel_manager_ros.vehicle.model import VehicleConfig
from kernel_manager_ros.vehicle.run import run_missions
from kernel_manager_ros.vehicle.sarsa import SarsaSpeedPolicy, TableSpeedPolicy


def test_sarsa_update_by_hand():
    # one action, so the choice is forced; alpha 0.5, gamma 1
    learner = SarsaSpeedPolicy(edges=(0.05,), factors=(1.5,), alpha=0.5, epsilon=0.0)
    assert learner.factor(0.0, 0) == 1.5                  # flat; no previous step: no update
    learner.factor(0.01, -1)                              # still flat: the action holds
    learner.factor(-0.02, -1)
    assert learner.updates == 0
    learner.factor(0.1, 1)                  # pitched: Q[flat] += .5 ((-1 - 1 + 1) + 0 - 0)
    assert learner.q[0, 0] == pytest.approx(-0.5)
    learner.factor(0.0, -1)                 # flat again: Q[pitched] += .5 (-1 + Q[flat] - 0)
    assert learner.q[1, 0] == pytest.approx(-0.75)
    learner.end(2)                          # terminal: Q[flat] += .5 (2 - (-.5))
    assert learner.q[0, 0] == pytest.approx(0.75)
    assert learner.updates == 3
    assert learner.visits.tolist() == [[2], [1]]
    learner.factor(0.0, 5)                                # a new mission: no update from end
    assert learner.updates == 3


def test_greedy_rule_and_bins():
    learner = SarsaSpeedPolicy(edges=(0.05,), factors=(1.0, 2.0), epsilon=0.0)
    learner.q[:] = [[1.0, 0.0], [0.0, 1.0]]
    rule = learner.greedy()
    assert rule.table == [1.0, 2.0]
    assert rule.factor(0.01, 0) == 1.0 and rule.factor(-0.2, 0) == 2.0   # |pitch|
    assert learner.factor(0.2, 0) == 2.0                                  # epsilon 0: greedy
    with pytest.raises(KernelError):
        SarsaSpeedPolicy(factors=())
    with pytest.raises(KernelError):
        TableSpeedPolicy((0.05,), (1.0,))


def test_the_program_applies_the_speed_rule():
    config = ExperimentConfig()
    spec = StateSpec.from_yaml(config.topics_config)
    mission = MissionConfig.from_yaml(config.mission_config)
    design = VehicleConfig.from_yaml(config.design_config)
    plain = run_missions(design, mission, spec, 2, seed=3)
    ones = run_missions(design, mission, spec, 2, seed=3,
                        speed_policy=TableSpeedPolicy((0.05,), (1.0, 1.0)))
    # factor 1 everywhere is the plain program (fails if the rule is applied twice or
    # changes the program's random stream)
    np.testing.assert_array_equal(plain.missions[-1].poses, ones.missions[-1].poses)
    fast = run_missions(design, mission, spec, 2, seed=3,
                        speed_policy=TableSpeedPolicy((0.05,), (1.3, 1.3)))
    # faster commands finish the legs sooner (fails if the rule is ignored)
    assert sum(fast.missions[-1].leg_durations) < sum(plain.missions[-1].leg_durations) - 1.0
