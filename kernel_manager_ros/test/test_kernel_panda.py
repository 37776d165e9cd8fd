"""Kernels applied to the Panda (panda.py, experiments/panda.py): histories from a small
panda_pairs pair bag, the manager applied through SimulatedRobot.set_state, the experiment's
JSON, bad input."""
import dataclasses
import importlib.machinery
import importlib.util
import json
import os

import numpy as np
import pytest
import rosbag

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.generation import GenerationConfig
from kernel_manager_ros.kernel import Kernel, KernelSet
from kernel_manager_ros.manager import KernelManager
from kernel_manager_ros.experiments.panda import PandaExperiment, run_experiment
from kernel_manager_ros.panda import (PANDA_TOPICS, PandaLayout, histories, read_pair_trajectories,
                                      remap_namespace, replay)
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.transfer import LinearTransfer, SensorTransfer

from panda_pairs import CollectionRequest, run_collection
from panda_sim2real import (DEFAULT_WORK_CYCLE_FILE, JointLimits, RobotConfig, SIM_CONFIG_FILE,
                            SimulatedRobot, TASK)

SPEC = StateSpec.from_yaml(PANDA_TOPICS)
LIMITS = JointLimits.from_yaml()
LAYOUT = PandaLayout.from_spec(SPEC, LIMITS.dof)
SCRIPTS = os.path.join(os.path.dirname(PANDA_TOPICS), "..", "scripts")


