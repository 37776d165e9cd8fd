"""The two robots: engines agree on the same model, the stand-in's effects are what its config says."""
import dataclasses

import numpy as np
import pytest

from panda_sim2real.friction import sigmoid_friction
from panda_sim2real.limits import JointLimits
from panda_sim2real.physics import make_physics
from panda_sim2real.robot import SimulatedRobot
from panda_sim2real.robot_config import REALITY_CONFIG_FILE, SIM_CONFIG_FILE, RobotConfig
from panda_sim2real.trajectory import validate_trajectory
from panda_sim2real.urdf_model import load_urdf, prepare_dynamics_urdf

LIMITS = JointLimits.from_yaml()
# the stand-in's effects of the identifier's model family; its unmodelled ones are
# test_unmodelled_effects.py's
REAL = dataclasses.replace(RobotConfig.from_yaml(REALITY_CONFIG_FILE), unmodelled=None)
SIM = RobotConfig.from_yaml(SIM_CONFIG_FILE)


def stand_in(**changes):
    return SimulatedRobot(dataclasses.replace(REAL, **changes), LIMITS)


@pytest.mark.parametrize("inertials", [{}, REAL.inertials])
def test_pybullet_and_mujoco_agree_on_inverse_dynamics(inertials):
    text = prepare_dynamics_urdf(load_urdf(None), inertials)
    engines = [make_physics(e, text, LIMITS.joint_names, 1e-3) for e in ("pybullet", "mujoco")]
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.uniform(LIMITS.position_min, LIMITS.position_max)
        qd, qdd = rng.normal(0, 1, 7), rng.normal(0, 3, 7)
        a, b = (e.inverse_dynamics(q, qd, qdd) for e in engines)
        np.testing.assert_allclose(a, b, atol=1e-8, rtol=1e-8)
    for e in engines:
        e.close()


def test_stand_in_model_differs_from_the_nominal_one():
    nominal = SimulatedRobot(SIM, LIMITS)
    real = stand_in()
    q = LIMITS.home
    gap = np.abs(nominal.gravity_torque(q) - real.gravity_torque(q))
    assert gap[1] > 1.0 and gap[3] > 1.0  # N m: guessed masses vs identified inertials
    nominal.close()


def test_pid_simulator_tracks_a_move():
    robot = SimulatedRobot(SIM, LIMITS)
    goal = LIMITS.home + np.array([0.4, 0.3, -0.3, 0.3, 0.4, -0.3, 0.5])
    robot.command(validate_trajectory(LIMITS.joint_names, [0.0, 2.0], [LIMITS.home, goal],
                                      [[], []], LIMITS))
    robot.run_until(4.0)
    np.testing.assert_allclose(robot.measure().position, goal, atol=0.01)
    assert robot.t == pytest.approx(4.0)
    robot.close()


def test_elastic_joints_deflect_by_gravity_over_stiffness_and_sensor_reads_gravity():
    robot = stand_in(torque_sensor=None, encoders=None)
    robot.run_until(1.0)
    q, _ = robot.physics.state()
    gravity = robot.gravity_torque(q)
    np.testing.assert_allclose(robot._theta - q, gravity / REAL.elasticity.stiffness, atol=2e-5)
    np.testing.assert_allclose(robot.measure().effort, gravity, atol=0.02)
    np.testing.assert_allclose(q, LIMITS.home, atol=2e-3)
    robot.close()


def test_torque_sensor_offset_and_noise():
    robot = stand_in()
    samples = []
    for _ in range(400):
        robot.step()
        samples.append(robot.measure().effort - robot._tau_j)
    samples = np.array(samples)
    np.testing.assert_allclose(samples.mean(0), REAL.torque_sensor.offset, atol=0.03)
    np.testing.assert_allclose(samples.std(0), REAL.torque_sensor.noise_std, rtol=0.2)
    robot.close()


def test_friction_enters_the_measured_torque():
    """At constant velocity tau_J = ID(q, qd, 0) + tau_f(qd) (Gaz et al.'s model)."""
    robot = stand_in(elasticity=None, torque_sensor=None, encoders=None, latency=0.0)
    start = LIMITS.home.copy()
    goal = start.copy()
    goal[0] += 1.0
    times = np.linspace(0.0, 2.0, 201)
    positions = start + (goal - start) * (times / 2.0)[:, None]
    velocities = np.tile((goal - start) / 2.0, (201, 1))
    robot.command(validate_trajectory(LIMITS.joint_names, times, positions, velocities, LIMITS))
    robot.run_until(1.0)
    q, qd = robot.physics.state()
    expected = robot.physics.inverse_dynamics(q, qd, np.zeros(7)) + sigmoid_friction(REAL.friction, qd)
    assert qd[0] == pytest.approx(0.5, abs=0.01)
    np.testing.assert_allclose(robot._tau_j[0], expected[0], atol=0.05)
    robot.close()


def test_command_latency_delays_the_motion():
    def motion_start(latency):
        robot = stand_in(latency=latency, encoders=None)
        goal = LIMITS.home.copy()
        goal[3] += 0.3
        robot.command(validate_trajectory(LIMITS.joint_names, [0.0, 0.1, 1.1],
                                          [LIMITS.home, LIMITS.home, goal], [[], [], []], LIMITS))
        while True:
            robot.step()
            if abs(robot.physics.state()[0][3] - LIMITS.home[3]) > 1e-4:
                robot.close()
                return robot.t

    assert motion_start(0.02) - motion_start(0.0) == pytest.approx(0.02, abs=2e-3)
