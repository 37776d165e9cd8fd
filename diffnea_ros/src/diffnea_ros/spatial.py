"""Spatial algebra shared by the algorithms (Featherstone, Rigid Body Dynamics Algorithms, 2008),
spatial vectors ordered (angular, linear): motion transforms, the force cross product and a
body's 6x6 spatial inertia from its inertial parameters (theta_i of paper 002 eq. 2).
"""
from __future__ import annotations

import torch

from diffnea_ros.model import Inertials
from diffnea_ros.vector3 import skew


def motion_transform(e: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Spatial motion transforms [[E, 0], [-E [r]x, E]] (..., 6, 6) of rotations E (..., 3, 3)
    (old coordinates -> new) and translations r (..., 3) of the new origin in old coordinates."""
    top = torch.cat([e, torch.zeros_like(e)], -1)
    return torch.cat([top, torch.cat([-e @ skew(r), e], -1)], -2)


def block_rotation(rotation: torch.Tensor) -> torch.Tensor:
    """diag(Q, Q) (..., 6, 6) of rotations Q (..., 3, 3): turns spatial vectors."""
    zero = torch.zeros_like(rotation)
    return torch.cat([torch.cat([rotation, zero], -1), torch.cat([zero, rotation], -1)], -2)


def force_cross(**like) -> torch.Tensor:
    """X (6, 6, 6): (v x* h)_ang = w x h_ang + v_lin x h_lin, (v x* h)_lin = w x h_lin."""
    levi_civita = torch.zeros(3, 3, 3, **like)                        # (a x b)_k = e_kil a_i b_l
    for k, i, l in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        levi_civita[k, i, l], levi_civita[k, l, i] = 1.0, -1.0
    cross = torch.zeros(6, 6, 6, **like)
    cross[:3, :3, :3] = cross[:3, 3:, 3:] = cross[3:, :3, 3:] = levi_civita
    return cross


def spatial_inertia(inertials: Inertials) -> torch.Tensor:
    """6x6 spatial inertia (nb, 6, 6) of each body about its frame origin, (angular, linear)
    ordering: [[I_c + m [c]x [c]xᵀ, m [c]x], [m [c]xᵀ, m 1]]."""
    m = inertials.mass[..., None, None]
    cx = skew(inertials.com)
    eye = torch.eye(3, dtype=cx.dtype, device=cx.device).expand_as(cx)
    top = torch.cat([inertials.inertia + m * cx @ cx.transpose(-1, -2), m * cx], dim=-1)
    bottom = torch.cat([m * cx.transpose(-1, -2), m * eye], dim=-1)
    return torch.cat([top, bottom], dim=-2)
