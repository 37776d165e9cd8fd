"""The grasp type and the cube-surface geometry grasps are built from (paper 004 §IV, Fig. 2).

A :class:`Grasp` holds one contact point per finger (rows: finger 0, 120, 240) and the inward
surface normal there, both in the CUBE frame, so that a grasp moves with the cube: the
controllers transform it with the cube pose they observe or want (CPC §IV-B: fingertip targets
are the grasp points transformed by the desired cube motion). Also here: where the fingertips sit
(``TIP_RADIUS``), each finger's side of the arena, and points on the cube's faces.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from trifinger_controllers import cube
from trifinger_controllers.errors import TrifingerError
from trifinger_controllers.types import N_FINGERS, CubePose

HALF_WIDTH = cube.HALF_WIDTH
#: Distance [m] of the fingertip frame from a face it touches: robot_properties_fingers'
#: pro/tip_sim.stl is a 10 mm hemisphere around the tip frame, and PyBullet keeps the convex
#: shapes ~2 mm apart (collision margins): pressed tips sit 12 mm from the face in the simulator.
TIP_RADIUS = 0.012
#: Horizontal world directions [rad] of each finger's side of the arena (finger 0 works on +y,
#: fingers 120 and 240 at -30 and 210 deg; trifinger_simulation's TriFinger Pro layout).
FINGER_ANGLES = np.deg2rad([90.0, -30.0, 210.0])
FINGER_DIRECTIONS = np.stack([np.cos(FINGER_ANGLES), np.sin(FINGER_ANGLES), np.zeros(3)], axis=1)


@dataclass(frozen=True)
class Grasp:
    """Contact points (3, 3) on the cube surface and inward normals (3, 3) there, in the cube
    frame; row i belongs to finger i (0, 120, 240 deg)."""

    name: str
    contact_points: np.ndarray
    normals: np.ndarray

    def __post_init__(self) -> None:
        points = np.asarray(self.contact_points, dtype=float)
        normals = np.asarray(self.normals, dtype=float)
        if points.shape != (N_FINGERS, 3) or normals.shape != (N_FINGERS, 3):
            raise TrifingerError(
                f"grasp {self.name!r}: points and normals must have shape (3, 3), got"
                f" {points.shape} and {normals.shape}"
            )
        if not (np.all(np.isfinite(points)) and np.all(np.isfinite(normals))):
            raise TrifingerError(f"grasp {self.name!r}: non-finite contact points or normals")
        norms = np.linalg.norm(normals, axis=1)
        if np.any(norms < 1e-9):
            raise TrifingerError(f"grasp {self.name!r}: zero normal")
        object.__setattr__(self, "contact_points", points)
        object.__setattr__(self, "normals", normals / norms[:, None])

    def in_world(self, pose: CubePose) -> Tuple[np.ndarray, np.ndarray]:
        """(contact points (3, 3), inward normals (3, 3)) in the world for cube ``pose``."""
        return cube.to_world(pose, self.contact_points), cube.rotate(pose.orientation, self.normals)

    def tip_offsets(self, depth: float = 0.0) -> np.ndarray:
        """(3, 3) fingertip-centre positions in the cube frame: touching the surface
        (``TIP_RADIUS`` outside) and pressed ``depth`` [m] into it."""
        return self.contact_points - (TIP_RADIUS - depth) * self.normals

    def tip_targets(self, pose: CubePose, depth: float = 0.0) -> np.ndarray:
        """(3, 3) world fingertip-centre positions of the grasp at cube ``pose`` (see
        :meth:`tip_offsets`)."""
        return cube.to_world(pose, self.tip_offsets(depth))

    def permuted(self, order: Sequence[int], name: Optional[str] = None) -> "Grasp":
        """The grasp with finger i on contact ``order[i]``."""
        order = list(order)
        return Grasp(name or self.name, self.contact_points[order], self.normals[order])

def surface_point(direction: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(point, inward normal) in the cube frame where the ray from the centre along
    ``direction`` (cube frame) leaves the cube."""
    d = np.asarray(direction, dtype=float)
    axis = int(np.argmax(np.abs(d)))
    if abs(d[axis]) < 1e-12:
        raise TrifingerError("zero ray direction")
    point = d * (HALF_WIDTH / abs(d[axis]))
    normal = np.zeros(3)
    normal[axis] = -np.sign(d[axis])
    return point, normal


def vertical_faces(pose: CubePose) -> List[int]:
    """Indices (cube.FACE_NORMALS order) of the four faces whose outward normals are the most
    horizontal in the world (the side faces of a resting cube)."""
    normals = cube.rotate(pose.orientation, cube.FACE_NORMALS)
    order = np.argsort(np.abs(normals[:, 2]), kind="stable")
    return sorted(int(i) for i in order[:4])


def face_point(face: int, offset: float = 0.0, pose: Optional[CubePose] = None) -> Tuple[np.ndarray, np.ndarray]:
    """(point, inward normal) in the cube frame on ``face``: its centre moved ``offset`` [m]
    along the face's most horizontal in-face direction (the world horizontal for ``pose``)."""
    n = cube.FACE_NORMALS[face]
    point = HALF_WIDTH * n
    if offset != 0.0:
        candidates = [a for a in np.eye(3) if abs(a @ n) < 0.5]
        if pose is not None:
            heights = [abs(cube.rotate(pose.orientation, a)[2]) for a in candidates]
            tangent = candidates[int(np.argmin(heights))]
        else:
            tangent = candidates[0]
        point = point + offset * tangent
    return point, -n
