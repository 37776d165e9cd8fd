"""Joint-space dynamics through the mass matrix: H(q) by the composite rigid-body algorithm (CRBA)
and the forward dynamics qdd = H⁻¹ (tau − C qd − g − D qd), paper 002 eq. 1 solved for qdd.
"""
from __future__ import annotations

from typing import Optional

import torch

from diffnea_ros.inverse_dynamics import rnea
from diffnea_ros.kinematics import motion_subspaces, joint_placements
from diffnea_ros.model import Inertials, RigidBodyModel, check_inputs
from diffnea_ros.spatial import motion_transform, spatial_inertia
from diffnea_ros.vector3 import matvec


def _motion_transforms(rotation: torch.Tensor, translation: torch.Tensor) -> torch.Tensor:
    """Parent-to-body spatial motion transforms X (B, nb, 6, 6) = [[E, 0], [-E [r]x, E]]."""
    return motion_transform(rotation.transpose(-1, -2), translation)


def mass_matrix(model: RigidBodyModel, q: torch.Tensor,
                inertials: Optional[Inertials] = None) -> torch.Tensor:
    """Joint-space inertia matrix H(q) (B, dof, dof) by the composite rigid-body algorithm."""
    (q,) = check_inputs(model, q=q)
    inertials = inertials if inertials is not None else model.nominal_inertials()
    rotation, translation = joint_placements(model, q)
    xs = _motion_transforms(rotation, translation)               # (B, nb, 6, 6)
    s_ang, s_lin = motion_subspaces(model)
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
        force = matvec(composite[i], subspace[i].expand(q.shape[0], 6))
        entries[qi, qi] = (force * subspace[i]).sum(-1)
        j = i
        while model.parents[j] >= 0:
            force = matvec(xs[:, j].transpose(-1, -2), force)
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
    q, qd, tau = check_inputs(model, q=q, qd=qd, tau=tau)
    bias = rnea(model, q, qd, torch.zeros_like(qd), inertials, damping)
    chol = torch.linalg.cholesky(mass_matrix(model, q, inertials))
    return torch.cholesky_solve((tau - bias).unsqueeze(-1), chol).squeeze(-1)
