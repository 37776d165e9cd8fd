"""The check of a geometry_msgs/Pose (or the pose of a PoseStamped): finite, inside a workspace
radius, and a unit quaternion (normalised when only slightly off)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim2real_checks.errors import Rejected
from sim2real_checks.finite import require_finite

QUATERNION_TOLERANCE = 0.1
"""A quaternion whose norm is within 1 ± this is normalised; further off, the pose is refused."""
DISTANCE_TOLERANCE = 1e-9
"""Positions up to this [m] beyond ``max_distance`` pass: a point on the boundary (a corner of a
box whose circumscribed sphere is the workspace) gives a norm one rounding step either side of
the radius, depending on NumPy's build."""


@dataclass(frozen=True)
class CheckedPose:
    position: np.ndarray
    quaternion_xyzw: np.ndarray


def check_pose(pose, max_distance: float) -> CheckedPose:
    """Position within ``max_distance`` (m, plus :data:`DISTANCE_TOLERANCE`) of the origin and a
    unit quaternion, or :class:`Rejected` (``non_finite``, ``bounds``, ``quaternion``)."""
    pose = getattr(pose, "pose", pose)
    require_finite(pose)
    p = np.array([pose.position.x, pose.position.y, pose.position.z])
    if np.linalg.norm(p) > max_distance + DISTANCE_TOLERANCE:
        raise Rejected("bounds", f"position {np.round(p, 3).tolist()} farther than "
                                 f"{max_distance:g} m from the origin")
    o = pose.orientation
    q = np.array([o.x, o.y, o.z, o.w])
    norm = float(np.linalg.norm(q))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise Rejected("quaternion", f"orientation norm {norm:.3g}, not a unit quaternion")
    return CheckedPose(p, q / norm)
