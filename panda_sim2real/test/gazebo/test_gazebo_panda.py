"""The Panda in Gazebo 11 (make gazebo-test): panda_gazebo's plugin in gzserver, lock-stepped by
GazeboRobot and run from panda_sim.launch sim:=gazebo as a user runs it. Simulation results
(Gazebo against the PyBullet simulator and the reality stand-in), never a real robot."""
from __future__ import annotations

import re
import subprocess
import time

import numpy as np
import yaml

from panda_sim2real.gazebo_model import gazebo_model
from panda_sim2real.gazebo_robot import GazeboRobot
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot import SimulatedRobot
from panda_sim2real.robot_config import SIM_CONFIG_FILE, RobotConfig
from panda_sim2real.trajectory import validate_trajectory
from sim2real_gazebo import log_path, run_launch

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
    from sim2real_checks import listening_sockets
    from sim2real_gazebo import pids_of
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


def test_panda_sim_launch_sim_gazebo_stops_on_a_bad_urdf_with_one_line(tmp_path):
    (tmp_path / "broken.urdf").write_text("<robot name='x'><link")
    output = run_launch("panda_sim2real", "panda_sim.launch", "sim:=gazebo",
                       f"urdf:={tmp_path / 'broken.urdf'}", timeout=60)
    fatal = [line for line in output.splitlines() if "[FATAL]" in line]
    assert len(fatal) == 1 and "is not valid XML" in fatal[0], output[-3000:]
    assert "podman run" not in output
