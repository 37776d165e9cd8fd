"""Learnable inverse dynamics: DiffNEA (paper 002 §3) on a :class:`RigidBodyModel`.

The inertials of the learnable links come from one of the five parametrisations (NoStr eq. 3,
Symm eq. 4, SPD eq. 5-6, Tri eq. 7-12, Cov eq. 13-16), every other body keeps the URDF's values.
Each joint gets a learned positive viscous damping d = softplus(theta_d) (paper §4.2) and,
optionally, a learned sigmoid Coulomb friction of the form identified for the Panda by Gaz et al.
(reference/panda_dynamics.yaml):

    tau_f(qd) = phi1 / (1 + exp(-phi2 (qd + phi3))) - phi1 / (1 + exp(-phi2 phi3)),

with phi1 = softplus(.) >= 0 and phi2 = softplus(.) > 0, so tau_f(0) = 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from diffnea_ros.errors import DiffneaError
from diffnea_ros.inverse_dynamics import rnea
from diffnea_ros.model import Inertials, RigidBodyModel
from diffnea_ros.parametrisation import make_parametrisation
from diffnea_ros.regressor import chunked_regressor, regressor_torque, standard_parameters

MIN_DAMPING = 1e-3        # [N m s/rad] initial damping where the URDF has none
INITIAL_PHI1 = 0.05       # [N m] initial Coulomb amplitude
INITIAL_PHI2 = 10.0       # [s/rad] initial sigmoid steepness


def _inverse_softplus(x: torch.Tensor) -> torch.Tensor:
    return x + torch.log(-torch.expm1(-x))


def default_learnable_links(model: RigidBodyModel) -> tuple[str, ...]:
    """Bodies with mass that some joint moves (a body fixed to the root never loads a joint)."""
    moved = [False] * model.num_bodies
    for i, parent in enumerate(model.parents):
        moved[i] = model.q_index[i] >= 0 or (parent >= 0 and moved[parent])
    mass = model.nominal_mass.detach().cpu().numpy()
    return tuple(name for name, m, mv in zip(model.body_names, mass, moved) if mv and m > 0.0)


@dataclass(frozen=True)
class RegressorCache:
    """Regressor columns of the learnable links (N, dof, L, 10) and the torque (N, dof) of the
    bodies that are not learned, for one data set."""

    y: torch.Tensor
    fixed: torch.Tensor

    def subset(self, index: torch.Tensor) -> "RegressorCache":
        return RegressorCache(self.y[index], self.fixed[index])


@dataclass(frozen=True)
class FrictionParameters:
    """Per-joint sigmoid Coulomb friction (phi1 [N m], phi2 [s/rad], phi3 [rad/s])."""

    phi1: np.ndarray
    phi2: np.ndarray
    phi3: np.ndarray


class LearnableDynamics(torch.nn.Module):
    """tau = f_NE(q, qd, qdd; theta) + d * qd (+ tau_f(qd)) (+ b): the model of L_ID (paper 002
    eq. 2), optionally with the sigmoid friction tau_f and a constant torque-sensor offset b per
    joint (the bias a joint torque sensor reports at zero torque). ``learn_com=False`` keeps
    each learnable link's CoM at the URDF's and learns only its mass and inertia."""

    def __init__(self, model: RigidBodyModel, parametrisation: str,
                 learnable_links: Optional[Sequence[str]] = None, friction: bool = False,
                 learn_damping: bool = True, offset: bool = False, learn_com: bool = True) -> None:
        super().__init__()
        self.model = model
        self.kind = parametrisation
        links = tuple(learnable_links) if learnable_links is not None else default_learnable_links(model)
        if not links:
            raise DiffneaError("no learnable link: the URDF's moving links all have zero mass "
                               "(give --links or add inertials)")
        index = [model.description.body_index(name) for name in links]
        self.learnable_links = links
        self.register_buffer("link_index", torch.tensor(index, dtype=torch.long))
        nominal = model.nominal_inertials()
        self.parametrisation = make_parametrisation(
            parametrisation, nominal.mass[index], nominal.com[index], nominal.inertia[index])
        # learn_com=False (the authors' L4DC experiments learn only 'mass' and 'inertia_mat'):
        # θ_h is frozen and unused, learned_inertials() puts the URDF's CoM in its place; read
        # the inertials through it (or inertials()), never through parametrisation() directly
        self.learn_com = learn_com
        self.parametrisation.theta_h.requires_grad_(learn_com)
        damping = torch.clamp(model.nominal_damping.detach().clone(), min=MIN_DAMPING)
        self.raw_damping = torch.nn.Parameter(_inverse_softplus(damping), requires_grad=learn_damping)
        self.has_friction = friction
        if friction:
            dof = model.dof
            like = model.nominal_damping
            self.raw_phi1 = torch.nn.Parameter(_inverse_softplus(torch.full_like(like, INITIAL_PHI1)))
            self.raw_phi2 = torch.nn.Parameter(_inverse_softplus(torch.full_like(like, INITIAL_PHI2)))
            self.phi3 = torch.nn.Parameter(torch.zeros(dof, dtype=like.dtype, device=like.device))
        self.has_offset = offset
        if offset:
            like = model.nominal_damping
            self.offset = torch.nn.Parameter(torch.zeros_like(like))

    def learned_inertials(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(mass, com, inertia) of the learnable links; the CoM of the model's URDF unless
        ``learn_com`` (then ``parametrisation()``'s own CoM θ_h / m is not the model's)."""
        mass, com, inertia = self.parametrisation()
        if not self.learn_com:
            com = self.model.nominal_com[self.link_index]
        return mass, com, inertia

    def inertials(self) -> Inertials:
        """All bodies' inertials: the learned ones scattered over the URDF's."""
        mass, com, inertia = self.learned_inertials()
        index = (self.link_index,)
        return Inertials(self.model.nominal_mass.index_put(index, mass),
                         self.model.nominal_com.index_put(index, com),
                         self.model.nominal_inertia.index_put(index, inertia))

    def damping(self) -> torch.Tensor:
        return F.softplus(self.raw_damping)

    def friction_torque(self, qd: torch.Tensor) -> torch.Tensor:
        """Sigmoid Coulomb friction (zero when friction is not learned)."""
        if not self.has_friction:
            return torch.zeros_like(qd)
        phi1, phi2 = F.softplus(self.raw_phi1), F.softplus(self.raw_phi2)
        return phi1 * (torch.sigmoid(phi2 * (qd + self.phi3)) - torch.sigmoid(phi2 * self.phi3))

    def friction_parameters(self) -> Optional[FrictionParameters]:
        if not self.has_friction:
            return None
        with torch.no_grad():
            return FrictionParameters(*(x.detach().cpu().double().numpy() for x in (
                F.softplus(self.raw_phi1), F.softplus(self.raw_phi2), self.phi3)))

    def _joint_terms(self, tau: torch.Tensor, qd: torch.Tensor) -> torch.Tensor:
        """``tau`` plus the friction and the offset, where they are learned."""
        if self.has_friction:
            tau = tau + self.friction_torque(qd)
        return tau + self.offset if self.has_offset else tau

    def forward(self, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor) -> torch.Tensor:
        """Predicted joint torques by the differentiable RNEA (paper 002 §3)."""
        tau = rnea(self.model, q, qd, qdd, self.inertials(), self.damping())
        return self._joint_terms(tau, qd)

    def regressor_cache(self, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor,
                        chunk: int = 1024) -> "RegressorCache":
        """The learnable links' regressor columns and the fixed bodies' torque for a data set
        (see :mod:`diffnea_ros.regressor`): afterwards a prediction is one matrix product."""
        learned = set(self.link_index.tolist())
        others = torch.tensor([i for i in range(self.model.num_bodies) if i not in learned],
                              dtype=torch.long)
        y_all = chunked_regressor(self.model, q, qd, qdd, chunk=chunk)
        nominal = standard_parameters(self.model.nominal_inertials())
        fixed = (regressor_torque(y_all[:, :, others], nominal[others]) if len(others)
                 else q.new_zeros(q.shape))
        return RegressorCache(y_all[:, :, self.link_index].contiguous(), fixed)

    def predict_from_regressor(self, y: torch.Tensor, fixed: torch.Tensor,
                               qd: torch.Tensor) -> torch.Tensor:
        """The same torques as :meth:`forward`, from cached regressor columns ``y`` (B, dof, L, 10)
        and the fixed bodies' torque (B, dof)."""
        mass, com, inertia = self.learned_inertials()
        tau = regressor_torque(y, standard_parameters(Inertials(mass, com, inertia))) + fixed
        return self._joint_terms(tau + self.damping() * qd, qd)

    def extra_repr(self) -> str:
        return (f"parametrisation={self.kind!r}, links={len(self.learnable_links)}, "
                f"friction={self.has_friction}, offset={self.has_offset}")

    @torch.no_grad()
    def link_inertials(self) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
        """Learned (mass, com, inertia) of each learnable link, float64, for export."""
        inertials = self.inertials()
        out = {}
        for name, i in zip(self.learnable_links, self.link_index.tolist()):
            out[name] = (float(inertials.mass[i]), inertials.com[i].cpu().double().numpy(),
                         inertials.inertia[i].cpu().double().numpy())
        return out

    @torch.no_grad()
    def joint_damping(self) -> dict[str, float]:
        return dict(zip(self.model.joint_names, self.damping().cpu().double().tolist()))

    @torch.no_grad()
    def joint_torque_offset(self) -> dict[str, float]:
        """The learned torque offset per joint [N m], empty when it is not learned."""
        if not self.has_offset:
            return {}
        return dict(zip(self.model.joint_names, self.offset.cpu().double().tolist()))

    def joint_friction(self) -> dict[str, tuple[float, float, float]]:
        """(phi1, phi2, phi3) per joint, empty when friction is not learned."""
        phi = self.friction_parameters()
        if phi is None:
            return {}
        return {name: (float(a), float(b), float(c))
                for name, a, b, c in zip(self.model.joint_names, phi.phi1, phi.phi2, phi.phi3)}
