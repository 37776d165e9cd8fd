"""Batch-first rigid-body algorithms in PyTorch, differentiable in q, qd, qdd and the inertials.

Featherstone's spatial algebra (Rigid Body Dynamics Algorithms, 2008) in body coordinates, with
spatial vectors split into angular and linear 3-vectors (cheaper than 6x6 products):

- :func:`rnea`: inverse dynamics tau = H(q) qdd + C(q, qd) qd + g(q) + D qd (paper 002 eq. 1,
  the f_NE of eq. 2, with the joint viscous damping D of §4.2);
- :func:`forward_kinematics`: world poses of the link frames;
- :func:`mass_matrix`: H(q) by the composite rigid-body algorithm (CRBA);
- :func:`forward_dynamics`: qdd = H⁻¹ (tau − C qd − g − D qd).

Every function is vectorised over the batch; the only Python loops run over the bodies of the
tree (the recursion itself). Joint placements are computed for all bodies at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from diffnea_ros.model import Inertials, RigidBodyModel, as_batch


def _cross(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a, b = torch.broadcast_tensors(a, b)
    return torch.linalg.cross(a, b, dim=-1)


def _matvec(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return (m @ v.unsqueeze(-1)).squeeze(-1)


def _skew(v: torch.Tensor) -> torch.Tensor:
    zero = torch.zeros_like(v[..., 0])
    return torch.stack([torch.stack([zero, -v[..., 2], v[..., 1]], -1),
                        torch.stack([v[..., 2], zero, -v[..., 0]], -1),
                        torch.stack([-v[..., 1], v[..., 0], zero], -1)], -2)


def _motion_subspaces(model: RigidBodyModel) -> tuple[torch.Tensor, torch.Tensor]:
    """Angular and linear parts of each body's joint motion subspace S (nb, 3): a revolute
    joint moves about its axis, a prismatic one along it, a fixed one not at all."""
    revolute = torch.tensor([t in ("revolute", "continuous") for t in model.joint_types],
                            dtype=model.dtype, device=model.device).unsqueeze(-1)
    prismatic = torch.tensor([t == "prismatic" for t in model.joint_types],
                             dtype=model.dtype, device=model.device).unsqueeze(-1)
    return model.axis * revolute, model.axis * prismatic


def _per_body(model: RigidBodyModel, x: torch.Tensor) -> torch.Tensor:
    """(B, dof) joint values to (B, nb) body values, zero for fixed joints."""
    padded = torch.cat([x, x.new_zeros(x.shape[0], 1)], dim=1)
    index = torch.tensor([i if i >= 0 else model.dof for i in model.q_index], device=x.device)
    return padded[:, index]


def joint_placements(model: RigidBodyModel, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotation (B, nb, 3, 3) and translation (B, nb, 3) of every body's frame in its parent's
    frame at configuration q (B, dof); all bodies at once (Rodrigues for revolute joints)."""
    s_ang, s_lin = _motion_subspaces(model)
    angle = _per_body(model, q)                                   # (B, nb)
    k = _skew(s_ang)                                              # (nb, 3, 3), zero if not revolute
    eye = torch.eye(3, dtype=q.dtype, device=q.device)
    sin, cos = torch.sin(angle)[..., None, None], torch.cos(angle)[..., None, None]
    joint_rotation = eye + sin * k + (1.0 - cos) * (k @ k)       # (B, nb, 3, 3)
    rotation = model.origin_rotation @ joint_rotation
    translation = model.origin_translation + _matvec(model.origin_rotation, s_lin * angle.unsqueeze(-1))
    return rotation, translation


def _check(model: RigidBodyModel, **arrays: torch.Tensor) -> list[torch.Tensor]:
    return [as_batch(x, model.dof, name) for name, x in arrays.items()]


@dataclass
class BodyMotion:
    """The forward pass of the RNEA: each body's placement in its parent (rotation (B, nb, 3, 3),
    translation (B, nb, 3)) and its spatial velocity (omega, vel) and spatial acceleration
    (alpha, acc) in body coordinates (B, nb, 3 each); acc includes the gravity offset."""

    rotation: torch.Tensor
    translation: torch.Tensor
    omega: torch.Tensor
    vel: torch.Tensor
    alpha: torch.Tensor
    acc: torch.Tensor


