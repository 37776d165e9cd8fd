"""Batched 3-vector algebra shared by the dynamics, the regressor and the parametrisations."""
from __future__ import annotations

import torch


def skew(v: torch.Tensor) -> torch.Tensor:
    """(..., 3) -> (..., 3, 3) skew-symmetric [v]x with [v]x w = v x w."""
    zero = torch.zeros_like(v[..., 0])
    x, y, z = v.unbind(-1)
    return torch.stack([torch.stack([zero, -z, y], -1),
                        torch.stack([z, zero, -x], -1),
                        torch.stack([-y, x, zero], -1)], -2)


def cross(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a x b along the last dimension, broadcasting the other dimensions."""
    a, b = torch.broadcast_tensors(a, b)
    return torch.linalg.cross(a, b, dim=-1)


def matvec(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) @ (..., 3) -> (..., 3)."""
    return (m @ v.unsqueeze(-1)).squeeze(-1)
