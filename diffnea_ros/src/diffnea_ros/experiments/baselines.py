"""The learnt baselines of paper 002 Table 1 and Fig. 1: an unstructured MLP and DeLaN.

Both map (q, qd, qdd) (B, dof) to tau (B, dof) like :class:`LearnableDynamics` and train with
:func:`diffnea_ros.identification.fit` on the same loss L_ID (eq. 2). Paper 002 §4.1: "All
feed-forward neural networks involved in MLP and DeLaN models have [32, 64, 32] nodes in the
hidden layer with tanh() activation functions" (``HIDDEN``).

- :class:`MLPInverseDynamics`: tau = f(q, qd, qdd), one network; inputs standardised and the
  output scaled by the training data's mean and standard deviation (fixed buffers, our choice:
  the paper does not say how inputs are scaled; without it tanh units saturate).
- :class:`DeLaN` (Lutter, Ritter, Peters, ICLR 2019): H(q) = L(q) L(q)ᵀ + ε 1 with L lower
  triangular from a network, its diagonal softplus(.) + ``DIAGONAL_BIAS`` > 0, so H ≻ 0;
  potential energy V(q) from a second network, g = ∂V/∂q; Coriolis and centrifugal terms from
  automatic differentiation, c = Ḣ qd − ½ ∂(qdᵀ H qd)/∂q; tau = H qdd + c + g + d ⊙ qd with a
  learnt viscous damping per joint d = θ_d² (paper §4.2: "parameterization similar to J1, J2 in
  Eq. 11, but with b = 0"; our simulated iiwa has the URDF's joint damping). The networks see
  q standardised; V is scaled by the training torques' standard deviation (a fixed buffer) so
  that g starts at the torques' scale.
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from diffnea_ros.errors import DiffneaError
from diffnea_ros.identification import Samples

HIDDEN = (32, 64, 32)       # paper 002 §4.1
DIAGONAL_BIAS = 1e-3        # lower bound of L's diagonal (DeLaN)
MASS_EPSILON = 1e-6         # ε of H = L Lᵀ + ε 1
DAMPING_STD = 0.1           # θ_d ~ N(0, DAMPING_STD²)
BASELINES = ("mlp", "delan")


def tanh_network(inputs: int, outputs: int, hidden: Sequence[int] = HIDDEN) -> nn.Sequential:
    """Feed-forward network with tanh hidden layers and a linear output."""
    layers: list[nn.Module] = []
    width = inputs
    for size in hidden:
        layers += [nn.Linear(width, size), nn.Tanh()]
        width = size
    layers.append(nn.Linear(width, outputs))
    return nn.Sequential(*layers)


def _std(x: torch.Tensor) -> torch.Tensor:
    return x.std(dim=0, unbiased=False).clamp_min(1e-6)


class MLPInverseDynamics(nn.Module):
    """Unstructured inverse dynamics tau = f(q, qd, qdd) (paper 002 Table 1 "MLP")."""

    def __init__(self, dof: int, samples: Samples, hidden: Sequence[int] = HIDDEN,
                 seed: int = 0, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        with torch.random.fork_rng():   # nn.Linear draws from the global RNG: seeded, then restored
            torch.manual_seed(seed)
            self.net = tanh_network(3 * dof, dof, hidden).to(dtype)
        x = torch.cat([samples.q, samples.qd, samples.qdd], dim=1).to(dtype)
        self.register_buffer("x_mean", x.mean(dim=0))
        self.register_buffer("x_std", _std(x))
        self.register_buffer("tau_mean", samples.tau.to(dtype).mean(dim=0))
        self.register_buffer("tau_std", _std(samples.tau.to(dtype)))

    def forward(self, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor) -> torch.Tensor:
        x = (torch.cat([q, qd, qdd], dim=-1) - self.x_mean) / self.x_std
        return self.net(x) * self.tau_std + self.tau_mean


class DeLaN(nn.Module):
    """Deep Lagrangian Network: tau = H(q) qdd + c(q, qd) + g(q) + d ⊙ qd (see module doc)."""

    def __init__(self, dof: int, samples: Samples, hidden: Sequence[int] = HIDDEN,
                 seed: int = 0, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.dof = dof
        with torch.random.fork_rng():   # nn.Linear draws from the global RNG: seeded, then restored
            torch.manual_seed(seed)
            self.l_net = tanh_network(dof, dof * (dof + 1) // 2, hidden).to(dtype)
            self.v_net = tanh_network(dof, 1, hidden).to(dtype)
        rows, cols = torch.tril_indices(dof, dof, offset=-1)
        self.register_buffer("tril_rows", rows)
        self.register_buffer("tril_cols", cols)
        self.register_buffer("q_mean", samples.q.to(dtype).mean(dim=0))
        self.register_buffer("q_std", _std(samples.q.to(dtype)))
        self.register_buffer("v_scale", samples.tau.to(dtype).std(unbiased=False).clamp_min(1e-6))
        generator = torch.Generator().manual_seed(seed)
        self.theta_d = nn.Parameter(torch.empty(dof, dtype=torch.float64).normal_(
            0.0, DAMPING_STD, generator=generator).to(dtype))

    def damping(self) -> torch.Tensor:
        return self.theta_d ** 2

    def _normalised(self, q: torch.Tensor) -> torch.Tensor:
        return (q - self.q_mean) / self.q_std

    def cholesky_factor(self, q: torch.Tensor) -> torch.Tensor:
        """L(q) (B, dof, dof): lower triangular, diagonal softplus + DIAGONAL_BIAS > 0."""
        raw = self.l_net(self._normalised(q))
        n = self.dof
        factor = q.new_zeros(q.shape[0], n, n)
        index = torch.arange(n, device=q.device)
        factor[:, index, index] = F.softplus(raw[:, :n]) + DIAGONAL_BIAS
        factor[:, self.tril_rows, self.tril_cols] = raw[:, n:]
        return factor

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        """H(q) = L Lᵀ + ε 1 (B, dof, dof), symmetric positive definite."""
        factor = self.cholesky_factor(q)
        eye = torch.eye(self.dof, dtype=q.dtype, device=q.device)
        return factor @ factor.transpose(-1, -2) + MASS_EPSILON * eye

    def potential(self, q: torch.Tensor) -> torch.Tensor:
        """V(q) (B,)."""
        return self.v_net(self._normalised(q)).squeeze(-1) * self.v_scale

    def terms(self, q: torch.Tensor, qd: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(H (B, n, n), c (B, n), g (B, n)); differentiable w.r.t. the parameters."""
        with torch.enable_grad():
            q = q.detach().requires_grad_(True)
            qd = qd.detach()
            mass = self.mass_matrix(q)
            h_qd = (mass @ qd.unsqueeze(-1)).squeeze(-1)
            quadratic = (qd * h_qd).sum(dim=-1)
            dquadratic = torch.autograd.grad(quadratic.sum(), q, create_graph=True)[0]
            # Ḣ qd = (∂(H qd)/∂q) qd by double backward: v ↦ Jᵀ v, then ∂/∂v of (Jᵀ v)·qd = J qd
            v = torch.zeros_like(h_qd, requires_grad=True)
            jt_v = torch.autograd.grad((h_qd * v).sum(), q, create_graph=True)[0]
            hdot_qd = torch.autograd.grad((jt_v * qd).sum(), v, create_graph=True)[0]
            coriolis = hdot_qd - 0.5 * dquadratic
            gravity = torch.autograd.grad(self.potential(q).sum(), q, create_graph=True)[0]
        return mass, coriolis, gravity

    def forward(self, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor) -> torch.Tensor:
        mass, coriolis, gravity = self.terms(q, qd)
        return ((mass @ qdd.unsqueeze(-1)).squeeze(-1) + coriolis + gravity
                + self.damping() * qd)


def make_baseline(kind: str, dof: int, samples: Samples, seed: int = 0) -> nn.Module:
    """``mlp`` or ``delan`` for ``dof`` joints, scaled on ``samples``, initialised by ``seed``."""
    if kind == "mlp":
        return MLPInverseDynamics(dof, samples, seed=seed, dtype=samples.q.dtype)
    if kind == "delan":
        return DeLaN(dof, samples, seed=seed, dtype=samples.q.dtype)
    raise DiffneaError(f"unknown baseline {kind!r}; valid: {', '.join(BASELINES)}")