def body_motion(model: RigidBodyModel, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor,
                gravity: bool = True) -> BodyMotion:
    """Forward recursion of the RNEA: velocities and accelerations from the root outwards
    (the base accelerates upwards by -g, so gravity needs no separate term)."""
    rotation, translation = joint_placements(model, q)
    s_ang, s_lin = _motion_subspaces(model)
    qd_b, qdd_b = _per_body(model, qd).unsqueeze(-1), _per_body(model, qdd).unsqueeze(-1)
    vj_ang, vj_lin = s_ang * qd_b, s_lin * qd_b                  # (B, nb, 3) joint velocities
    aj_ang, aj_lin = s_ang * qdd_b, s_lin * qdd_b
    batch = q.shape[0]
    zero = q.new_zeros(batch, 3)
    root_acc = (-model.gravity).expand(batch, 3) if gravity else zero
    omega, vel, alpha, acc = [], [], [], []
    for i, parent in enumerate(model.parents):
        e = rotation[:, i].transpose(-1, -2)                     # parent -> body coordinates
        r = translation[:, i]
        if parent < 0:
            w_p, v_p, al_p, a_p = zero, zero, zero, root_acc
        else:
            w_p, v_p, al_p, a_p = omega[parent], vel[parent], alpha[parent], acc[parent]
        w = _matvec(e, w_p) + vj_ang[:, i]
        v = _matvec(e, v_p + _cross(w_p, r)) + vj_lin[:, i]
        al = _matvec(e, al_p) + aj_ang[:, i] + _cross(w, vj_ang[:, i])
        a = (_matvec(e, a_p + _cross(al_p, r)) + aj_lin[:, i] + _cross(w, vj_lin[:, i])
             + _cross(v, vj_ang[:, i]))
        omega.append(w), vel.append(v), alpha.append(al), acc.append(a)
    return BodyMotion(rotation, translation, *(torch.stack(x, dim=1) for x in (omega, vel, alpha, acc)))


def project_to_joints(model: RigidBodyModel, motion: BodyMotion, f_ang: torch.Tensor,
                      f_lin: torch.Tensor) -> torch.Tensor:
    """Backward recursion of the RNEA: body forces (B, nb, 3, ...) accumulated from the leaves
    to the root and projected on each joint's motion subspace -> (B, dof, ...). Trailing
    dimensions are carried along (the regressor propagates one column per parameter)."""
    s_ang, s_lin = _motion_subspaces(model)
    extra = f_ang.dim() - 3
    shape = (-1,) + (1,) * extra
    f_ang_l, f_lin_l = list(f_ang.unbind(1)), list(f_lin.unbind(1))
    tau: list[Optional[torch.Tensor]] = [None] * model.dof
    for i in range(model.num_bodies - 1, -1, -1):
        if model.q_index[i] >= 0:
            tau[model.q_index[i]] = ((f_ang_l[i] * s_ang[i].reshape(3, *shape[1:])).sum(1)
                                     + (f_lin_l[i] * s_lin[i].reshape(3, *shape[1:])).sum(1))
        parent = model.parents[i]
        if parent >= 0:
            rot, r = motion.rotation[:, i], motion.translation[:, i]
            f_lin_parent = _rotate(rot, f_lin_l[i])
            f_ang_l[parent] = f_ang_l[parent] + _rotate(rot, f_ang_l[i]) + _cross_left(r, f_lin_parent)
            f_lin_l[parent] = f_lin_l[parent] + f_lin_parent
    return torch.stack(tau, dim=1)


