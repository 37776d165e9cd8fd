"""The torque terms of CIC's law (paper 004 §IV-C) and the force maps they are built from.

``tau_1`` (:func:`impedance_torques`), ``tau_2`` (:func:`force_torques` of the grasp force),
``tau_3`` (:func:`resultant_cancelling_torques`) and ``tau_4`` (:func:`moment_torques`), with the
damped Jacobian inverses, tip forces and the grasp matrix's pseudo-inverse they use. Pure
functions of the fingers' Jacobians, contacts and forces; the controller is cic.py.
"""
from __future__ import annotations

import numpy as np

from trifinger_controllers.controllers.rotation_matrices import skew
from trifinger_controllers.types import N_FINGERS

#: Damping [m/rad] of the inverses J^-1 and J^-T near singular configurations.
JACOBIAN_DAMPING = 1e-3
#: Reference mass [kg] of the isotropic impedance (about the TriFinger tip's mean
#: operational-space inertia), so that K keeps its scale: stiffness ISOTROPIC_MASS * K [N/m].
ISOTROPIC_MASS = 0.08
#: eps of resultant_cancelling_forces: tangential contact forces cost 1/eps times more than
#: normal ones.
NORMAL_PREFERENCE = 1e-3


def damped_inverse(jac: np.ndarray, damping: float = JACOBIAN_DAMPING) -> np.ndarray:
    """(..., 3, 3) ``J^T (J J^T + damping^2 I)^-1``: J^-1 where J is regular, bounded near
    singular configurations."""
    jjt = jac @ np.swapaxes(jac, -1, -2) + damping ** 2 * np.eye(3)
    return np.swapaxes(np.linalg.solve(jjt, jac), -1, -2)


def damped_inverse_transpose(jac: np.ndarray, damping: float = JACOBIAN_DAMPING) -> np.ndarray:
    """(..., 3, 3) ``(J J^T + damping^2 I)^-1 J``: J^-T, the map from a finger's joint torques
    to the tip force they exert quasi-statically, ``F = J^-T tau``."""
    jjt = jac @ np.swapaxes(jac, -1, -2) + damping ** 2 * np.eye(3)
    return np.linalg.solve(jjt, jac)

def impedance_torques(mass_blocks: np.ndarray, jac: np.ndarray, error: np.ndarray,
                      tip_velocity: np.ndarray, stiffness: np.ndarray, damping: float,
                      isotropic: bool = False) -> np.ndarray:
    """tau_1 (3, 3) of §IV-C: ``M_i(q) J_i^-1 M_d^-1 (K x~_i - D xd_i)`` for each finger.

    ``mass_blocks`` (3, 3, 3) the fingers' blocks of M(q), ``jac`` (3, 3, 3), ``error`` x~
    (3, 3), ``tip_velocity`` (3, 3), ``stiffness`` (3,) diagonal of K, ``damping`` D.

    ``isotropic=False``: ``M_d = I`` (the law as the paper writes it). Since
    ``M J^-1 = J^T Lambda`` (Lambda the tip's operational-space inertia), the tip presses with
    ``Lambda(q) K x~`` in contact, and Lambda's eigenvalues differ ~10x on the TriFinger (0.02 to
    0.19 kg): a finger may barely press along its contact normal. ``isotropic=True``:
    ``M_d = Lambda(q) / ISOTROPIC_MASS``, the desired apparent inertia shaped like the finger's
    own, so that ``tau_1 = ISOTROPIC_MASS J^T (K x~ - D xd)``: the same stiffness in every
    direction (M and J^-1 cancel in closed form)."""
    accel = error * stiffness - damping * tip_velocity
    if isotropic:
        return force_torques(jac, ISOTROPIC_MASS * accel)
    qdd = np.einsum("fij,fj->fi", damped_inverse(jac), accel)
    return np.einsum("fij,fj->fi", mass_blocks, qdd)


def force_torques(jac: np.ndarray, forces: np.ndarray) -> np.ndarray:
    """(3, 3) ``tau_i = J_i^T F_i`` (tau_2 of §IV-C for ``F_i = F_2,i``)."""
    return np.einsum("fji,fj->fi", jac, forces)


def tip_forces(jac: np.ndarray, torques: np.ndarray) -> np.ndarray:
    """(3, 3) quasi-static tip forces ``F_i = J_i^-T tau_i`` of torques (3, 3)."""
    return np.einsum("fij,fj->fi", damped_inverse_transpose(jac), torques)


