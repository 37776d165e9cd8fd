"""Bringing the arm from wherever it stands to a start pose (issue 39): one slow, straight move in
joint space with a minimum-jerk (quintic) time law, timed so that every joint stays below a
fraction of its velocity, acceleration and jerk limits, and refused when it would leave the
position limits' margins.

A straight line between two points inside the box of the joint limits shrunk by the margin stays
inside it, so checking both ends checks the whole path.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from panda_sim2real import JointLimits, PlannedTrajectory, TrajectoryRejected, check_motion_limits

# peaks of the quintic s(u) = 10u^3 - 15u^4 + 6u^5 over u in [0, 1]: s', s'', s'''
_PEAK_VELOCITY, _PEAK_ACCELERATION, _PEAK_JERK = 1.875, 10.0 / np.sqrt(3.0), 60.0
KNOT_SPACING = 0.02      # s between the trajectory's knots (cubic Hermite between them), at most
MIN_KNOTS = 100          # so that the interpolant's acceleration follows the quintic's closely
MAX_SPEED = 0.5          # a homing move is slow: at most half of any limit


@dataclass(frozen=True)
class HomingSettings:
    """``speed``: the fraction of each joint's velocity, acceleration and jerk limits the move may
    reach; ``margin`` [rad]: how far inside the position limits start and goal must be;
    ``min_duration`` [s]: the shortest move, however close the goal."""

    speed: float = 0.1
    margin: float = 0.05
    min_duration: float = 2.0

    @classmethod
    def from_dict(cls, raw: Any, source: str = "homing settings") -> "HomingSettings":
        """From a mapping with any of the fields; ValueError naming the field for a bad one."""
        raw = dict(raw or {})
        unknown = set(raw) - {"speed", "margin", "min_duration"}
        if unknown:
            raise ValueError(f"{source}: unknown keys {sorted(unknown)}")
        settings = cls(**{k: float(v) for k, v in raw.items()})
        if not 0.0 < settings.speed <= MAX_SPEED:
            raise ValueError(f"{source}: speed must be in (0, {MAX_SPEED:g}], got {settings.speed}")
        if not (np.isfinite(settings.margin) and settings.margin >= 0.0):
            raise ValueError(f"{source}: margin must be a finite length >= 0, got {settings.margin}")
        if not (np.isfinite(settings.min_duration) and settings.min_duration > 0.0):
            raise ValueError(f"{source}: min_duration must be positive, got {settings.min_duration}")
        return settings


def homing_duration(distance: np.ndarray, limits: JointLimits, speed: float) -> float:
    """The shortest quintic move over ``distance`` [rad per joint] that keeps every joint within
    ``speed`` x its velocity, acceleration and jerk limits."""
    d = np.abs(distance)
    return float(max(np.max(_PEAK_VELOCITY * d / (speed * limits.velocity)),
                     np.max(np.sqrt(_PEAK_ACCELERATION * d / (speed * limits.acceleration))),
                     np.max(np.cbrt(_PEAK_JERK * d / (speed * limits.jerk)))))


def homing_trajectory(start: np.ndarray, goal: np.ndarray, limits: JointLimits,
                      settings: HomingSettings = HomingSettings()) -> PlannedTrajectory:
    """The move from ``start`` to ``goal`` (start time None: now). TrajectoryRejected, naming the
    joint, for a non-finite or wrongly sized pose or one outside the limits' margins."""
    poses = {"the current position": start, "the start pose": goal}
    for what, pose in poses.items():
        pose = np.asarray(pose, dtype=float)
        if pose.shape != (limits.dof,) or not np.all(np.isfinite(pose)):
            raise TrajectoryRejected(f"{what} must be {limits.dof} finite joint positions, got "
                                     f"{np.asarray(pose).tolist()}", "malformed")
        inside = limits.within_position(pose, settings.margin)
        if not np.all(inside):
            j = int(np.argmin(inside))
            remedy = ("move the arm by hand (guiding mode) first" if what == "the current position"
                      else "choose a ~start_pose inside the limits by the margin")
            raise TrajectoryRejected(
                f"{what} puts {limits.joint_names[j]} at {pose[j]:.3f} rad, not inside its limits "
                f"[{limits.position_min[j]:.3f}, {limits.position_max[j]:.3f}] by the margin "
                f"{settings.margin:g} rad: {remedy}", "outside")
    start, goal = (np.asarray(p, dtype=float) for p in (start, goal))
    distance = goal - start
    duration = max(homing_duration(distance, limits, settings.speed), settings.min_duration)
    knots = max(int(np.ceil(duration / KNOT_SPACING)), MIN_KNOTS) + 1
    u = np.linspace(0.0, 1.0, knots)
    s = 10 * u ** 3 - 15 * u ** 4 + 6 * u ** 5
    ds = (30 * u ** 2 - 60 * u ** 3 + 30 * u ** 4) / duration
    plan = PlannedTrajectory(u * duration, start + s[:, None] * distance, ds[:, None] * distance)
    check_motion_limits(plan, limits)
    return plan
