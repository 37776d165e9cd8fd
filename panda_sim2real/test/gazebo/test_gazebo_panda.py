"""The Panda in Gazebo 11 (make gazebo-test): panda_gazebo's plugin in gzserver, lock-stepped by
GazeboRobot and run from panda_sim.launch sim:=gazebo as a user runs it. Simulation results
(Gazebo against the PyBullet simulator and the reality stand-in), never a real robot."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import numpy as np
import pytest
import rosbag
import yaml

from conftest import log_path
from panda_sim2real.collection import CollectionRequest, run_collection
from panda_sim2real.gazebo_model import gazebo_model
from panda_sim2real.gazebo_robot import GazeboRobot
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot import SimulatedRobot
from panda_sim2real.robot_config import SIM_CONFIG_FILE, RobotConfig
from panda_sim2real.trajectory import validate_trajectory

LIMITS = JointLimits.from_yaml()
NAMES = list(LIMITS.joint_names)
TARGET = np.array([0.2, -0.6, 0.1, -2.1, 0.1, 1.7, 0.6])


def sim_config(**changes) -> RobotConfig:
    with open(SIM_CONFIG_FILE) as f:
        raw = yaml.safe_load(f)
    raw.update(changes)
    return RobotConfig.from_dict(raw, "test config")


def move_to(target: np.ndarray, start: float, duration: float = 2.0):
    zero = np.zeros(len(NAMES))
    return validate_trajectory(NAMES, [0.0, duration], [LIMITS.home, target], [zero, zero],
                               LIMITS).at(start)


def run_move(robot, until: float = 6.0):
    """Settle 2 s, command the move to TARGET, run to ``until``: every published state."""
    states = robot.advance(2.0)
    robot.command(move_to(TARGET, robot.t + 0.05))
    return states + robot.advance(until)


def test_a_trajectory_runs_at_1_khz_of_sim_time_and_reaches_its_goal():
    """publish_rate 1000: a state every millisecond of sim time; the goal reached as in PyBullet."""
    config = sim_config(publish_rate=1000)
    robot = GazeboRobot(config, LIMITS, log=log_path("trajectory"))
    try:
        states = run_move(robot)
    finally:
        robot.close()
    stamps = np.array([m.stamp for m in states])
    assert len(states) == 6000
    np.testing.assert_allclose(np.diff(stamps), 1e-3, atol=1e-9)
    q = np.array([m.position for m in states])
    assert np.all(np.isfinite(q)) and all(m.is_finite() for m in states)
    assert np.max(np.abs(q[-1] - TARGET)) < 0.01, q[-1] - TARGET
    pybullet = SimulatedRobot(config, LIMITS)
    try:
        reference = run_move(pybullet)
    finally:
        pybullet.close()
    q_pb = np.array([m.position for m in reference])
    assert np.max(np.abs(q - q_pb)) < 0.01       # the same controller on another engine
    tau = np.array([m.effort for m in states])
    assert np.all(np.abs(tau) <= LIMITS.effort + 1e-9)


def read_with_the_tools(bag: str, tmp_path) -> dict:
    """``dataset`` and ``compare`` on ``bag`` as a user runs them (each must succeed); compare's
    figures."""
    import json
    for tool, args in (("dataset", ["--out", str(tmp_path / "d.npz")]),
                       ("compare", ["--plot", str(tmp_path / "c.png")])):
        done = subprocess.run(["rosrun", "panda_sim2real", tool, "--bag", bag, "--quiet",
                               "--json", str(tmp_path / f"{tool}.json"), *args],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    with open(tmp_path / "compare.json") as f:
        return json.load(f)


def collect(path: str, seed: int) -> dict:
    return run_collection(CollectionRequest(out=path, trajectories=3, seed=seed, sim="gazebo",
                                            show_progress=False)).figures


def sim_stream(path: str) -> list[tuple]:
    with rosbag.Bag(path) as bag:
        return [(t.to_nsec(), tuple(m.position), tuple(m.velocity), tuple(m.effort))
                for _, m, t in bag.read_messages(["/sim/joint_states"])]


def test_one_seed_gives_the_same_sim_stream_twice_and_the_tools_read_the_bag(tmp_path):
    first, second = str(tmp_path / "a.bag"), str(tmp_path / "b.bag")
    figures = collect(first, seed=4)
    assert figures["sim_label"] == "Gazebo 11 simulation" and figures["sim"] == "gazebo"
    collect(second, seed=4)
    a, b = sim_stream(first), sim_stream(second)
    assert len(a) > 500 and a == b
    with rosbag.Bag(first) as bag:
        topics = set(bag.get_type_and_topic_info().topics)
    assert {"/sim/joint_states", "/real/joint_states", "/pairs/event", "/real/label",
            "/sim/joint_trajectory_controller/command"} <= topics
    gap = read_with_the_tools(first, tmp_path)
    assert len(gap["torque_mse"]) == 7 and all(np.isfinite(gap["torque_mse"]))


def resimulate(bag: str, out: str, sim: str, config: str) -> dict:
    import json
    done = subprocess.run(["rosrun", "panda_sim2real", "resimulate", "--bag", bag, "--out", out,
                           "--sim", sim, "--sim-config", config, "--quiet", "--json", out + ".json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.load(open(out + ".json"))


def test_resimulate_in_gazebo_with_an_identified_urdf(tmp_path):
    """A heavier hand, friction and torque offsets in the sim config (an identified one's
    entries): re-simulated in Gazebo as in PyBullet (the offsets in the efforts, the friction and
    the URDF applied alike), and the tools read the bag."""
    from panda_sim2real.urdf_model import nominal_urdf_path
    pairs = str(tmp_path / "pairs.bag")
    run_collection(CollectionRequest(out=pairs, trajectories=2, seed=1, show_progress=False))
    urdf = open(nominal_urdf_path()).read()
    urdf, n = re.subn(r'(<link name="panda_hand">\s*<inertial>.*?<mass value=")([0-9.]+)',
                      lambda m: m.group(1) + str(float(m.group(2)) * 1.5), urdf, count=1, flags=re.S)
    assert n == 1
    (tmp_path / "identified.urdf").write_text(urdf)
    offset = np.array([2.0, -2.0, 1.0, 0.5, 0.3, -0.3, 0.2])
    config = yaml.safe_load(open(SIM_CONFIG_FILE))
    config.update(urdf=str(tmp_path / "identified.urdf"), label="simulation (identified)",
                  friction={"phi1": [0.3] * 7, "phi2": [50.0] * 7, "phi3": [0.01] * 7},
                  torque_sensor={"offset": offset.tolist(), "noise_std": [0.0] * 7})
    (tmp_path / "identified.yaml").write_text(yaml.safe_dump(config))
    gazebo = resimulate(pairs, str(tmp_path / "gazebo.bag"), "gazebo", str(tmp_path / "identified.yaml"))
    pybullet = resimulate(pairs, str(tmp_path / "pybullet.bag"), "pybullet",
                          str(tmp_path / "identified.yaml"))
    assert gazebo["label"] == "Gazebo 11 simulation (identified)" and gazebo["commands"] == 2
    assert gazebo["sim_states"] == pybullet["sim_states"]
    gz, pb = (sim_stream(str(tmp_path / f"{n}.bag")) for n in ("gazebo", "pybullet"))
    nominal = sim_stream(pairs)
    np.testing.assert_allclose([s[0] for s in gz], [s[0] for s in pb], atol=1e3)   # stamps [ns]
    q_gz, q_pb = (np.array([s[1] for s in x]) for x in (gz, pb))
    tau_gz, tau_pb, tau_nominal = (np.array([s[3] for s in x]) for x in (gz, pb, nominal))
    assert np.max(np.abs(q_gz - q_pb)) < 2e-3
    assert np.sqrt(np.mean((tau_gz - tau_pb) ** 2)) < 0.05
    # at rest before the first move: the reported torques carry the offsets (joints whose
    # gravity load the heavier hand leaves nearly unchanged)
    rest = slice(100, 150)
    shift = np.mean(tau_gz[rest] - tau_nominal[rest], axis=0)
    assert np.all(np.abs(shift - offset)[[0, 2, 4, 6]] < 0.1), shift
    read_with_the_tools(str(tmp_path / "gazebo.bag"), tmp_path)


def test_bad_plugin_parameters_remove_the_model_with_one_line():
    """Joint names the model lacks: one gzerr line naming model and plugin, the model removed,
    gzserver steps on."""
    from sim2real_gazebo import GazeboSession, WorldConfig
    model = gazebo_model(sim_config(), LIMITS)
    params = dict(model.params)
    params["/sim/gazebo/joint_names"] = NAMES[:6] + ["elbow"]
    log = log_path("bad_params")
    with GazeboSession(model.urdf, WorldConfig(real_time_factor=0.0), params=params, log=log,
                       private=True) as session:
        deadline = time.monotonic() + 30
        while "[panda_effort_plugin]" not in open(log).read() and time.monotonic() < deadline:
            session.step(10)
            time.sleep(0.1)
        session.step(100)
        import rosgraph
        state = rosgraph.Master("/test").getSystemState()
        assert "/sim/joint_states" not in {t for t, _ in state[0]}      # the model is gone
        assert "/gazebo/step_world" in {name for name, _ in state[2]}    # gzserver is not
    lines = [line for line in re.sub(r"\x1b\[[0-9;]*m", "", open(log).read()).splitlines()
             if "[panda_effort_plugin]" in line]
    assert len(lines) == 1, lines
    assert "model 'panda', plugin 'panda_effort': the model has no joint 'elbow'; model removed" in lines[0]


def test_every_listening_socket_is_on_loopback_and_the_stop_is_clean():
    from sim2real_checks.listening import listening_sockets
    from sim2real_gazebo.container import pids_of
    robot = GazeboRobot(sim_config(), LIMITS, log=log_path("sockets"))
    try:
        robot.advance(0.5)
        container = robot.session.container
        pids = pids_of(container.name, container.engine)
        sockets = listening_sockets(pids)
        assert "gzserver" in {s.program for s in sockets}, sockets
        assert all(s.loopback for s in sockets), [s for s in sockets if not s.loopback]
    finally:
        robot.close()
    listed = subprocess.run([container.engine, "ps", "-a", "--format", "{{.Names}}"],
                            capture_output=True, text=True).stdout.split()
    assert container.name not in listed


def roslaunch(*args: str, timeout: float) -> str:
    """Run a launch file on a master of its own (a free 127.0.0.1 port); its output."""
    from sim2real_gazebo import free_port
    port = free_port()
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_IP="127.0.0.1")
    launch = subprocess.Popen(["roslaunch", "-p", str(port), *args], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        return launch.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        os.killpg(launch.pid, signal.SIGINT)
        output, _ = launch.communicate(timeout=30)
        pytest.fail(f"the launch did not end: {output[-2000:]}")


def test_record_pairs_launch_sim_gazebo_records_a_bag_the_tools_read(tmp_path):
    """The pair runner against Gazebo and the ROS-native stand-in on Gazebo's /clock."""
    bag = str(tmp_path / "pairs.bag")
    output = roslaunch("panda_sim2real", "record_pairs.launch", "sim:=gazebo", "trajectories:=2",
                       f"bag:={bag}", timeout=240)
    assert "REQUIRED process" not in output, output[-3000:]
    assert read_with_the_tools(bag, tmp_path)["trajectories"] == 2


def test_panda_sim_launch_sim_gazebo_stops_on_a_bad_urdf_with_one_line(tmp_path):
    (tmp_path / "broken.urdf").write_text("<robot name='x'><link")
    output = roslaunch("panda_sim2real", "panda_sim.launch", "sim:=gazebo",
                       f"urdf:={tmp_path / 'broken.urdf'}", timeout=60)
    fatal = [line for line in output.splitlines() if "[FATAL]" in line]
    assert len(fatal) == 1 and "is not valid XML" in fatal[0], output[-3000:]
    assert "podman run" not in output
