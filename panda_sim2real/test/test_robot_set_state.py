"""The robots' set-state interface (paper 001 §3.2's configuration interface, used by motor
kernels): SimulatedRobot.set_state and the nodes' ``set_joint_state`` subscriber."""
import dataclasses
import threading

import numpy as np
import pytest
from sensor_msgs.msg import JointState

from panda_sim2real.limits import JointLimits
from panda_sim2real.robot import SimulatedRobot
from panda_sim2real.robot_config import REALITY_CONFIG_FILE, SIM_CONFIG_FILE, RobotConfig
from sim2real_checks import Guard

from panda_sim2real.robot_node import RobotNode, joint_state_target, set_state_spec
from panda_sim2real.trajectory import validate_trajectory

LIMITS = JointLimits.from_yaml()
SPEC = set_state_spec(LIMITS)
SIM = RobotConfig.from_yaml(SIM_CONFIG_FILE)
REAL = RobotConfig.from_yaml(REALITY_CONFIG_FILE)
OFFSET = np.array([0.1, -0.05, 0.08, 0.1, -0.1, 0.05, 0.2])


@pytest.fixture
def sim():
    robot = SimulatedRobot(SIM, LIMITS)
    yield robot
    robot.close()


def moving(robot: SimulatedRobot) -> np.ndarray:
    """Command a 2 s move away from home and run 0.5 s into it; returns the goal."""
    goal = LIMITS.home + np.array([0.4, 0.3, -0.3, 0.3, 0.4, -0.3, 0.5])
    robot.command(validate_trajectory(LIMITS.joint_names, [0.0, 2.0], [LIMITS.home, goal],
                                      [[], []], LIMITS))
    robot.run_until(0.5)
    return goal


def test_set_state_sets_the_physics_and_keeps_time_controller_and_trajectory(sim):
    goal = moving(sim)
    t, steps = sim.t, sim._steps
    integral = sim.controller._integral.copy()
    q = sim.measure().position + OFFSET
    qd = np.linspace(-0.5, 0.5, 7)
    sim.set_state(q, qd)
    now = sim.measure()
    np.testing.assert_allclose(now.position, q, atol=1e-12)
    np.testing.assert_allclose(now.velocity, qd, atol=1e-12)
    assert sim.t == t and sim._steps == steps
    np.testing.assert_array_equal(sim.controller._integral, integral)
    sim.run_until(4.0)   # the running trajectory goes on and is tracked to its goal
    np.testing.assert_allclose(sim.measure().position, goal, atol=0.01)


def test_set_state_changes_what_follows(sim):
    other = SimulatedRobot(SIM, LIMITS)
    try:
        for robot in (sim, other):
            moving(robot)
        q, qd = sim.physics.state()
        sim.set_state(q + OFFSET, qd)
        for robot in (sim, other):
            robot.run_until(0.52)
        gap = np.abs(sim.measure().position - other.measure().position)
        assert gap.min() > 1e-3   # the offset is still visible 20 ms later
    finally:
        other.close()


def test_set_state_keeps_the_spring_deflection_of_elastic_joints():
    robot = SimulatedRobot(dataclasses.replace(REAL, encoders=None, torque_sensor=None), LIMITS)
    try:
        robot.run_until(0.2)
        q, _ = robot.physics.state()
        deflection = robot._theta - q
        robot.set_state(q + OFFSET, np.zeros(7))
        np.testing.assert_allclose(robot._theta - robot.physics.state()[0], deflection,
                                   atol=1e-12)
    finally:
        robot.close()


@pytest.mark.parametrize("q, qd, match", [
    (np.zeros(6), np.zeros(7), "7 positions"),
    (LIMITS.home, np.full(7, np.nan), "NaN"),
    (LIMITS.home + np.array([0, 0, 0, 3.0, 0, 0, 0]), np.zeros(7), "panda_joint4"),
    (LIMITS.home, np.array([0, 0, 1e6, 0, 0, 0, 0]), "panda_joint3 velocity"),
    (LIMITS.home, np.array([0, 0, 0, 0, 0, 0, -10.0]), "panda_joint7 velocity"),
])
def test_bad_set_state_is_refused_and_leaves_the_state(sim, q, qd, match):
    before = sim.physics.state()
    with pytest.raises(ValueError, match=match):
        sim.set_state(q, qd)
    for a, b in zip(before, sim.physics.state()):
        np.testing.assert_array_equal(a, b)


