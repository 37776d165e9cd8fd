"""The mission program, perf(t), ATR, and the design/deploy behaviour of paper 001 Fig. 4."""
import math
import os

import numpy as np
import pytest

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.vehicle.mission import (
    Goal, MissionConfig, MissionProgram, Observation, PerfMonitor, average_total_reward)
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.vehicle.model import VehicleConfig
from kernel_manager_ros.vehicle.run import run_missions

CONFIG = os.path.join(os.path.dirname(__file__), "..", "config")
MISSION = MissionConfig.from_yaml(os.path.join(CONFIG, "mission.yaml"))
SPEC = StateSpec.from_yaml(os.path.join(CONFIG, "vehicle_topics.yaml"))


def vehicle(name):
    return VehicleConfig.from_yaml(os.path.join(CONFIG, f"vehicle_{name}.yaml"))


@pytest.fixture(scope="module")
def design():
    return run_missions(vehicle("design"), MISSION, SPEC, 25, seed=1)


@pytest.fixture(scope="module")
def deploy():
    return run_missions(vehicle("deploy"), MISSION, SPEC, 25, seed=1)


def test_perf_monitor_follows_the_formula_of_section_4():
    monitor = PerfMonitor()
    goal = Goal("g", 5.0, 15.0, epsilon=0.75, deadline=8.0)
    monitor.start(goal, t=10.0)
    assert monitor.value(5.5, 15.2, 12.0) == 1         # within epsilon, in time
    assert monitor.value(5.0, 14.0, 12.0) == 0         # not there yet, in time
    assert monitor.value(5.0, 15.0, 18.0) == 1         # d(t) = d_i still counts
    assert monitor.value(5.0, 15.0, 18.1) == -1        # late, even at the goal
    assert monitor.value(0.0, 0.0, 30.0) == -1
    with pytest.raises(KernelError, match="no goal"):
        PerfMonitor().value(0.0, 0.0, 0.0)


def test_atr_is_the_running_average_of_mission_totals():
    np.testing.assert_allclose(average_total_reward([3, -7, 3, -7]), [3, -2, -1 / 3, -2])
    with pytest.raises(KernelError):
        average_total_reward(np.zeros((2, 2)))


def test_design_meets_every_deadline_with_margin(design):
    assert np.all(design.totals == len(MISSION.goals))  # +1 per goal, never late
    assert design.atr[-1] == 3.0
    legs = np.array([m.leg_durations for m in design.missions])
    deadlines = np.array([g.deadline for g in MISSION.goals])
    assert np.all(legs.max(0) < deadlines - 0.5)


def test_deployment_with_the_ramp_misses_the_site_2_deadline(design, deploy):
    """Fig. 4: the ramp between site 1 and site 2 makes the program miss that deadline."""
    legs = np.array([m.leg_durations for m in deploy.missions])
    deadlines = np.array([g.deadline for g in MISSION.goals])
    assert np.all(legs[:, 1] > deadlines[1] + 0.3)      # every mission is late on leg 2
    assert np.all(legs[:, [0, 2]].max(0) < deadlines[[0, 2]] - 0.5)
    assert np.all(deploy.totals <= -2) and deploy.atr[-1] < design.atr[-1] - 6


def test_a_pitch_speed_gain_redesign_recovers_the_deployment():
    """The parameter the paper's SARSA redesign changed: faster when the pitch is not zero."""
    redesign = MISSION.with_program(pitch_speed_gain=5.0)
    result = run_missions(vehicle("deploy"), redesign, SPEC, 10, seed=2)
    assert result.atr[-1] == 3.0


def test_the_slow_gps_makes_the_program_overshoot(design):
    slow = run_missions(vehicle("deploy_slow_gps").with_overrides(ramp=False), MISSION, SPEC,
                        10, seed=1)
    # the farthest the vehicle gets beyond the site line y = 15 (the turns of Fig. 8(b))
    overshoot = [max(m.poses[:, 1].max() for m in r.missions[:10]) for r in (design, slow)]
    assert overshoot[1] > overshoot[0] + 0.5


def test_program_commands_are_bounded_and_noisy():
    program = MissionProgram(MISSION, np.random.default_rng(0))
    program.start(0.0)
    obs = Observation(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    ticks = [program.tick(obs, 0.1 * k) for k in range(1, 30)]
    speeds = np.array([t.command.speed for t in ticks])
    assert np.all(speeds <= MISSION.program.max_speed + MISSION.program.speed_noise)
    assert speeds.std() > 0.005                          # the zero-mean noise is there
    assert all(t.perf == 0 and not t.done for t in ticks)
    with pytest.raises(KernelError, match="NaN"):
        program.tick(Observation(math.nan, 0, 0, 0, 0, 0, 0), 4.0)


def test_mission_times_out():
    config = MissionConfig(mission_timeout=5.0)
    result = run_missions(vehicle("design"), config, SPEC, 1)
    assert not result.missions[0].completed
    assert result.missions[0].times[-1] - result.missions[0].times[0] == pytest.approx(5.0)


def test_mission_config_round_trip_and_errors(tmp_path):
    assert MissionConfig.from_dict(MISSION.to_dict()) == MISSION
    assert MISSION.with_program(pitch_speed_gain=2.0).program.pitch_speed_gain == 2.0
    with pytest.raises(KernelError, match="unknown program parameter"):
        MISSION.with_program(gain=1.0)
    for data, message in (({"goals": [{"name": "a", "x": 0}]}, "lacks key"),
                          ({"program": {"max_speed": -1}}, "max_speed"),
                          ({"program": {"speed": 1}}, "unknown program"),
                          ({"goal": []}, "unknown keys"),
                          ({"goals": [{"name": "a", "x": 0, "y": 0, "epsilon": 1,
                                       "deadline": "soon"}]}, "soon")):
        with pytest.raises(KernelError, match=message):
            MissionConfig.from_dict(data)
