"""The inverse-dynamics regressor: tau = Y(q, qd, qdd) pi, linear in the standard parameters.

Every body's Newton-Euler force is linear in its ten standard inertial parameters
pi = [m, h_x, h_y, h_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz] (mass, first moment h = m c, and
the rotational inertia about the body-frame origin I_o = I_c + m ([c]x)ᵀ[c]x). With
a' = a + omega x v (a: spatial acceleration incl. gravity), the body force is

    f_lin = m a' + alpha x h + omega x (omega x h)
    f_ang = I_o alpha + omega x (I_o omega) + h x a'

so the RNEA's backward pass carried out on these 6 x 10 blocks gives Y (B, dof, nb, 10).

Training on L_ID (paper 002 eq. 2) over a fixed data set then needs Y only once: each step maps
the learnable parametrisation to pi and takes one matrix product, which is what makes an epoch
cheap (the parametrisations of §3 are nonlinear in the raw parameters, the regressor is exact).
"""
from __future__ import annotations

from typing import Optional

import torch

from diffnea_ros.inverse_dynamics import body_motion, joint_contributions
from diffnea_ros.model import Inertials, RigidBodyModel, check_inputs
from diffnea_ros.vector3 import cross, skew

NUM_STANDARD = 10   # parameters per body
_UPPER = torch.tensor([0, 1, 2, 4, 5, 8])            # xx, xy, xz, yy, yz, zz of a flat 3x3
_DIAGONAL = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 1.0])


def standard_parameters(inertials: Inertials) -> torch.Tensor:
    """(nb, 10) standard parameters [m, h (3), I_o (xx, xy, xz, yy, yz, zz)] of each body."""
    m, c = inertials.mass.unsqueeze(-1), inertials.com
    h = m * c
    # parallel axis: I_o = I_c + m (|c|² 1 - c cᵀ), upper triangle only
    flat = inertials.inertia.flatten(-2).index_select(-1, _UPPER.to(c.device))
    outer = (h.unsqueeze(-1) * c.unsqueeze(-2)).flatten(-2).index_select(-1, _UPPER.to(c.device))
    shift = (h * c).sum(-1, keepdim=True) * _DIAGONAL.to(c.dtype).to(c.device) - outer
    return torch.cat([m, h, flat + shift], dim=-1)


def _inertia_columns(x: torch.Tensor) -> torch.Tensor:
    """L(x) (..., 3, 6) with I x = L(x) [xx, xy, xz, yy, yz, zz]."""
    x0, x1, x2 = x.unbind(-1)
    z = torch.zeros_like(x0)
    return torch.stack([torch.stack([x0, x1, x2, z, z, z], -1),
                        torch.stack([z, x0, z, x1, x2, z], -1),
                        torch.stack([z, z, x0, z, x1, x2], -1)], -2)


def regressor(model: RigidBodyModel, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor,
              gravity: bool = True) -> torch.Tensor:
    """Y (B, dof, nb, 10) with rnea(q, qd, qdd) = Y · standard_parameters + damping qd."""
    q, qd, qdd = check_inputs(model, q=q, qd=qd, qdd=qdd)
    motion = body_motion(model, q, qd, qdd, gravity)
    w, v, al, a = motion.omega, motion.vel, motion.alpha, motion.acc      # (B, nb, 3)
    a_prime = a + cross(w, v)
    wx = skew(w)
    batch, nb = q.shape[0], model.num_bodies
    block_ang = torch.cat([torch.zeros_like(a_prime).unsqueeze(-1), -skew(a_prime),
                           _inertia_columns(al) + wx @ _inertia_columns(w)], dim=-1)   # (B, nb, 3, 10)
    block_lin = torch.cat([a_prime.unsqueeze(-1), skew(al) + wx @ wx,
                           a_prime.new_zeros(batch, nb, 3, 6)], dim=-1)
    # body k's block, carried to the joints that support it, is column k of Y
    return joint_contributions(model, motion, block_ang, block_lin)


def regressor_torque(y: torch.Tensor, parameters: torch.Tensor) -> torch.Tensor:
    """tau (B, dof) = Y (B, dof, nb, 10) · pi (nb, 10)."""
    return y.flatten(2) @ parameters.flatten()


def chunked_regressor(model: RigidBodyModel, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor,
                      bodies: Optional[torch.Tensor] = None, chunk: int = 1024) -> torch.Tensor:
    """The regressor of a whole data set, in chunks (memory), without gradients; ``bodies``
    keeps only those bodies' columns -> (N, dof, len(bodies), 10)."""
    parts = []
    with torch.no_grad():
        for i in range(0, q.shape[0], chunk):
            y = regressor(model, q[i:i + chunk], qd[i:i + chunk], qdd[i:i + chunk])
            parts.append(y if bodies is None else y[:, :, bodies])
    return torch.cat(parts)
