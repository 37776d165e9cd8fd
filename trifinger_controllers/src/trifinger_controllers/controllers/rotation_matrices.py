"""Rotation-matrix helpers of the controllers (cube.py has the quaternion ones): skew matrices,
rotation vectors to and from matrices, and the rotation that best maps one point set onto
another (Kabsch). CIC (paper 004 §IV-C) uses them for the orientation moment and its references.
"""
from __future__ import annotations

import numpy as np


def skew(v: np.ndarray) -> np.ndarray:
    """(..., 3, 3) skew-symmetric matrices with ``skew(v) @ w = v x w``."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def matrix_rotation_vector(rotation: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle, angle in [0, pi]) of a rotation matrix."""
    cosine = np.clip((np.trace(rotation) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cosine)
    axis = np.array([rotation[2, 1] - rotation[1, 2], rotation[0, 2] - rotation[2, 0],
                     rotation[1, 0] - rotation[0, 1]])
    norm = np.linalg.norm(axis)
    if norm < 1e-9:
        if angle < 1e-6:
            return np.zeros(3)
        # a half turn: the axis is the eigenvector of eigenvalue 1
        w, v = np.linalg.eigh((rotation + rotation.T) / 2.0)
        return np.pi * v[:, int(np.argmax(w))]
    return axis / norm * angle


def rotation_from_vector(rotvec: np.ndarray) -> np.ndarray:
    """(3, 3) rotation matrix of a rotation vector (Rodrigues)."""
    angle = float(np.linalg.norm(rotvec))
    if angle < 1e-12:
        return np.eye(3)
    k = skew(rotvec / angle)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def rotation_between(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """(3, 3) the rotation that best maps the points ``before`` (k, 3) onto ``after`` about their
    centroids (Kabsch: least squares, proper rotation)."""
    a = before - before.sum(axis=0) / len(before)
    b = after - after.sum(axis=0) / len(after)
    u, _, vt = np.linalg.svd(a.T @ b)
    d = np.sign(np.linalg.det(vt.T @ u.T))
    return vt.T @ np.diag([1.0, 1.0, d]) @ u.T

