"""Whether the fingers can take a grasp (paper 004 §IV): reachability and holding cost.

Each finger should touch a face that looks towards its own side of the arena (the side cost);
given the kinematics, the fingertip positions are checked by inverse kinematics
(:func:`grasp_cost`), and :func:`assign_fingers` picks the cheapest assignment of fingers to
contacts. :func:`lower_links_in_cube` and :func:`holding_torque` tell a grasp the IK accepts but
the fingers cannot take, or can hardly hold.
"""
from __future__ import annotations

import itertools
from typing import Optional, Sequence, Tuple

import numpy as np

from trifinger_controllers import cube
from trifinger_controllers.grasp_geometry import FINGER_DIRECTIONS, HALF_WIDTH, Grasp
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.types import CUBE_MASS, N_FINGERS, CubePose

#: A fingertip whose IK leaves it further than this [m] from its target is unreachable.
IK_TOLERANCE = 0.004
#: Squeeze [N] along each inward normal assumed by :func:`holding_torque` (CIC's default K2).
HOLDING_SQUEEZE = 1.0


def _side_cost(pose: CubePose, normals_cube: np.ndarray) -> np.ndarray:
    """(k, 3) cost of finger j touching contact i: 1 - cos of the angle between the contact's
    outward normal (horizontal part, world) and finger j's side direction (0 = facing it)."""
    outward = -cube.rotate(pose.orientation, normals_cube)
    outward[:, 2] = 0.0
    norms = np.linalg.norm(outward, axis=1, keepdims=True)
    outward = np.where(norms > 1e-9, outward / np.maximum(norms, 1e-9), 0.0)
    return 1.0 - outward @ FINGER_DIRECTIONS.T


def ik_residual(grasp: Grasp, pose: CubePose, kinematics: FingerKinematics,
                q0: Optional[np.ndarray] = None) -> np.ndarray:
    """(3,) distance [m] of each fingertip from its grasp target after inverse kinematics
    (0 = reachable)."""
    targets = grasp.tip_targets(pose)
    q = kinematics.inverse_kinematics(targets, q0)
    return np.linalg.norm(kinematics.tip_positions(q) - targets, axis=1)


def grasp_cost(grasp: Grasp, pose: CubePose, kinematics: Optional[FingerKinematics] = None,
               extra_poses: Sequence[CubePose] = ()) -> float:
    """Reachability cost of ``grasp`` at ``pose`` (and at ``extra_poses``, e.g. the goal): the
    fingers' side costs (each finger should touch a face that looks towards it), plus, given the
    kinematics, inf if any fingertip target is unreachable by IK (error > ``IK_TOLERANCE``)."""
    cost = 0.0
    for p in (pose, *extra_poses):
        side = _side_cost(p, grasp.normals)
        cost += float(np.trace(side))
        if kinematics is not None and np.max(ik_residual(grasp, p, kinematics)) > IK_TOLERANCE:
            return float("inf")
    return cost


def segment_enters_box(start: np.ndarray, end: np.ndarray, half_width: float = HALF_WIDTH) -> bool:
    """True if the segment from ``start`` to ``end`` (cube frame) meets the cube
    ``|x|, |y|, |z| <= half_width`` (slab test)."""
    low, high = 0.0, 1.0
    for a, d in zip(start, np.asarray(end, dtype=float) - start):
        if abs(d) < 1e-12:
            if abs(a) > half_width:
                return False
            continue
        t1, t2 = (-half_width - a) / d, (half_width - a) / d
        low, high = max(low, min(t1, t2)), min(high, max(t1, t2))
        if low > high:
            return False
    return True


def lower_links_in_cube(grasp: Grasp, pose: CubePose, kinematics: FingerKinematics,
                        q: Optional[np.ndarray] = None) -> np.ndarray:
    """(3,) bool: finger i's lower link (the segment from its knee to its tip) passes through
    the cube at ``pose`` in the grasp's IK configuration ``q`` (tips touching the contacts; None:
    solved here). IK knows no collisions: a finger reaching across the cube to a face that looks
    away from it gets such a configuration, which the real link cannot take (it rests on the
    cube's top edge, its tip above the contact)."""
    q = kinematics.inverse_kinematics(grasp.tip_targets(pose)) if q is None else q
    tips = cube.to_cube_frame(pose, kinematics.tip_positions(q))
    knees = cube.to_cube_frame(pose, kinematics.knee_positions(q))
    return np.array([segment_enters_box(tip, knee) for tip, knee in zip(tips, knees)])


def holding_torque(grasp: Grasp, pose: CubePose, kinematics: FingerKinematics,
                   squeeze: float = HOLDING_SQUEEZE, q: Optional[np.ndarray] = None) -> float:
    """Largest joint torque [N m] of holding the cube statically with ``grasp`` at ``pose``:
    ``max |g(q) + J^T F|`` at the IK configuration, each tip pressing ``squeeze`` along its inward
    normal and carrying a third of the cube's weight (inf if unreachable). A grasp whose holding
    torque is near the robot's 0.397 N m has nothing left to correct with: measured with CG at
    far goals (level 3), those dropped the cube while the alternatives held it. ``q``: the IK
    configuration if already solved."""
    targets = grasp.tip_targets(pose)
    q = kinematics.inverse_kinematics(targets) if q is None else q
    if np.max(np.linalg.norm(kinematics.tip_positions(q) - targets, axis=1)) > IK_TOLERANCE:
        return float("inf")
    _, normals = grasp.in_world(pose)
    forces = squeeze * normals + np.array([0.0, 0.0, CUBE_MASS * 9.81 / N_FINGERS])
    torques = kinematics.gravity(q).reshape(N_FINGERS, 3) + np.einsum(
        "fji,fj->fi", kinematics.tip_jacobians(q), forces)
    return float(np.max(np.abs(torques)))


def assign_fingers(
    points: np.ndarray, normals: np.ndarray, pose: CubePose,
    kinematics: Optional[FingerKinematics] = None, name: str = "grasp",
    extra_poses: Sequence[CubePose] = (),
) -> Tuple[Grasp, float]:
    """The permutation of the three contacts (cube frame) over the fingers with the lowest
    :func:`grasp_cost`, as (grasp, cost); the cost is inf if none is reachable."""
    best: Optional[Tuple[Grasp, float]] = None
    side = _side_cost(pose, np.asarray(normals, dtype=float))
    # cheap side costs first; IK only for the permutations in that order until one is reachable
    perms = sorted(itertools.permutations(range(N_FINGERS)),
                   key=lambda o: sum(side[o[j], j] for j in range(N_FINGERS)))
    for order in perms:
        grasp = Grasp(name, np.asarray(points)[list(order)], np.asarray(normals)[list(order)])
        cost = grasp_cost(grasp, pose, kinematics, extra_poses)
        if best is None or cost < best[1]:
            best = (grasp, cost)
        if np.isfinite(cost) and kinematics is not None:
            break
    assert best is not None
    return best
