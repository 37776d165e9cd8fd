"""Force closure and the contact forces of a grasp (paper 004 §IV, [45]).

:func:`force_closure` tests force closure with linearised Coulomb friction cones by linear
programming; :func:`squeeze_directions` (internal forces of a grip) and
:func:`weight_support_forces` (carrying the weight without a moment) are the contact forces the
controllers command.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np
from scipy.optimize import linprog

from trifinger_controllers.errors import TrifingerError
from trifinger_controllers.grasp_geometry import HALF_WIDTH, Grasp
from trifinger_controllers.types import N_FINGERS

#: Friction coefficient assumed by the force-closure tests (benchmark-rrc's MU).
DEFAULT_MU = 0.5


def _tangent_basis(normal: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Two unit vectors orthogonal to ``normal`` and to each other."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(normal, helper)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(normal, t1)


def contact_wrenches(
    points: np.ndarray, normals: np.ndarray, mu: float = DEFAULT_MU, edges: int = 8
) -> np.ndarray:
    """(6, n_contacts * edges) unit-force wrenches ``[f; p x f / L]`` along the edges of the
    linearised (inscribed) Coulomb friction cones, torques about the frame's origin scaled by
    the contacts' largest distance ``L`` (force closure does not depend on either choice)."""
    points = np.asarray(points, dtype=float)
    normals = np.asarray(normals, dtype=float)
    if points.ndim != 2 or points.shape[1] != 3 or normals.shape != points.shape:
        raise TrifingerError(f"points and normals must be (k, 3) arrays, got {points.shape}, {normals.shape}")
    if mu < 0 or edges < 3:
        raise TrifingerError(f"need mu >= 0 and at least 3 cone edges, got mu={mu}, edges={edges}")
    scale = max(float(np.max(np.linalg.norm(points, axis=1))), 1e-6)
    angles = 2 * np.pi * np.arange(edges) / edges
    wrenches = []
    for p, n in zip(points, normals):
        n = n / np.linalg.norm(n)
        t1, t2 = _tangent_basis(n)
        directions = [n] if mu == 0 else [n + mu * (np.cos(a) * t1 + np.sin(a) * t2) for a in angles]
        for f in directions:
            f = f / np.linalg.norm(f)
            wrenches.append(np.concatenate([f, np.cross(p, f) / scale]))
    return np.array(wrenches).T


def force_closure(
    points: np.ndarray, normals: np.ndarray, mu: float = DEFAULT_MU, edges: int = 8,
    margin: float = 1e-6,
) -> bool:
    """True if point contacts with friction at ``points`` (k, 3) pushing along the inward
    ``normals`` (k, 3) hold the object in force closure ([45]).

    The cones are linearised with ``edges`` edges; the grasp is in force closure iff the edge
    wrenches positively span the wrench space, i.e. they have rank 6 and some combination with
    all weights >= t > ``margin`` (weights summing to 1) is zero (the origin strictly inside
    their convex hull). The LP maximises that t."""
    w = contact_wrenches(points, normals, mu, edges)
    if np.linalg.matrix_rank(w, tol=1e-8) < 6:
        return False
    m = w.shape[1]
    a_eq = np.zeros((7, m + 1))
    a_eq[:6, :m] = w
    a_eq[6, :m] = 1.0
    b_eq = np.zeros(7)
    b_eq[6] = 1.0
    a_ub = np.hstack([-np.eye(m), np.ones((m, 1))])  # t - lambda_k <= 0
    cost = np.zeros(m + 1)
    cost[-1] = -1.0
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(m), A_eq=a_eq, b_eq=b_eq,
                     bounds=[(0, None)] * m + [(None, 1.0)], method="highs")
    return bool(result.status == 0 and -result.fun > margin)


def grasp_in_force_closure(grasp: Grasp, mu: float = DEFAULT_MU) -> bool:
    """:func:`force_closure` of a grasp's contacts (cube frame)."""
    return force_closure(grasp.contact_points, grasp.normals, mu)


def squeeze_directions(grasp: Grasp, mu: float = DEFAULT_MU, safety: float = 0.5) -> np.ndarray:
    """(3, 3) internal ("squeeze") forces of the grasp in the cube frame: contact forces with
    zero resultant force and moment on the cube (the grip holds it without pushing it away,
    cf. CIC's tau_2 + tau_3 of §IV-C), each well inside its friction cone.

    Linear program: normal components N_i >= 1, tangential components within the inscribed
    pyramid ``|a| + |b| <= safety * mu * N`` (``safety`` < 1 keeps a margin to slipping; the
    rest of the cone carries the cube's weight), minimal total tangential force, then minimal
    normal force; scaled to a largest magnitude of 1. If no such forces exist (a grasp that is
    not in force closure), the inward normals."""
    mu = safety * mu
    n = grasp.normals
    m = len(n)
    tangents = [_tangent_basis(v) for v in n]
    # variables per contact: N, a+, a-, b+, b-
    k = 5
    a_eq = np.zeros((6, k * m))
    a_ub = np.zeros((m, k * m))
    for i in range(m):
        t1, t2 = tangents[i]
        for j, f in enumerate([n[i], t1, -t1, t2, -t2]):
            a_eq[:3, k * i + j] = f
            a_eq[3:, k * i + j] = np.cross(grasp.contact_points[i], f) / HALF_WIDTH
        a_ub[i, k * i] = -mu
        a_ub[i, k * i + 1:k * i + 5] = 1.0
    cost = np.tile([1e-3, 1.0, 1.0, 1.0, 1.0], m)
    bounds = [(1.0, None) if j % k == 0 else (0.0, None) for j in range(k * m)]
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(m), A_eq=a_eq, b_eq=np.zeros(6),
                     bounds=bounds, method="highs")
    if result.status != 0:
        return n.copy()
    x = result.x.reshape(m, k)
    forces = np.array([x[i, 0] * n[i] + (x[i, 1] - x[i, 2]) * tangents[i][0]
                       + (x[i, 3] - x[i, 4]) * tangents[i][1] for i in range(m)])
    return forces / np.max(np.linalg.norm(forces, axis=1))


def weight_support_forces(grasp: Grasp, weight: np.ndarray) -> np.ndarray:
    """(3, 3) contact forces in the cube frame that carry ``weight`` (3,), the force the
    fingers must exert on the cube against gravity (cube frame), with zero moment about the
    cube's centre: the minimum-norm solution of ``sum_i f_i = weight``,
    ``sum_i p_i x f_i = 0``. Added to the squeeze it keeps a held cube from turning in the
    grasp when the contacts' centroid is off its centre."""
    rows = np.zeros((6, 3 * N_FINGERS))
    for i, p in enumerate(grasp.contact_points):
        rows[:3, 3 * i:3 * i + 3] = np.eye(3)
        rows[3:, 3 * i:3 * i + 3] = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]]) / HALF_WIDTH
    target = np.concatenate([np.asarray(weight, dtype=float), np.zeros(3)])
    return np.linalg.lstsq(rows, target, rcond=None)[0].reshape(N_FINGERS, 3)