def request(names, position, velocity=()):
    return JointState(name=list(names), position=list(position), velocity=list(velocity))


def test_joint_state_target_reorders_by_name_and_empty_velocity_is_rest():
    names = list(reversed(LIMITS.joint_names))
    q = LIMITS.home + OFFSET
    got_q, got_qd = joint_state_target(request(names, q[::-1], 0.1 * np.arange(7.0)[::-1]), SPEC)
    np.testing.assert_allclose(got_q, q)
    np.testing.assert_allclose(got_qd, 0.1 * np.arange(7.0))
    _, at_rest = joint_state_target(request(LIMITS.joint_names, q), SPEC)
    np.testing.assert_array_equal(at_rest, np.zeros(7))


@pytest.mark.parametrize("msg, match", [
    (request(LIMITS.joint_names[:6], LIMITS.home[:6]), "missing joint.*panda_joint7"),
    (request(LIMITS.joint_names + ("finger",), list(LIMITS.home) + [0.0]), "unknown joint.*finger"),
    (request(LIMITS.joint_names[:6] + LIMITS.joint_names[:1], LIMITS.home), "duplicate"),
    (request(LIMITS.joint_names, LIMITS.home[:5]), "position has 5 values"),
    (request(LIMITS.joint_names, LIMITS.home, [0.0] * 3), "velocity has 3 values"),
    (request(LIMITS.joint_names, [np.inf] + list(LIMITS.home[1:])), "NaN/Inf"),
    (request(LIMITS.joint_names, LIMITS.home, [0, 0, 1e6, 0, 0, 0, 0]), "panda_joint3 velocity"),
    (request(LIMITS.joint_names, LIMITS.position_max + 0.1), "panda_joint1 position"),
])
def test_joint_state_target_names_the_problem(msg, match):
    with pytest.raises(ValueError, match=match):
        joint_state_target(msg, SPEC)


def test_node_drops_a_bad_request_with_a_throttled_error_and_applies_a_good_one(sim):
    errors = []
    node = RobotNode.__new__(RobotNode)    # the handler alone: no master needed
    node.limits, node.robot, node._lock, node._closed = LIMITS, sim, threading.Lock(), False
    node.guard, node.set_state_spec = Guard("/sim/panda_sim", log=errors.append), SPEC
    before = sim.physics.state()[0]
    for bad in (request(["a"] * 7, LIMITS.home),
                request(LIMITS.joint_names, [np.nan] * 7),
                request(LIMITS.joint_names, LIMITS.position_max + 0.1),
                request(LIMITS.joint_names, LIMITS.position_max + 0.2)):
        node._on_set_state(bad)
    assert len(errors) == 3 and all("set_joint_state: rejected [" in e for e in errors)
    assert node.guard.counts[("set_joint_state", "bounds")] == 2
    np.testing.assert_array_equal(sim.physics.state()[0], before)
    node._on_set_state(request(LIMITS.joint_names, LIMITS.home + OFFSET, np.ones(7)))
    np.testing.assert_allclose(sim.measure().position, LIMITS.home + OFFSET, atol=1e-12)
    np.testing.assert_allclose(sim.measure().velocity, np.ones(7), atol=1e-12)
    assert len(errors) == 3


def test_reference_is_the_commanded_trajectory_at_the_robot_time(sim):
    moving(sim)
    q_ref, qd_ref = sim.reference()
    trajectory = sim.executor._active
    expected = trajectory.sample(sim.t - trajectory.start)
    np.testing.assert_allclose(q_ref, expected[0])
    np.testing.assert_allclose(qd_ref, expected[1])