def load_script(name):
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_") + "_script",
                                                  os.path.join(SCRIPTS, name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pair_bag(tmp_path_factory):
    """Four short single-joint pairs (simulation and stand-in in lock-step, seeded)."""
    path = str(tmp_path_factory.mktemp("panda") / "pairs.bag")
    run_collection(CollectionRequest(out=path, trajectories=4, seed=3, kinds=("single",),
                                     show_progress=False))
    return path


@pytest.fixture(scope="module")
def trajectories(pair_bag):
    return read_pair_trajectories(pair_bag, SPEC, LIMITS)[0]


@pytest.fixture
def sim():
    robot = SimulatedRobot(RobotConfig.from_yaml(SIM_CONFIG_FILE), LIMITS)
    yield robot
    robot.close()


def test_histories_from_a_pair_bag(trajectories):
    assert len(trajectories) == 4
    h_sim, h_phy = histories(trajectories, LAYOUT, 0.01)
    assert h_sim.state_dim == 14 and h_sim.action_dim == 7
    assert np.unique(h_sim.episodes).size == 4 and np.unique(h_phy.episodes).size == 4
    tr = trajectories[0]
    first = h_phy.episodes == h_phy.episodes[0]
    np.testing.assert_allclose(h_phy.states[first][:, :7], tr.real.q[:-1], atol=1e-12)
    np.testing.assert_allclose(h_phy.states[first][:, 7:], tr.real.qd[:-1], atol=1e-12)
    # the action is the commanded position at the step's time
    np.testing.assert_allclose(h_phy.actions[first][5], tr.command.sample(tr.real.t[5] - tr.start)[0])
    assert np.all(h_sim.rewards <= 0.0)
    # there is a gap (the first episode's common samples: the stand-in's stamps jitter as a
    # robot's, so an episode's window can hold one sample more or less on either side)
    s_first = h_sim.episodes == h_sim.episodes[0]
    n = min(int(s_first.sum()), int(first.sum()))
    assert np.abs(h_sim.states[s_first][:n] - h_phy.states[first][:n]).max() > 1e-3
    coarse, _ = histories(trajectories, LAYOUT, 0.1)
    assert len(h_sim) / len(coarse) == pytest.approx(10, rel=0.1)


def shift_kernel(centre: np.ndarray, kind: str, shift: float = 0.05) -> Kernel:
    """A kernel over the whole state space whose f_k moves joint 1 by ``shift`` rad."""
    c = np.zeros(14)
    c[0] = shift
    block = SensorTransfer("joint_states", 0, 14, np.eye(14), np.zeros((14, 7)), c)
    return Kernel(centre=centre, sigma=100.0, p_sim=0.5, p_phy=0.5,
                  transfer=LinearTransfer((block,), 14, 7, None), kind=kind)


def manager_with(kernel: Kernel) -> KernelManager:
    return KernelManager(KernelSet((kernel,), SPEC.state_names, SPEC.action_names, SPEC.weights,
                                   0.5, {}))


def test_motor_kernel_sets_the_simulation_through_set_state(trajectories, sim):
    tr = trajectories[0]
    plain = replay(sim, tr, LAYOUT, 0.01, None, settle=0.5)
    centre = plain.states[0]
    motor = replay(sim, tr, LAYOUT, 0.01, manager_with(shift_kernel(centre, "motor")), 0.5)
    assert motor.steps == plain.times.size - 1 and motor.sensor == 0
    # every step the simulation was set to f_k(s, a) through set_state, until joint 1 was
    # pushed to its limit, where set_state refuses f_k(s, a) (counted, the replay goes on)
    assert motor.motor > 10 and motor.motor + motor.refused == motor.steps
    moved = motor.states[1:, 0] - plain.states[1:, 0]
    assert moved[0] == pytest.approx(0.05, abs=1e-3)
    assert moved[:10].max() > 0.1          # it accumulates: the simulation goes on from f_k
    assert np.all(motor.states[:, 0] <= LIMITS.position_max[0])


def test_sensor_kernel_changes_the_report_not_the_physics(trajectories, sim):
    tr = trajectories[1]
    plain = replay(sim, tr, LAYOUT, 0.01, None, settle=0.5)
    sensor = replay(sim, tr, LAYOUT, 0.01, manager_with(shift_kernel(plain.states[0], "sensor")),
                    0.5)
    assert sensor.sensor == plain.times.size - 1 and sensor.motor == 0
    # reported: f_k(s, a) of the simulation's own previous state; the physics ran unchanged
    np.testing.assert_allclose(sensor.states[1:, 0], plain.states[:-1, 0] + 0.05, atol=1e-9)
    np.testing.assert_allclose(sensor.states[1:, 1:], plain.states[:-1, 1:], atol=1e-9)


def test_replay_without_kernels_reproduces_the_recorded_simulation(trajectories, sim):
    tr = trajectories[2]
    plain = replay(sim, tr, LAYOUT, 0.01, None, settle=2.0)
    n = min(plain.times.size, tr.sim.t.size)
    # the replay starts at rest with a fresh PID integral, the recording after the previous
    # move: they differ by the integral's history (a few 0.01 rad on the loaded joint 2)
    assert np.abs(plain.states[:n, :7] - tr.sim.q[:n]).max() < 0.03
    real = tr.real.q[:n]
    replay_mse = np.square(plain.states[:n, :7] - real).mean()
    recorded_mse = np.square(tr.sim.q[:n] - real).mean()
    assert 0.1 * recorded_mse < replay_mse < 2.0 * recorded_mse   # same order of magnitude


def test_experiment_json_keys(pair_bag, tmp_path):
    config = PandaExperiment(bag=pair_bag, out_dir=str(tmp_path), held_out=0.5, settle=0.5,
                             generation=GenerationConfig(rollouts=200, max_rollout_length=100,
                                                         sigma=0.01))
    figures, kernel_set, _ = run_experiment(config, progress=False)
    assert figures["label"] == "reality stand-in"
    assert set(figures["kernels"]) >= {"motor", "sensor"}
    assert figures["kernels"]["motor"] + figures["kernels"]["sensor"] == len(kernel_set)
    for key in ("without_kernels", "with_kernels", "recorded_sim"):
        for field in ("position_mse", "velocity_mse"):
            values = figures[key][field]
            assert len(values) == 7 and all(v is not None and v >= 0.0 for v in values)
    assert len(figures["ratio"]["position_mse"]) == 7
    assert figures["trajectories"] == {"train": 2, "held_out": 2,
                                       "held_out_ids": figures["trajectories"]["held_out_ids"]}
    json.dumps(figures)   # plain JSON


def test_script_writes_json_and_kernel_file(pair_bag, tmp_path):
    module = load_script("panda-kernels")
    out = tmp_path / "out.json"
    assert module.main(["--bag", pair_bag, "--out-dir", str(tmp_path), "--rollouts", "50",
                        "--settle", "0.2", "--held-out", "0.5", "--json", str(out),
                        "--quiet"]) == 0
    figures = json.loads(out.read_text())
    assert figures["label"] == "reality stand-in"
    assert os.path.isfile(tmp_path / "panda_kernels.yaml")


def test_pair_kernels_makes_the_kernels_of_the_chosen_trajectories(pair_bag, trajectories,
                                                                    tmp_path):
    """pair-kernels (the chain's kernels stage): the kernels of the given ids only, the same as
    the library's pair_kernels on those pairs, written where the manager reads them."""
    from kernel_manager_ros.kernel_file import load_kernels
    from kernel_manager_ros.panda import pair_kernels, select_trajectories

    ids = [int(t.trajectory_id) for t in trajectories[:3]][::-1]
    out, report = tmp_path / "k.yaml", tmp_path / "k.json"
    assert load_script("pair-kernels").main(
        ["--bag", pair_bag, "--trajectories", *map(str, ids), "--rollouts", "100",
         "--max-rollout-length", "80", "--sigma", "0.01", "--seed", "2", "--label", "mine",
         "--out", str(out), "--json", str(report), "--quiet"]) == 0
    figures = json.loads(report.read_text())
    kernel_set = load_kernels(str(out))
    assert figures["trajectories"] == ids and kernel_set.metadata["train_trajectories"] == ids
    assert kernel_set.metadata["label"] == "mine" and figures["kernels"]["total"] == len(kernel_set)
    chosen = select_trajectories(trajectories, ids, pair_bag)
    config = GenerationConfig(rollouts=100, max_rollout_length=80, sigma=0.01, epsilon_p=0.2,
                              fit_length=3, seed=2)
    made = pair_kernels(chosen, SPEC, LAYOUT, 0.01, config)
    assert len(made.kernels) == len(kernel_set) > 0
    assert figures["history"] == {"sim_transitions": made.sim_transitions,
                                  "phy_transitions": made.phy_transitions}
    h_sim, _ = histories(chosen, LAYOUT, 0.01)
    assert made.sim_transitions == len(h_sim) < len(histories(trajectories, LAYOUT, 0.01)[0])


def test_a_trajectory_id_the_bag_lacks_is_refused(trajectories):
    from kernel_manager_ros.panda import select_trajectories
    with pytest.raises(KernelError, match="trajectory id 99"):
        select_trajectories(trajectories, [int(trajectories[0].trajectory_id), 99], "b.bag")
    with pytest.raises(KernelError, match="no trajectory id"):
        select_trajectories(trajectories, [], "b.bag")
    assert len(select_trajectories(trajectories, None, "b.bag")) == len(trajectories)


def test_a_bag_without_the_stand_in_is_refused(pair_bag, tmp_path):
    only_sim = str(tmp_path / "sim_only.bag")
    with rosbag.Bag(pair_bag) as src, rosbag.Bag(only_sim, "w") as dst:
        for topic, msg, t in src.read_messages():
            if not topic.startswith("/real/"):
                dst.write(topic, msg, t)
    with pytest.raises(KernelError, match="/real/joint_states"):
        read_pair_trajectories(only_sim, SPEC, LIMITS)
    with pytest.raises(KernelError, match="bag not found"):
        read_pair_trajectories(str(tmp_path / "missing.bag"), SPEC, LIMITS)


def test_remap_and_layout_checks():
    real = remap_namespace(SPEC, "/sim", "/real")
    assert real.sensors[0].topic == "/real/joint_states"
    assert real.actions[0].topic == "/real/joint_trajectory_controller/reference"
    assert real.state_names == SPEC.state_names
    data = SPEC.to_dict()
    data["sensors"][0]["fields"][0] = "header.seq"
    with pytest.raises(KernelError, match="header.seq"):
        PandaLayout.from_spec(StateSpec.from_dict(data), 7)
    data = SPEC.to_dict()
    data["actions"][0]["fields"][0] = "velocity[0]"
    with pytest.raises(KernelError, match="commanded position"):
        PandaLayout.from_spec(StateSpec.from_dict(data), 7)
    with pytest.raises(KernelError, match="held_out"):
        PandaExperiment(held_out=1.0).check()


def test_layout_without_velocities_keeps_the_simulators(trajectories):
    data = SPEC.to_dict()
    data["sensors"][0]["fields"] = data["sensors"][0]["fields"][:7]
    data["sensors"][0]["weights"] = data["sensors"][0]["weights"][:7]
    layout = PandaLayout.from_spec(StateSpec.from_dict(data), 7)
    q, qd = layout.joints(np.arange(7.0), np.zeros(7), np.full(7, 3.0))
    np.testing.assert_array_equal(q, np.arange(7.0))
    np.testing.assert_array_equal(qd, np.full(7, 3.0))
    assert dataclasses.is_dataclass(layout)


def test_a_work_cycle_bag_reads_as_task_trajectories(tmp_path):
    """`collect --task-repeats` pairs (panda_sim2real's work cycle, kind "task") are histories too."""
    import yaml

    with open(DEFAULT_WORK_CYCLE_FILE, encoding="utf-8") as f:
        cycle = yaml.safe_load(f)
    cycle.update({"velocity_scaling": [0.9, 1.0], "rest_before": 0.1, "rest_after": 0.2,
                  "dwell": {"pick": 0.1, "place": 0.1}})   # short: full speed, short rests
    (tmp_path / "cycle.yaml").write_text(yaml.safe_dump(cycle))
    path = str(tmp_path / "tasks.bag")
    run_collection(CollectionRequest(out=path, trajectories=2, seed=1, kinds=(TASK,),
                                     work_cycle=str(tmp_path / "cycle.yaml"), show_progress=False))
    trajectories, label = read_pair_trajectories(path, SPEC, LIMITS)
    assert label == "reality stand-in"
    assert [t.kind for t in trajectories] == [TASK] * 2
    h_sim, _ = histories(trajectories, LAYOUT, 0.01)
    assert np.unique(h_sim.episodes).size == 2
