"""The Panda's kinematic limits on a trajectory as the robot will execute it.

:func:`panda_sim2real.trajectory.validate_trajectory` checks the knots; a robot follows the
cubic Hermite interpolant between them (:meth:`PlannedTrajectory.sample`), which can overshoot
a position or velocity limit between knots and has an acceleration and a jerk of its own. This
module checks that interpolant exactly, per segment, against the position, velocity,
acceleration and jerk limits (libfranka aborts a motion that exceeds them on the robot).

Per segment of length h with end points p0, p1 and scaled tangents m0 = v0 h, m1 = v1 h, the
position is c0 + c1 s + c2 s^2 + c3 s^3 over s in [0, 1]; velocity, acceleration and jerk are its
derivatives divided by h, h^2 and h^3. Extremes lie at the segment ends or where the next
derivative vanishes, so the check is exact, not sampled. An acceleration that jumps at a knot
(the interpolant is C1) is not a jerk limit violation here: the robot's impedance controller
smooths it, as a JointTrajectoryController does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panda_sim2real.errors import TrajectoryRejected
from panda_sim2real.limits import JointLimits
from panda_sim2real.trajectory import LIMIT_TOLERANCE, PlannedTrajectory


@dataclass(frozen=True)
class HermiteSegments:
    """Polynomial coefficients c0..c3 (each (segments, dof)) and lengths h (segments,) [s]."""

    c: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    h: np.ndarray

    @classmethod
    def of(cls, plan: PlannedTrajectory) -> "HermiteSegments":
        h = np.diff(plan.times)
        p0, p1 = plan.positions[:-1], plan.positions[1:]
        m0 = plan.velocities[:-1] * h[:, None]
        m1 = plan.velocities[1:] * h[:, None]
        c2 = -3 * p0 - 2 * m0 + 3 * p1 - m1
        c3 = 2 * p0 + m0 - 2 * p1 + m1
        return cls((p0, m0, c2, c3), h)

    def position(self, s: np.ndarray) -> np.ndarray:
        c0, c1, c2, c3 = self.c
        return c0 + s * (c1 + s * (c2 + s * c3))

    def velocity(self, s: np.ndarray) -> np.ndarray:
        _, c1, c2, c3 = self.c
        return (c1 + s * (2 * c2 + 3 * s * c3)) / self.h[:, None]

    def acceleration(self, s: np.ndarray) -> np.ndarray:
        _, _, c2, c3 = self.c
        return (2 * c2 + 6 * s * c3) / self.h[:, None] ** 2

    def jerk(self) -> np.ndarray:
        return 6 * self.c[3] / self.h[:, None] ** 3


def _inside(s: np.ndarray) -> np.ndarray:
    """Candidate parameters clipped into [0, 1] (NaN -> 0: no interior extreme there)."""
    return np.clip(np.nan_to_num(s, nan=0.0, posinf=0.0, neginf=0.0), 0.0, 1.0)


def motion_extremes(plan: PlannedTrajectory) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each of position_min, position_max, velocity, acceleration, jerk: (value per joint,
    time [s] relative to the start at which it occurs) over the whole interpolant."""
    dof = plan.positions.shape[1]
    if len(plan.times) < 2:
        zero = np.zeros(dof)
        return {"position_min": (plan.positions[0].copy(), zero),
                "position_max": (plan.positions[0].copy(), zero),
                "velocity": (np.abs(plan.velocities[0]), zero),
                "acceleration": (zero.copy(), zero), "jerk": (zero.copy(), zero)}
    seg = HermiteSegments.of(plan)
    _, c1, c2, c3 = seg.c
    with np.errstate(divide="ignore", invalid="ignore"):
        disc = np.sqrt(np.maximum(c2 ** 2 - 3 * c1 * c3, 0.0))
        roots = [(-c2 + disc) / (3 * c3), (-c2 - disc) / (3 * c3), -c1 / (2 * c2)]
        s_vel = -c2 / (3 * c3)
    s_pos = [np.zeros_like(c1), np.ones_like(c1)] + [_inside(r) for r in roots]
    s_vel = [np.zeros_like(c1), np.ones_like(c1), _inside(s_vel)]
    s_acc = [np.zeros_like(c1), np.ones_like(c1)]
    start = plan.times[:-1][:, None]

    def extreme(samples: list[np.ndarray], values: list[np.ndarray], pick) -> tuple:
        stack_v = np.stack(values)                                 # (candidates, segments, dof)
        stack_t = np.stack([start + s * seg.h[:, None] for s in samples])
        flat_v = stack_v.reshape(-1, dof)
        k = pick(flat_v, axis=0)
        cols = np.arange(dof)
        return flat_v[k, cols], stack_t.reshape(-1, dof)[k, cols]

    positions = [seg.position(s) for s in s_pos]
    return {
        "position_min": extreme(s_pos, positions, np.argmin),
        "position_max": extreme(s_pos, positions, np.argmax),
        "velocity": extreme(s_vel, [np.abs(seg.velocity(s)) for s in s_vel], np.argmax),
        "acceleration": extreme(s_acc, [np.abs(seg.acceleration(s)) for s in s_acc], np.argmax),
        "jerk": extreme([np.zeros_like(c1)], [np.abs(seg.jerk())], np.argmax),
    }


def check_motion_limits(plan: PlannedTrajectory, limits: JointLimits) -> None:
    """Raise TrajectoryRejected (one line: joint, value, limit, time) if the interpolant leaves
    the position limits or exceeds the velocity, acceleration or jerk limits anywhere."""
    ext = motion_extremes(plan)
    names = limits.joint_names
    low, t_low = ext["position_min"]
    high, t_high = ext["position_max"]
    for j in range(limits.dof):
        if low[j] < limits.position_min[j] or high[j] > limits.position_max[j]:
            value, t = (low[j], t_low[j]) if low[j] < limits.position_min[j] else (high[j], t_high[j])
            raise TrajectoryRejected(
                f"t = {t:.3f} s: {names[j]} = {value:.4f} rad between knots is outside "
                f"[{limits.position_min[j]:.4f}, {limits.position_max[j]:.4f}]", "bounds")
    for key, unit, bound in (("velocity", "rad/s", limits.velocity),
                             ("acceleration", "rad/s^2", limits.acceleration),
                             ("jerk", "rad/s^3", limits.jerk)):
        value, t = ext[key]
        over = value > bound * LIMIT_TOLERANCE
        if np.any(over):
            j = int(np.flatnonzero(over)[0])
            raise TrajectoryRejected(f"t = {t[j]:.3f} s: {names[j]} {key} {value[j]:.3f} {unit} "
                                     f"exceeds the limit {bound[j]:.3f}", "bounds")
