"""Cube geometry and quaternion helpers (paper 004 §III: a 65 mm cube; §IV-C uses its faces).

Quaternions are unit (x, y, z, w), as in trifinger_simulation, PyBullet, scipy and
geometry_msgs. All functions are vectorised NumPy: quaternions ``(..., 4)``, vectors ``(..., 3)``,
rotation matrices ``(..., 3, 3)``, broadcasting over the leading dimensions.

Faces are indexed 0..5 = +x, -x, +y, -y, +z, -z of the cube frame; a face's normal points
outward.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from trifinger_controllers.types import CUBE_WIDTH, CubePose
from trifinger_controllers.errors import TrifingerError

HALF_WIDTH = CUBE_WIDTH / 2
#: Outward face normals in the cube frame (faces +x, -x, +y, -y, +z, -z).
FACE_NORMALS = np.array(
    [[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0], [0, 0, 1.0], [0, 0, -1.0]]
)
#: Face centres in the cube frame.
FACE_CENTRES = HALF_WIDTH * FACE_NORMALS
#: Corners in the cube frame, ordered as trifinger_simulation's move_cube._cube_corners.
CORNERS = HALF_WIDTH * np.array(
    [[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float
)
#: Index of the opposite face.
OPPOSITE_FACE = np.array([1, 0, 3, 2, 5, 4])

IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])


# --------------------------------------------------------------------------------- quaternions
def normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternion(s) ``q / |q|``; raises on a zero quaternion."""
    q = np.asarray(q, dtype=float)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n < 1e-12):
        raise TrifingerError("zero quaternion")
    return q / n


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` (rotation ``b`` first, then ``a``)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )


def conjugate(q: np.ndarray) -> np.ndarray:
    """Inverse of unit quaternion(s)."""
    q = np.asarray(q, dtype=float)
    return np.concatenate([-q[..., :3], q[..., 3:]], axis=-1)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Vector(s) ``v`` rotated by ``q``: ``R(q) v``."""
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    u, w = q[..., :3], q[..., 3:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix/matrices of unit quaternion(s)."""
    x, y, z, w = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternion(s) (w >= 0) of rotation matrix/matrices (Shepperd's method: the candidate
    with the largest pivot, stable for all angles)."""
    r = np.asarray(m, dtype=float)
    r00, r01, r02 = r[..., 0, 0], r[..., 0, 1], r[..., 0, 2]
    r10, r11, r12 = r[..., 1, 0], r[..., 1, 1], r[..., 1, 2]
    r20, r21, r22 = r[..., 2, 0], r[..., 2, 1], r[..., 2, 2]
    pivots = np.stack([1 + r00 - r11 - r22, 1 - r00 + r11 - r22, 1 - r00 - r11 + r22,
                       1 + r00 + r11 + r22], axis=-1)
    s = 2.0 * np.sqrt(np.maximum(pivots, 1e-12))
    s0, s1, s2, s3 = np.moveaxis(s, -1, 0)
    candidates = np.stack(
        [
            np.stack([s0 / 4, (r01 + r10) / s0, (r02 + r20) / s0, (r21 - r12) / s0], -1),
            np.stack([(r01 + r10) / s1, s1 / 4, (r12 + r21) / s1, (r02 - r20) / s1], -1),
            np.stack([(r02 + r20) / s2, (r12 + r21) / s2, s2 / 4, (r10 - r01) / s2], -1),
            np.stack([(r21 - r12) / s3, (r02 - r20) / s3, (r10 - r01) / s3, s3 / 4], -1),
        ],
        axis=-2,
    )
    best = np.argmax(pivots, axis=-1)[..., None, None]
    q = np.take_along_axis(candidates, best, axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return q * np.where(q[..., 3:] < 0, -1.0, 1.0)


def from_axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Quaternion(s) of a rotation by ``angle`` [rad] about unit ``axis``."""
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    half = 0.5 * np.asarray(angle, dtype=float)[..., None]
    return np.concatenate([axis * np.sin(half), np.cos(half)], axis=-1)


def to_axis_angle(q: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(axis (..., 3), angle (...) in [0, pi]) of unit quaternion(s); the axis of a zero
    rotation is +z."""
    q = np.asarray(q, dtype=float)
    q = q * np.where(q[..., 3:] < 0, -1.0, 1.0)
    s = np.linalg.norm(q[..., :3], axis=-1)
    angle = 2.0 * np.arctan2(s, q[..., 3])
    safe = s[..., None] > 1e-12
    axis = np.where(safe, q[..., :3] / np.where(safe, s[..., None], 1.0), np.array([0.0, 0.0, 1.0]))
    return axis, angle


def from_rotation_vector(rotvec: np.ndarray) -> np.ndarray:
    """Quaternion(s) of rotation vector(s) (axis * angle)."""
    rotvec = np.asarray(rotvec, dtype=float)
    angle = np.linalg.norm(rotvec, axis=-1)
    half = 0.5 * angle
    # sin(x/2)/x without the 0/0: Taylor series near zero
    k = np.where(angle > 1e-8, np.sin(half) / np.where(angle > 1e-8, angle, 1.0), 0.5 - angle ** 2 / 48)
    return np.concatenate([rotvec * k[..., None], np.cos(half)[..., None]], axis=-1)


def to_rotation_vector(q: np.ndarray) -> np.ndarray:
    """Rotation vector(s) (axis * angle, angle in [0, pi]) of unit quaternion(s)."""
    axis, angle = to_axis_angle(q)
    return axis * angle[..., None]


def relative(q_from: np.ndarray, q_to: np.ndarray) -> np.ndarray:
    """The world-frame rotation taking orientation ``q_from`` to ``q_to``: ``q_to * q_from^-1``."""
    return multiply(q_to, conjugate(q_from))


def relative_rotation_vector(q_from: np.ndarray, q_to: np.ndarray) -> np.ndarray:
    """World-frame rotation vector (axis * angle) from ``q_from`` to ``q_to`` (the orientation
    error a controller rotates by, e.g. CIC's tau_4 of §IV-C)."""
    return to_rotation_vector(relative(q_from, q_to))


def angle_between(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Magnitude [rad, 0..pi] of the rotation between two orientations (the RRC level-4
    orientation error, ``2 atan2(|q_xyz|, |q_w|)`` of the relative rotation; §III)."""
    r = multiply(conjugate(q1), q2)
    return 2.0 * np.arctan2(np.linalg.norm(r[..., :3], axis=-1), np.abs(r[..., 3]))


def yaw(q: np.ndarray) -> np.ndarray:
    """Yaw [rad] of the cube's x axis rotated into the world, projected on the table plane."""
    x_axis = rotate(q, np.array([1.0, 0.0, 0.0]))
    return np.arctan2(x_axis[..., 1], x_axis[..., 0])


def from_yaw(angle: np.ndarray) -> np.ndarray:
    """Quaternion(s) of a rotation by ``angle`` [rad] about the world z axis."""
    return from_axis_angle(np.array([0.0, 0.0, 1.0]), angle)


# --------------------------------------------------------------------------------- cube geometry
def to_world(pose: CubePose, points: np.ndarray) -> np.ndarray:
    """Points (..., 3) given in the cube frame, in the world frame."""
    return rotate(pose.orientation, points) + np.asarray(pose.position, dtype=float)


def to_cube_frame(pose: CubePose, points: np.ndarray) -> np.ndarray:
    """World points (..., 3), in the cube frame."""
    return rotate(conjugate(pose.orientation), np.asarray(points, dtype=float) - pose.position)


def points_near_surface(pose: CubePose, points: np.ndarray, distance: float) -> int:
    """How many of the world ``points`` (k, 3) (e.g. fingertip centres) are within ``distance``
    [m] of the cube's surface or inside the cube."""
    outside = np.maximum(np.abs(to_cube_frame(pose, points)) - HALF_WIDTH, 0.0)
    return int(np.sum(np.linalg.norm(outside, axis=1) <= distance))


def corners(pose: CubePose) -> np.ndarray:
    """(8, 3) world positions of the cube's corners."""
    return to_world(pose, CORNERS)


def faces(pose: CubePose) -> Tuple[np.ndarray, np.ndarray]:
    """(centres (6, 3), outward normals (6, 3)) of the faces in the world frame (faces ordered
    +x, -x, +y, -y, +z, -z of the cube frame)."""
    return to_world(pose, FACE_CENTRES), rotate(pose.orientation, FACE_NORMALS)


def up_face(orientation: np.ndarray) -> int:
    """Index of the face whose outward normal points most upward (world +z)."""
    return int(np.argmax(rotate(orientation, FACE_NORMALS)[:, 2]))


def down_face(orientation: np.ndarray) -> int:
    """Index of the face the cube rests on (normal most downward)."""
    return int(OPPOSITE_FACE[up_face(orientation)])


def lowest_point(pose: CubePose) -> float:
    """Height [m] of the cube's lowest corner."""
    return float(corners(pose)[:, 2].min())


def nearest_resting_orientation(orientation: np.ndarray) -> np.ndarray:
    """The orientation with a face flat on the table closest to ``orientation``: the minimal
    rotation that turns the most upward face normal to world +z (what the alignment primitives of
    §IV-D achieve at best). Its angle to ``orientation`` is the normal's tilt, at most
    arccos(1/sqrt(3)) = 54.7 deg."""
    orientation = normalize(orientation)
    n = rotate(orientation, FACE_NORMALS[up_face(orientation)])
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(n, z)
    s = np.linalg.norm(axis)
    if s < 1e-12:
        return orientation
    tilt = np.arctan2(s, float(n @ z))
    return normalize(multiply(from_axis_angle(axis / s, tilt), orientation))
