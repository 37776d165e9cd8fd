"""The torque limit, taken so that a grasp keeps its forces' directions (paper 004 §IV-C, an
addition): :func:`fit_to_limit` scales a finger's command (or the grasp's, as a whole) into the
limit, and :func:`windup_directions` / :func:`without_windup` keep an integral from growing along
what loads a saturated finger further. Used by CIC and the alignment primitives.
"""
from __future__ import annotations

import numpy as np

from trifinger_controllers.types import TORQUE_LIMIT


def fit_to_limit(command: np.ndarray, gravity: np.ndarray, limit: float = TORQUE_LIMIT,
                 together: bool = False) -> np.ndarray:
    """(3, 3) ``gravity + s_i command_i`` with the largest ``s_i`` in [0, 1] per finger (or, with
    ``together``, one ``s`` for all) that keeps every joint within ``limit``: a finger's command
    is scaled down as a whole, so its tip force keeps its direction (clipping joints one by one
    would turn it, and a turned squeeze lets the cube slip). ``together``, for a grasp: the
    smallest factor of the fingers that have room, for all of them; scaling one finger's squeeze
    alone unbalances the others', which push the cube into it and out of the grasp (a stretched
    finger whose own weight takes most of a joint's torque, at the workspace's edge). A finger
    whose gravity torque alone leaves no room (factor 0) gets 0 alone: all the others letting go
    would drop the cube for certain."""
    total = gravity + command
    if np.max(np.abs(total)) <= limit:  # the usual case
        return total
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(command > 0, (limit - gravity) / command,
                        np.where(command < 0, (-limit - gravity) / command, np.inf))
    scale = np.clip(np.min(room, axis=1, keepdims=True), 0.0, 1.0)
    has_room = scale > 0.0
    if together and has_room.any():
        scale = np.where(has_room, scale[has_room].min(), 0.0)
    return gravity + scale * command


def windup_directions(jac: np.ndarray, torques: np.ndarray, stiffness: np.ndarray,
                      limit: float = TORQUE_LIMIT) -> np.ndarray:
    """(k, 3) unit directions of the reference shift that would load a finger already over the
    limit further, one per such finger: its joint furthest over ``limit``, ``j``, and
    ``d ~ stiffness * sign(tau_j) J[:, j]`` (a shift ``s`` of every reference changes each tip
    force by ``stiffness * s``, and ``tau_j`` by ``J[:, j] . dF``)."""
    directions = []
    for f in np.flatnonzero(np.max(np.abs(torques), axis=1) > limit):
        j = int(np.argmax(np.abs(torques[f])))
        d = stiffness * np.sign(torques[f, j]) * jac[f][:, j]
        norm = float(np.linalg.norm(d))
        if norm > 0.0:
            directions.append(d / norm)
    return np.array(directions).reshape(-1, 3)


def without_windup(step: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """``step`` without its components along ``directions`` that point the same way
    (conditional integration: the integral grows only where no saturated finger is loaded
    further)."""
    for d in directions:
        along = float(step @ d)
        if along > 0.0:
            step = step - along * d
    return step

