"""Joint trajectories: a validated, time-parametrised plan, its sampling, and its execution.

The semantics follow ros_control's JointTrajectoryController: joint names may come in any order
(they are reordered), a header stamp of zero means "start now", a first point later than t = 0
is reached from the current reference, and a newer trajectory replaces the older one at its
start time. Unlike the controller, a rejected trajectory stops the robot: it holds its current
reference position (a bad command means something upstream is wrong).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from panda_sim2real.errors import TrajectoryRejected
from panda_sim2real.limits import JointLimits

LIMIT_TOLERANCE = 1.001     # relative slack on velocity (and, for the interpolant, acc/jerk) limits


@dataclass(frozen=True)
class PlannedTrajectory:
    """Knots of a joint trajectory in canonical joint order.

    ``times`` [s] are relative to ``start`` (absolute time; ``None`` = when received);
    ``positions``/``velocities`` have shape (len(times), dof).
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    start: Optional[float] = None

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def at(self, start: float) -> "PlannedTrajectory":
        return PlannedTrajectory(self.times, self.positions, self.velocities, start)

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Position and velocity at ``t`` seconds after the start: cubic Hermite between knots,
        held at the first/last knot outside [times[0], times[-1]]."""
        times = self.times
        if t <= times[0]:
            return self.positions[0].copy(), np.zeros(self.positions.shape[1])
        if t >= times[-1]:
            return self.positions[-1].copy(), np.zeros(self.positions.shape[1])
        k = int(np.searchsorted(times, t, side="right")) - 1
        h = times[k + 1] - times[k]
        s = (t - times[k]) / h
        p0, p1 = self.positions[k], self.positions[k + 1]
        m0, m1 = self.velocities[k] * h, self.velocities[k + 1] * h
        s2, s3 = s * s, s * s * s
        pos = (2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * m0 + (-2 * s3 + 3 * s2) * p1 + (s3 - s2) * m1
        vel = ((6 * s2 - 6 * s) * p0 + (3 * s2 - 4 * s + 1) * m0 + (-6 * s2 + 6 * s) * p1
               + (3 * s2 - 2 * s) * m1) / h
        return pos, vel


def validate_trajectory(joint_names: Sequence[str], times: Sequence[float],
                        positions: Sequence[Sequence[float]],
                        velocities: Sequence[Sequence[float]],
                        limits: JointLimits, start: Optional[float] = None) -> PlannedTrajectory:
    """Check a commanded trajectory and return it in canonical joint order.

    Raises TrajectoryRejected naming the problem: unknown or missing joint names, wrong sizes,
    NaN/Inf, positions outside the limits, velocities above the limits, non-increasing times.
    ``velocities`` may be empty (then they are estimated from the positions).
    """
    names = list(joint_names)
    expected = list(limits.joint_names)
    if len(names) != len(expected):
        raise TrajectoryRejected(f"expected {len(expected)} joints, got {len(names)}: {names}", "malformed")
    unknown = [n for n in names if n not in expected]
    if unknown:
        raise TrajectoryRejected(f"unknown joint names {unknown}; expected {expected}", "malformed")
    if len(set(names)) != len(names):
        raise TrajectoryRejected(f"duplicate joint names in {names}", "malformed")
    if len(times) == 0:
        raise TrajectoryRejected("trajectory has no points", "malformed")
    order = [names.index(n) for n in expected]
    t = np.asarray(times, dtype=float)
    pos = _matrix(positions, len(t), len(names), "positions")
    if pos is None:
        raise TrajectoryRejected("every point needs one position per joint", "malformed")
    vel = _matrix(velocities, len(t), len(names), "velocities")
    if not np.all(np.isfinite(t)) or not np.all(np.isfinite(pos)) or (vel is not None and not np.all(np.isfinite(vel))):
        raise TrajectoryRejected("trajectory contains NaN or Inf", "non_finite")
    if t[0] < 0 or np.any(np.diff(t) <= 0):
        raise TrajectoryRejected("time_from_start must be non-negative and strictly increasing",
                                 "timing")
    pos = pos[:, order]
    if vel is None:
        vel = np.gradient(pos, t, axis=0) if len(t) > 1 else np.zeros_like(pos)
        vel[0] = vel[-1] = 0.0
    else:
        vel = vel[:, order]
    outside = ~(limits.within_position(pos))
    if np.any(outside):
        k, j = np.argwhere(outside)[0]
        raise TrajectoryRejected(
            f"point {k}: {expected[j]} = {pos[k, j]:.4g} rad is outside "
            f"[{limits.position_min[j]:.4f}, {limits.position_max[j]:.4f}]", "bounds")
    too_fast = np.abs(vel) > limits.velocity * LIMIT_TOLERANCE
    if np.any(too_fast):
        k, j = np.argwhere(too_fast)[0]
        raise TrajectoryRejected(
            f"point {k}: {expected[j]} velocity {vel[k, j]:.4g} rad/s exceeds {limits.velocity[j]:.3f}",
            "bounds")
    return PlannedTrajectory(t, pos, vel, start)


def _matrix(rows: Sequence[Sequence[float]], n_points: int, dof: int, what: str) -> Optional[np.ndarray]:
    if all(len(r) == 0 for r in rows):
        return None
    if len(rows) != n_points or any(len(r) != dof for r in rows):
        raise TrajectoryRejected(f"every point needs {dof} {what} (or none)", "malformed")
    return np.asarray(rows, dtype=float)


class TrajectoryExecutor:
    """Turns commanded trajectories into a reference (position, velocity) at any time."""

    def __init__(self, hold: np.ndarray) -> None:
        self._hold = np.asarray(hold, dtype=float).copy()
        self._active: Optional[PlannedTrajectory] = None
        self._pending: Optional[PlannedTrajectory] = None

    def hold(self, position: np.ndarray) -> None:
        """Drop every trajectory and hold ``position``."""
        self._hold = np.asarray(position, dtype=float).copy()
        self._active = self._pending = None

    def stop(self, now: float) -> None:
        """Hold the current reference position (used when a command is rejected)."""
        self.hold(self.reference(now)[0])

    def prepare(self, trajectory: PlannedTrajectory, now: float) -> PlannedTrajectory:
        """``trajectory`` as :meth:`command` would schedule it, without scheduling it: with its
        absolute start, and a first knot after t = 0 reached from the reference (position and
        velocity) at the start."""
        start = now if trajectory.start is None or trajectory.start <= 0.0 else trajectory.start
        if trajectory.times[0] > 0.0:
            q0, qd0 = self.peek(start)
            return PlannedTrajectory(
                np.concatenate([[0.0], trajectory.times]),
                np.vstack([q0, trajectory.positions]),
                np.vstack([qd0, trajectory.velocities]), start)
        return trajectory.at(start)

    def command(self, trajectory: PlannedTrajectory, now: float) -> PlannedTrajectory:
        """Schedule ``trajectory`` (see :meth:`prepare`); it replaces the current one at its
        start time. Returns the scheduled trajectory."""
        return self.schedule(self.prepare(trajectory, now), now)

    def schedule(self, prepared: PlannedTrajectory, now: float) -> PlannedTrajectory:
        """Schedule a trajectory :meth:`prepare` returned, as it is (the same object)."""
        if prepared.start <= now:
            self._active, self._pending = prepared, None
        else:
            self._pending = prepared
        return prepared

    def reference(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The reference at time ``t``; a pending trajectory whose start has come becomes active."""
        if self._pending is not None and t >= self._pending.start:
            self._active, self._pending = self._pending, None
        return self.peek(t)

    def plan_at(self, t: float) -> Optional[PlannedTrajectory]:
        """The trajectory the reference at ``t`` comes from (None: holding a position)."""
        return self._pending if self._pending is not None and t >= self._pending.start else self._active

    def peek(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The reference at time ``t`` without activating a pending trajectory."""
        active = self.plan_at(t)
        if active is None:
            return self._hold.copy(), np.zeros_like(self._hold)
        return active.sample(t - active.start)