def resultant_cancelling_forces(normals: np.ndarray, resultant: np.ndarray,
                                regularisation: float = NORMAL_PREFERENCE) -> np.ndarray:
    """(3, 3) tip forces ``F_3,i`` with ``sum_i F_3,i = -F_res`` that load the contacts as little
    as possible tangentially: the minimiser of ``sum_i |P_i F_3,i|^2 + eps |F_3,i|^2``
    (``P_i = I - d_i d_i^T`` the tangential projector at contact i, ``d_i`` (3, 3) the unit
    normals), in closed form ``F_3,i = W_i lambda``, ``W_i = (P_i + eps I)^-1``,
    ``lambda = -(sum_i W_i)^-1 F_res``. With CG (§IV-C) the lone finger's own push is taken
    back along its normal and the opposite pair keeps a pure squeeze.

    Why not the minimum-torque-norm solution of §IV-C's equation (the joint-space
    pseudo-inverse): it loads the finger with the most favourable Jacobian and tilts its force
    out of the face; in simulation CG's lone finger slid off the cube with it. The equal split
    ``-F_res / 3`` (large eps) leaves a third of the lone finger's push as friction load on the
    opposite pair."""
    d = np.asarray(normals, dtype=float)
    outer = np.einsum("fi,fj->fij", d, d)
    weights = outer / regularisation + (np.eye(3) - outer) / (1.0 + regularisation)
    lam = -np.linalg.solve(weights.sum(axis=0), np.asarray(resultant, dtype=float))
    return weights @ lam


def resultant_cancelling_torques(jac: np.ndarray, normals: np.ndarray, resultant: np.ndarray,
                                 regularisation: float = NORMAL_PREFERENCE) -> np.ndarray:
    """tau_3 (3, 3) of §IV-C: a solution of the underdetermined
    ``-F_res = [J_1^-T, J_2^-T, J_3^-T] [tau_3,1; tau_3,2; tau_3,3]`` (3 equations, 9 torques),
    ``tau_3,i = J_i^T F_3,i`` with the friction-sparing forces of
    :func:`resultant_cancelling_forces` (``J_i^-T tau_3,i = F_3,i`` sums to ``-F_res``)."""
    return force_torques(jac, resultant_cancelling_forces(normals, resultant, regularisation))


def grasp_pseudo_inverse(levers: np.ndarray) -> np.ndarray:
    """(9, 6) minimum-norm inverse of the grasp matrix ``G = [I I I; S(r_1) S(r_2) S(r_3)]``
    (contact forces -> wrench on the cube about its centre, ``r_i`` (3, 3) the levers):
    ``G^T (G G^T)^-1``; the tip forces (stacked) exerting a wrench w are ``G^+ w``."""
    g = np.empty((6, 3 * N_FINGERS))
    for i in range(N_FINGERS):
        g[:3, 3 * i:3 * i + 3] = np.eye(3)
        g[3:, 3 * i:3 * i + 3] = skew(levers[i])
    return g.T @ np.linalg.inv(g @ g.T)


def wrench_forces(levers: np.ndarray, force: np.ndarray, moment: np.ndarray) -> np.ndarray:
    """(3, 3) the smallest tip forces (least squares) that exert the wrench (``force``,
    ``moment``) on the cube: ``sum_i F_i = force``, ``sum_i r_i x F_i = moment``, ``r_i`` (3, 3)
    the levers from the cube's centre to the contacts (:func:`grasp_pseudo_inverse`)."""
    wrench = np.concatenate([np.asarray(force, dtype=float), np.asarray(moment, dtype=float)])
    return (grasp_pseudo_inverse(levers) @ wrench).reshape(N_FINGERS, 3)


def moment_forces(levers: np.ndarray, moment: np.ndarray) -> np.ndarray:
    """(3, 3) the smallest tip forces that exert the pure moment ``Omega`` (zero resultant, so
    tau_4 does not push the cube away): :func:`wrench_forces` with zero force."""
    return wrench_forces(levers, np.zeros(3), moment)


def moment_torques(jac: np.ndarray, levers: np.ndarray, moment: np.ndarray) -> np.ndarray:
    """tau_4 (3, 3) of §IV-C, a solution of
    ``Omega = [S(r_1) J_1^-T, S(r_2) J_2^-T, S(r_3) J_3^-T] [tau_4,1; ...]`` (quasi-static model):
    ``tau_4,i = J_i^T F_4,i`` with the smallest forces of :func:`moment_forces` (zero resultant).
    The paper takes ``r_i`` as unit vectors; we pass the levers themselves (tip minus cube
    centre), so that Omega is a moment in N m and the moments of the other terms can be
    cancelled exactly."""
    return force_torques(jac, moment_forces(levers, moment))


def total_moment(levers: np.ndarray, forces: np.ndarray) -> np.ndarray:
    """``sum_i r_i x F_i`` of (k, 3) levers and forces (np.cross without its overhead)."""
    r, f = levers, forces
    return np.array([(r[:, 1] * f[:, 2] - r[:, 2] * f[:, 1]).sum(),
                     (r[:, 2] * f[:, 0] - r[:, 0] * f[:, 2]).sum(),
                     (r[:, 0] * f[:, 1] - r[:, 1] * f[:, 0]).sum()])

