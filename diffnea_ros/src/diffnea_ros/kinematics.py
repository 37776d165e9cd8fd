"""Forward kinematics: every body's joint placement in its parent's frame and the world poses of the
link frames at a configuration q, batch-first and vectorised over the batch.
"""
from __future__ import annotations

import torch

from diffnea_ros.model import RigidBodyModel, check_inputs
from diffnea_ros.vector3 import matvec, skew


def motion_subspaces(model: RigidBodyModel) -> tuple[torch.Tensor, torch.Tensor]:
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
    s_ang, s_lin = motion_subspaces(model)
    angle = _per_body(model, q)                                   # (B, nb)
    k = skew(s_ang)                                              # (nb, 3, 3), zero if not revolute
    eye = torch.eye(3, dtype=q.dtype, device=q.device)
    sin, cos = torch.sin(angle)[..., None, None], torch.cos(angle)[..., None, None]
    joint_rotation = eye + sin * k + (1.0 - cos) * (k @ k)       # (B, nb, 3, 3)
    rotation = model.origin_rotation @ joint_rotation
    translation = model.origin_translation + matvec(model.origin_rotation, s_lin * angle.unsqueeze(-1))
    return rotation, translation


def forward_kinematics(model: RigidBodyModel, q: torch.Tensor) -> torch.Tensor:
    """World (root-frame) poses (B, nb, 4, 4) of every link frame at configuration q."""
    (q,) = check_inputs(model, q=q)
    rotation, translation = joint_placements(model, q)
    world_r: list[torch.Tensor] = []
    world_p: list[torch.Tensor] = []
    for i, parent in enumerate(model.parents):
        if parent < 0:
            world_r.append(rotation[:, i]), world_p.append(translation[:, i])
        else:
            world_r.append(world_r[parent] @ rotation[:, i])
            world_p.append(world_p[parent] + matvec(world_r[parent], translation[:, i]))
    pose = q.new_zeros(q.shape[0], model.num_bodies, 4, 4)
    pose[..., :3, :3] = torch.stack(world_r, dim=1)
    pose[..., :3, 3] = torch.stack(world_p, dim=1)
    pose[..., 3, 3] = 1.0
    return pose
