"""Trajectory validation (bad input is rejected with the reason) and execution semantics."""
import numpy as np
import pytest

from panda_sim2real.errors import TrajectoryRejected
from panda_sim2real.limits import JointLimits
from panda_sim2real.trajectory import PlannedTrajectory, TrajectoryExecutor, validate_trajectory

LIMITS = JointLimits.from_yaml()
NAMES = list(LIMITS.joint_names)
HOME = LIMITS.home


def test_names_are_reordered():
    goal = HOME + np.arange(7) * 0.01
    order = NAMES[::-1]
    traj = validate_trajectory(order, [0.0, 1.0], [HOME[::-1], goal[::-1]], [[], []], LIMITS)
    np.testing.assert_allclose(traj.positions[-1], goal)
    np.testing.assert_allclose(traj.velocities[[0, -1]], 0.0)


@pytest.mark.parametrize("names, positions, times, velocities, phrase", [
    (NAMES[:6], [HOME[:6]], [1.0], [[]], "expected 7 joints"),
    (NAMES[:6] + ["elbow"], [HOME], [1.0], [[]], "unknown joint names"),
    (NAMES[:6] + [NAMES[0]], [HOME], [1.0], [[]], "expected 7 joints|duplicate"),
    (NAMES, [np.full(7, np.nan)], [1.0], [[]], "NaN"),
    (NAMES, [HOME], [float("inf")], [[]], "NaN"),
    (NAMES, [LIMITS.position_max + 0.1], [1.0], [[]], "outside"),
    (NAMES, [HOME, HOME], [1.0, 1.0], [[], []], "strictly increasing"),
    (NAMES, [HOME[:5]], [1.0], [[]], "7 positions"),
    (NAMES, [HOME], [1.0], [LIMITS.velocity * 2], "exceeds"),
    (NAMES, [], [], [], "no points"),
])
def test_bad_trajectories_are_rejected(names, positions, times, velocities, phrase):
    with pytest.raises(TrajectoryRejected, match=phrase):
        validate_trajectory(names, times, positions, velocities, LIMITS)


def test_hermite_sampling_hits_knots_and_is_smooth():
    t = np.linspace(0.0, 1.0, 11)
    q = np.sin(t)[:, None] * np.ones(7)
    traj = PlannedTrajectory(t, q, np.cos(t)[:, None] * np.ones(7))
    for k in range(11):
        np.testing.assert_allclose(traj.sample(t[k] + 1e-12)[0], q[k], atol=1e-9)
    pos, vel = traj.sample(0.55)
    np.testing.assert_allclose(pos, np.sin(0.55), atol=1e-5)
    np.testing.assert_allclose(vel, np.cos(0.55), atol=1e-3)


def test_executor_holds_then_switches_at_start_time():
    ex = TrajectoryExecutor(HOME)
    goal = HOME + 0.1
    traj = validate_trajectory(NAMES, [0.0, 1.0], [HOME, goal], [[], []], LIMITS, start=5.0)
    ex.command(traj, now=1.0)
    np.testing.assert_allclose(ex.reference(4.9)[0], HOME)
    np.testing.assert_allclose(ex.reference(6.5)[0], goal)
    ex.stop(6.5)
    np.testing.assert_allclose(ex.reference(100.0)[0], goal)


def test_first_point_later_than_zero_starts_from_the_reference():
    ex = TrajectoryExecutor(HOME)
    goal = HOME + 0.2
    traj = validate_trajectory(NAMES, [2.0], [goal], [[]], LIMITS)
    ex.command(traj, now=10.0)
    np.testing.assert_allclose(ex.reference(10.0)[0], HOME)
    np.testing.assert_allclose(ex.reference(11.0)[0], HOME + 0.1, atol=1e-9)
    np.testing.assert_allclose(ex.reference(12.5)[0], goal)