def _rotate(rot: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """rot (B, 3, 3) applied to f (B, 3, ...)."""
    if f.dim() == 2:
        return _matvec(rot, f)
    return (rot @ f.flatten(2)).reshape(f.shape)


def _cross_left(r: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """r (B, 3) x f (B, 3, ...) along dimension 1."""
    if f.dim() == 2:
        return _cross(r, f)
    return (_skew(r) @ f.flatten(2)).reshape(f.shape)


def rnea(model: RigidBodyModel, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor,
         inertials: Optional[Inertials] = None, damping: Optional[torch.Tensor] = None,
         gravity: bool = True) -> torch.Tensor:
    """Inverse dynamics by the recursive Newton-Euler algorithm (paper 002 eq. 1-2):
    tau (B, dof) = H(q) qdd + C(q, qd) qd + g(q) + damping * qd.

    ``inertials`` default to the model's nominal ones, ``damping`` (dof,) to the URDF's.
    """
    q, qd, qdd = _check(model, q=q, qd=qd, qdd=qdd)
    inertials = inertials if inertials is not None else model.nominal_inertials()
    damping = damping if damping is not None else model.nominal_damping
    motion = body_motion(model, q, qd, qdd, gravity)
    # body forces f = I a + v x* (I v), all bodies at once
    w, v, al, a = motion.omega, motion.vel, motion.alpha, motion.acc
    m, c, inertia = inertials.mass.unsqueeze(-1), inertials.com, inertials.inertia
    momentum = m * (v + _cross(w, c))
    angular_momentum = _matvec(inertia, w) + _cross(c, momentum)
    mass_acc = m * (a + _cross(al, c))
    f_lin = mass_acc + _cross(w, momentum)
    f_ang = _matvec(inertia, al) + _cross(c, mass_acc) + _cross(w, angular_momentum) + _cross(v, momentum)
    return project_to_joints(model, motion, f_ang, f_lin) + damping * qd


def forward_kinematics(model: RigidBodyModel, q: torch.Tensor) -> torch.Tensor:
    """World (root-frame) poses (B, nb, 4, 4) of every link frame at configuration q."""
    (q,) = _check(model, q=q)
    rotation, translation = joint_placements(model, q)
    world_r: list[torch.Tensor] = []
    world_p: list[torch.Tensor] = []
    for i, parent in enumerate(model.parents):
        if parent < 0:
            world_r.append(rotation[:, i]), world_p.append(translation[:, i])
        else:
            world_r.append(world_r[parent] @ rotation[:, i])
            world_p.append(world_p[parent] + _matvec(world_r[parent], translation[:, i]))
    pose = q.new_zeros(q.shape[0], model.num_bodies, 4, 4)
    pose[..., :3, :3] = torch.stack(world_r, dim=1)
    pose[..., :3, 3] = torch.stack(world_p, dim=1)
    pose[..., 3, 3] = 1.0
    return pose


def spatial_inertia(inertials: Inertials) -> torch.Tensor:
    """6x6 spatial inertia (nb, 6, 6) of each body about its frame origin, (angular, linear)
    ordering: [[I_c + m [c]x [c]xᵀ, m [c]x], [m [c]xᵀ, m 1]]."""
    m = inertials.mass[..., None, None]
    cx = _skew(inertials.com)
    eye = torch.eye(3, dtype=cx.dtype, device=cx.device).expand_as(cx)
    top = torch.cat([inertials.inertia + m * cx @ cx.transpose(-1, -2), m * cx], dim=-1)
    bottom = torch.cat([m * cx.transpose(-1, -2), m * eye], dim=-1)
    return torch.cat([top, bottom], dim=-2)


def _motion_transforms(rotation: torch.Tensor, translation: torch.Tensor) -> torch.Tensor:
    """Parent-to-body spatial motion transforms X (B, nb, 6, 6) = [[E, 0], [-E [r]x, E]]."""
    e = rotation.transpose(-1, -2)
    zero = torch.zeros_like(e)
    top = torch.cat([e, zero], dim=-1)
    bottom = torch.cat([-e @ _skew(translation), e], dim=-1)
    return torch.cat([top, bottom], dim=-2)


def mass_matrix(model: RigidBodyModel, q: torch.Tensor,
                inertials: Optional[Inertials] = None) -> torch.Tensor:
    """Joint-space inertia matrix H(q) (B, dof, dof) by the composite rigid-body algorithm."""
    (q,) = _check(model, q=q)
    inertials = inertials if inertials is not None else model.nominal_inertials()
    rotation, translation = joint_placements(model, q)
    xs = _motion_transforms(rotation, translation)               # (B, nb, 6, 6)
    s_ang, s_lin = _motion_subspaces(model)
    subspace = torch.cat([s_ang, s_lin], dim=-1)                 # (nb, 6)
    composite = list(spatial_inertia(inertials).expand(q.shape[0], -1, -1, -1).unbind(1))
    for i in range(model.num_bodies - 1, -1, -1):
        parent = model.parents[i]
        if parent >= 0:
            x = xs[:, i]
            composite[parent] = composite[parent] + x.transpose(-1, -2) @ composite[i] @ x
    entries: dict[tuple[int, int], torch.Tensor] = {}
    for i in range(model.num_bodies):
        qi = model.q_index[i]
        if qi < 0:
            continue
        force = _matvec(composite[i], subspace[i].expand(q.shape[0], 6))
        entries[qi, qi] = (force * subspace[i]).sum(-1)
        j = i
        while model.parents[j] >= 0:
            force = _matvec(xs[:, j].transpose(-1, -2), force)
            j = model.parents[j]
            qj = model.q_index[j]
            if qj >= 0:
                entries[qi, qj] = entries[qj, qi] = (force * subspace[j]).sum(-1)
    zero = q.new_zeros(q.shape[0])
    rows = [torch.stack([entries.get((r, c), zero) for c in range(model.dof)], dim=-1)
            for r in range(model.dof)]
    return torch.stack(rows, dim=-2)


def forward_dynamics(model: RigidBodyModel, q: torch.Tensor, qd: torch.Tensor, tau: torch.Tensor,
                     inertials: Optional[Inertials] = None,
                     damping: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Joint accelerations qdd (B, dof) = H(q)⁻¹ (tau − C(q, qd) qd − g(q) − damping qd)."""
    q, qd, tau = _check(model, q=q, qd=qd, tau=tau)
    bias = rnea(model, q, qd, torch.zeros_like(qd), inertials, damping)
    chol = torch.linalg.cholesky(mass_matrix(model, q, inertials))
    return torch.cholesky_solve((tau - bias).unsqueeze(-1), chol).squeeze(-1)
