"""Inertial parametrisations of DiffNEA (paper 002 §3), vectorised over the links.

Each parametrisation is a ``torch.nn.Module`` (:class:`InertialParametrisation`) holding
unconstrained raw parameters θ, one row per link, and mapping them in ``forward()`` to ``mass``
(L,), ``com`` (L, 3) (from the learnt first moment h = m c) and ``inertia`` (L, 3, 3) about the
CoM: :class:`NoStr` (eq. 3, no guarantee), :class:`Symm` (eq. 4, m > 0, I = Iᵀ), :class:`SPD`
(eq. 5-6, I ≻ 0), :class:`Tri` (eq. 7-12) and :class:`Cov` (eq. 13-16), the last two with the
triangle inequality (eq. 8). ``make_parametrisation(kind, ...)`` builds one from
:data:`PARAMETRISATIONS`; ``from_values`` / ``set_values`` invert the map, projecting
inadmissible values (``projected_links``); the bias b is per link (:func:`default_bias`).

The maps, the bias rule and the inversion's projections: README.md, "How it works: inertial
parametrisations (`parametrisation`)".
"""
from __future__ import annotations

import abc
import math
from typing import Callable, ClassVar, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import Tensor, nn

from diffnea_ros.errors import DiffneaError
from diffnea_ros.vector3 import skew

__all__ = [
    "PARAMETRISATIONS", "BIAS_ABS", "BIAS_REL", "InertialParametrisation", "NoStr", "Symm",
    "SPD", "Tri", "Cov", "make_parametrisation", "default_bias",
]

PARAMETRISATIONS: Tuple[str, ...] = ("nostr", "symm", "spd", "tri", "cov")
BIAS_ABS = 1e-6       # upper bound of the automatic bias (kg, kg m²)
BIAS_REL = 1e-3       # automatic bias relative to the link's scale
FLOOR = 4.0           # projected values are raised to FLOOR * b
THETA_A_MAX = 30.0    # |θ_a| bound of the inversion (α never rounds to 0 or π in float64)

ArrayLike = Union[Tensor, np.ndarray, Sequence]

# Lower-triangular layout of eqs. 5 and 14: θ1..3 diagonal, θ4 = L21, θ5 = L31, θ6 = L32.
_TRIL_ROWS = (0, 1, 2, 1, 2, 2)
_TRIL_COLS = (0, 1, 2, 0, 0, 1)
# Symmetric layout of eq. 4, θ_IC1..6 = [Ixx, Ixy, Ixz, Iyy, Iyz, Izz] (paper 002 §3).
_SYM_INDEX = ((0, 1, 2), (1, 3, 4), (2, 4, 5))
_SYM_ROWS = (0, 0, 0, 1, 1, 2)
_SYM_COLS = (0, 1, 2, 1, 2, 2)


# ----------------------------------------------------------------------------- helpers
def _lower(theta: Tensor) -> Tensor:
    """(L, 6) → lower-triangular (L, 3, 3) of eq. 5 / eq. 14."""
    out = theta.new_zeros(theta.shape[:-1] + (3, 3))
    out[..., _TRIL_ROWS, _TRIL_COLS] = theta
    return out


def _symmetrise(a: Tensor) -> Tensor:
    return 0.5 * (a + a.transpose(-1, -2))


def _cholesky_plus_bias(theta: Tensor, bias: Tensor) -> Tensor:
    """L Lᵀ + b 1 with L lower triangular from θ (L, 6): eq. 5-6 (SPD) and eq. 14 (Cov)."""
    chol = _lower(theta)
    eye = torch.eye(3, dtype=chol.dtype, device=chol.device)
    return _symmetrise(chol @ chol.transpose(-1, -2)) + bias[:, None, None] * eye


def _log_so3(r: Tensor) -> Tensor:
    """Axis-angle θ with exp([θ]×) = R, for rotation angles ≤ 2π/3 (float64, no gradient)."""
    w = 0.5 * torch.stack([r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0],
                           r[..., 1, 0] - r[..., 0, 1]], -1)
    s = torch.linalg.vector_norm(w, dim=-1)
    c = 0.5 * (r.diagonal(dim1=-2, dim2=-1).sum(-1) - 1.0)
    angle = torch.atan2(s, c)
    small = angle < 1e-6
    factor = torch.where(small, 1.0 + angle ** 2 / 6.0, angle / torch.where(small, 1.0, s))
    return factor.unsqueeze(-1) * w


def _project_principal_moments(lam: Tensor, b: Tensor) -> Tensor:
    """Project ascending principal moments (L, 3) to J ≥ 4b and triangle slack ≥ 4b."""
    floor = (FLOOR * b).unsqueeze(-1)
    lam = torch.maximum(lam, floor)            # monotone: ascending order is kept
    slack = lam[..., 0] + lam[..., 1] - lam[..., 2]
    t = torch.clamp(FLOOR * b - slack, min=0.0)
    step = torch.tensor([1.0, 1.0, -1.0], dtype=lam.dtype, device=lam.device) / 3.0
    return lam + t.unsqueeze(-1) * step


def _asymmetric(inertia: Tensor) -> Tensor:
    """(L,) mask of inertias asymmetric beyond rounding (relative 1e-10); they get symmetrised."""
    gap = (inertia - inertia.transpose(-1, -2)).abs().flatten(1).amax(-1)
    return gap > 1e-10 * inertia.abs().flatten(1).amax(-1)


def _reconstruct(vectors: Tensor, values: Tensor) -> Tensor:
    return _symmetrise((vectors * values.unsqueeze(-2)) @ vectors.transpose(-1, -2))


def default_bias(scale: Tensor) -> Tensor:
    """Automatic bias b = min(BIAS_ABS, BIAS_REL · scale) per link (see module docstring)."""
    scale = scale.to(torch.float64)
    valid = torch.isfinite(scale) & (scale > 0)
    fallback = scale[valid].median() if bool(valid.any()) else scale.new_tensor(1.0)
    scale = torch.where(valid, scale, fallback)
    return torch.clamp(BIAS_REL * scale, max=BIAS_ABS)


def _float64_inputs(mass: ArrayLike, com: ArrayLike, inertia: ArrayLike,
                    device: Optional[torch.device] = None) -> Tuple[Tensor, Tensor, Tensor]:
    """Validate shapes (L,), (L,3), (L,3,3) and finiteness; return float64 tensors."""
    def as64(x: ArrayLike, what: str) -> Tensor:
        if isinstance(x, Tensor):
            t = x.detach()
        else:
            try:
                t = torch.as_tensor(np.asarray(x, dtype=np.float64))
            except (TypeError, ValueError) as exc:
                raise DiffneaError(f"{what} is not numeric: {exc}") from None
        return t.to(device=device, dtype=torch.float64)

    m, c, i = as64(mass, "mass"), as64(com, "com"), as64(inertia, "inertia")
    if m.ndim != 1 or m.shape[0] < 1:
        raise DiffneaError(f"mass must have shape (L,) with L >= 1, got {tuple(m.shape)}")
    n = m.shape[0]
    if tuple(c.shape) != (n, 3):
        raise DiffneaError(f"com must have shape ({n}, 3), got {tuple(c.shape)}")
    if tuple(i.shape) != (n, 3, 3):
        raise DiffneaError(f"inertia must have shape ({n}, 3, 3), got {tuple(i.shape)}")
    bad = ~(torch.isfinite(m) & torch.isfinite(c).all(-1) & torch.isfinite(i).flatten(1).all(-1))
    if bool(bad.any()):
        links = ", ".join(str(k) for k in bad.nonzero().flatten().tolist())
        raise DiffneaError(f"inertial values of link(s) {links} are not finite")
    return m, c, i


def _dtype_device(x: ArrayLike) -> Tuple[torch.dtype, torch.device]:
    if isinstance(x, Tensor) and x.is_floating_point():
        return x.dtype, x.device
    if isinstance(x, Tensor):
        return torch.float64, x.device
    return torch.float64, torch.device("cpu")


# ----------------------------------------------------------------------------- base class
class InertialParametrisation(nn.Module, abc.ABC):
    """Base class: raw parameters θ (nn.Parameters) → (mass (L,), com (L,3), inertia (L,3,3)).

    Subclasses declare ``kind`` and ``raw_shapes`` (per-link shape of each raw parameter) and
    implement ``mass()``, ``rotational_inertia()`` and the inversions ``_invert_mass`` /
    ``_invert_inertia``.  Construct with ``from_values`` (or ``make_parametrisation``); the
    plain constructor starts every link as a unit body (1 kg, CoM 0, I = 0.01 1 kg m²).
    """

    kind: ClassVar[str] = ""
    raw_shapes: ClassVar[Dict[str, Tuple[int, ...]]] = {}

    def __init__(self, num_links: int, *, mass_bias: Union[float, Tensor] = BIAS_ABS,
                 inertia_bias: Union[float, Tensor] = BIAS_ABS,
                 dtype: torch.dtype = torch.float64,
                 device: Optional[Union[str, torch.device]] = None) -> None:
        super().__init__()
        if int(num_links) < 1:
            raise DiffneaError(f"a parametrisation needs at least one link, got {num_links}")
        if not dtype.is_floating_point:
            raise DiffneaError(f"dtype must be a floating-point dtype, got {dtype}")
        n = int(num_links)
        self.register_buffer("mass_bias", self._bias(mass_bias, n, "mass_bias", dtype, device))
        self.register_buffer("inertia_bias",
                             self._bias(inertia_bias, n, "inertia_bias", dtype, device))
        self.theta_h = nn.Parameter(torch.zeros(n, 3, dtype=dtype, device=device))
        for name, shape in self.raw_shapes.items():
            setattr(self, name, nn.Parameter(torch.zeros((n,) + shape, dtype=dtype,
                                                         device=device)))
        self.projected_links: Tuple[int, ...] = ()
        eye = torch.eye(3, dtype=torch.float64).expand(n, 3, 3)
        self.set_values(torch.ones(n, dtype=torch.float64),
                        torch.zeros(n, 3, dtype=torch.float64), 0.01 * eye)

    @staticmethod
    def _bias(value: Union[float, Tensor], n: int, what: str, dtype: torch.dtype,
              device: Optional[Union[str, torch.device]]) -> Tensor:
        b = torch.as_tensor(value, dtype=torch.float64).detach().cpu()
        if b.ndim == 0:
            b = b.expand(n)
        if tuple(b.shape) != (n,) or not bool((torch.isfinite(b) & (b > 0)).all()):
            raise DiffneaError(f"{what} must be a positive finite float or ({n},) tensor")
        return b.clone().to(dtype=dtype, device=device)

    # -- forward map ---------------------------------------------------------------------
    @property
    def num_links(self) -> int:
        return int(self.theta_h.shape[0])

    @abc.abstractmethod
    def mass(self) -> Tensor:
        """Link masses (L,)."""

    @abc.abstractmethod
    def rotational_inertia(self) -> Tensor:
        """Rotational inertias (L, 3, 3) about the CoM, link-frame axes."""

    def forward(self) -> Tuple[Tensor, Tensor, Tensor]:
        """Return (mass (L,), com = θ_h / m (L, 3), inertia (L, 3, 3))."""
        mass = self.mass()
        return mass, self.theta_h / mass.unsqueeze(-1), self.rotational_inertia()

    # -- inversion -----------------------------------------------------------------------
    @abc.abstractmethod
    def _invert_mass(self, m: Tensor, b: Tensor) -> Tuple[Dict[str, Tensor], Tensor, Tensor]:
        """float64 masses → (raw values, mass actually represented, projected mask)."""

    @abc.abstractmethod
    def _invert_inertia(self, inertia: Tensor, b: Tensor) -> Tuple[Dict[str, Tensor], Tensor]:
        """float64 inertias → (raw values, projected mask)."""

    @torch.no_grad()
    def set_values(self, mass: ArrayLike, com: ArrayLike,
                   inertia: ArrayLike) -> "InertialParametrisation":
        """Set θ in place so that forward() returns these values (projected if inadmissible).

        Records the indices of projected links in ``projected_links``; returns ``self``.
        """
        m, c, inertia64 = _float64_inputs(mass, com, inertia, device=self.theta_h.device)
        if m.shape[0] != self.num_links:
            raise DiffneaError(f"expected values for {self.num_links} links, got {m.shape[0]}")
        raw_m, m_used, proj_m = self._invert_mass(m, self.mass_bias.to(torch.float64))
        raw_i, proj_i = self._invert_inertia(inertia64, self.inertia_bias.to(torch.float64))
        raw = {**raw_m, **raw_i, "theta_h": m_used.unsqueeze(-1) * c}
        for name, value in raw.items():
            if not bool(torch.isfinite(value).all()):   # guard: the maps above never do this
                raise DiffneaError(f"{self.kind}: inversion produced non-finite {name}")
            getattr(self, name).copy_(value)
        self.projected_links = tuple((proj_m | proj_i).nonzero().flatten().tolist())
        return self

    @classmethod
    def from_values(cls, mass: ArrayLike, com: ArrayLike, inertia: ArrayLike,
                    bias: Optional[float] = None) -> "InertialParametrisation":
        """Build the parametrisation whose forward() reproduces (mass, com, inertia).

        dtype/device follow ``mass`` (float64 for NumPy input).  ``bias=None`` chooses b per
        link relative to its scale (module docstring); a float sets it for every link.
        """
        dtype, device = _dtype_device(mass)
        m, _, inertia64 = _float64_inputs(mass, com, inertia, device=device)
        if bias is None:
            mass_bias = default_bias(m)
            inertia_bias = default_bias(inertia64.diagonal(dim1=-2, dim2=-1).sum(-1) / 3.0)
        else:
            mass_bias = inertia_bias = bias
        module = cls(m.shape[0], mass_bias=mass_bias, inertia_bias=inertia_bias,
                     dtype=dtype, device=device)
        return module.set_values(mass, com, inertia)

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, num_links={self.num_links}"


class _PositiveMass(InertialParametrisation):
    """m = θ_√m² + b (eq. 4, shared by symm, spd, tri, cov)."""

    def mass(self) -> Tensor:
        return self.theta_sqrt_m ** 2 + self.mass_bias

    def _invert_mass(self, m: Tensor, b: Tensor) -> Tuple[Dict[str, Tensor], Tensor, Tensor]:
        projected = ~(m > b)
        m = torch.where(projected, FLOOR * b, m)
        return {"theta_sqrt_m": torch.sqrt(m - b)}, m, projected


# ----------------------------------------------------------------------------- the five kinds
class NoStr(InertialParametrisation):
    """Eq. 3: unstructured mass θ_m and nine free inertia entries θ_IC1..9 (row-major).

    Raw parameters: ``theta_m`` (L,), ``theta_h`` (L, 3), ``theta_I`` (L, 9).  No constraint;
    only a mass ≤ 0 is projected at inversion (to 4 b) so that the initial CoM is defined.
    """

    kind = "nostr"
    raw_shapes = {"theta_m": (), "theta_I": (9,)}

    def mass(self) -> Tensor:
        return self.theta_m

    def rotational_inertia(self) -> Tensor:
        return self.theta_I.reshape(self.theta_I.shape[:-1] + (3, 3))

    def _invert_mass(self, m: Tensor, b: Tensor) -> Tuple[Dict[str, Tensor], Tensor, Tensor]:
        projected = ~(m > 0)
        m = torch.where(projected, FLOOR * b, m)
        return {"theta_m": m}, m, projected

    def _invert_inertia(self, inertia: Tensor, b: Tensor) -> Tuple[Dict[str, Tensor], Tensor]:
        return ({"theta_I": inertia.reshape(inertia.shape[0], 9)},
                torch.zeros(inertia.shape[0], dtype=torch.bool, device=inertia.device))


class Symm(_PositiveMass):
    """Eq. 4: m = θ_√m² + b, symmetric inertia from θ_IC1..6 = [Ixx, Ixy, Ixz, Iyy, Iyz, Izz].

    Raw parameters: ``theta_sqrt_m`` (L,), ``theta_h`` (L, 3), ``theta_I`` (L, 6).
    Guarantees m > 0 and I = Iᵀ, not I ≻ 0.
    """

    kind = "symm"
    raw_shapes = {"theta_sqrt_m": (), "theta_I": (6,)}

    def rotational_inertia(self) -> Tensor:
        return self.theta_I[..., _SYM_INDEX]

    def _invert_inertia(self, inertia: Tensor, b: Tensor) -> Tuple[Dict[str, Tensor], Tensor]:
        sym = _symmetrise(inertia)
        projected = _asymmetric(inertia)
        return {"theta_I": sym[..., _SYM_ROWS, _SYM_COLS]}, projected


class SPD(_PositiveMass):
    """Eqs. 5-6: I = L Lᵀ + b 1 with L lower triangular from θ_LI1..6 (diagonal θ1..3).

    Raw parameters: ``theta_sqrt_m`` (L,), ``theta_h`` (L, 3), ``theta_L`` (L, 6).
    Guarantees m > 0 and I ≻ 0 (eigenvalues ≥ b); the triangle inequality may fail (§3.3).
    """

    kind = "spd"
    raw_shapes = {"theta_sqrt_m": (), "theta_L": (6,)}

    def rotational_inertia(self) -> Tensor:
        return _cholesky_plus_bias(self.theta_L, self.inertia_bias)

    def _invert_inertia(self, inertia: Tensor, b: Tensor) -> Tuple[Dict[str, Tensor], Tensor]:
        sym = _symmetrise(inertia)
        lam, vec = torch.linalg.eigh(sym)
        projected = ~(lam[:, 0] > b) | _asymmetric(inertia)
        fixed = _reconstruct(vec, torch.where(lam > b.unsqueeze(-1), lam,
                                              FLOOR * b.unsqueeze(-1)))
        theta, projected = _cholesky_params(sym, fixed, projected, b, lambda m: m)
        return {"theta_L": theta}, projected


class Tri(_PositiveMass):
    """Eqs. 7-12: I = R diag(J1, J2, J3) Rᵀ (eq. 7), R = exp([θ_RAA]×) (eq. 9),
    J1 = θ_√J1² + b, J2 = θ_√J2² + b, α = π sigmoid(θ_a) (eq. 11) and J3 by eq. 10, evaluated
    as J3² = (J1 − J2)² + 4 J1 J2 sin²(α/2) (the same value, without cancellation).

    Raw parameters: ``theta_sqrt_m`` (L,), ``theta_h`` (L, 3), ``theta_raa`` (L, 3),
    ``theta_sqrt_J`` (L, 2) = [θ_√J1, θ_√J2], ``theta_a`` (L,).  R uses
    ``torch.linalg.matrix_exp`` (smooth at θ_RAA = 0).  Guarantees m > 0, J > 0 and the
    triangle inequality (eq. 8); J3 > 0 needs sin(α/2) > 0, i.e. θ_a above the sigmoid's
    underflow (≈ −88 in float32, −745 in float64; the inversion keeps |θ_a| ≤ 30).
    """

    kind = "tri"
    raw_shapes = {"theta_sqrt_m": (), "theta_raa": (3,), "theta_sqrt_J": (2,), "theta_a": ()}

    def principal_moments(self) -> Tensor:
        """(L, 3) principal moments [J1, J2, J3] (eqs. 10-11)."""
        j12 = self.theta_sqrt_J ** 2 + self.inertia_bias.unsqueeze(-1)
        j1, j2 = j12.unbind(-1)
        half_alpha = 0.5 * math.pi * torch.sigmoid(self.theta_a)
        j3 = torch.sqrt((j1 - j2) ** 2 + 4.0 * j1 * j2 * torch.sin(half_alpha) ** 2)
        return torch.stack([j1, j2, j3], -1)

    def rotation(self) -> Tensor:
        """(L, 3, 3) principal axes R = exp([θ_RAA]×) (eq. 9)."""
        return torch.linalg.matrix_exp(skew(self.theta_raa))

    def rotational_inertia(self) -> Tensor:
        return _reconstruct(self.rotation(), self.principal_moments())

    def _invert_inertia(self, inertia: Tensor, b: Tensor) -> Tuple[Dict[str, Tensor], Tensor]:
        sym = _symmetrise(inertia)
        lam, vec = torch.linalg.eigh(sym)
        slack = lam[:, 0] + lam[:, 1] - lam[:, 2]
        projected = ~((lam[:, 0] > b) & (slack > 0)) | _asymmetric(inertia)
        lam = torch.where(projected.unsqueeze(-1), _project_principal_moments(lam, b), lam)
        # J3 := the moment giving the best-conditioned angle α (|cos α| smallest).
        perms = torch.tensor([[1, 2, 0], [0, 2, 1], [0, 1, 2]], device=lam.device)
        trip = lam[:, perms]                                         # (L, 3 choices, 3)
        cos = ((trip[..., 0] ** 2 + trip[..., 1] ** 2 - trip[..., 2] ** 2)
               / (2.0 * trip[..., 0] * trip[..., 1]))
        perm = perms[cos.abs().argmin(-1)]                           # (L, 3)
        j = lam.gather(-1, perm)
        rot = vec.gather(-1, perm.unsqueeze(-2).expand(-1, 3, 3))
        rot = rot * torch.where(torch.linalg.det(rot) < 0, -1.0, 1.0)[:, None, None]
        # Flipping two axes leaves R J Rᵀ unchanged; pick the flip of largest trace, so the
        # rotation angle is ≤ 2π/3 (the four traces sum to 0) and the log map is well posed.
        flips = torch.tensor([[1., 1., 1.], [1., -1., -1.], [-1., 1., -1.], [-1., -1., 1.]],
                             dtype=rot.dtype, device=rot.device)
        best = (rot.diagonal(dim1=-2, dim2=-1) @ flips.T).argmax(-1)
        rot = rot * flips[best].unsqueeze(-2)
        j1, j2, j3 = j.unbind(-1)
        half_alpha = torch.atan2(torch.sqrt((j3 - j1 + j2) * (j3 + j1 - j2)),
                                 torch.sqrt((j1 + j2 - j3) * (j1 + j2 + j3)))
        p = half_alpha * (2.0 / math.pi)
        theta_a = torch.clamp(torch.log(p) - torch.log1p(-p), -THETA_A_MAX, THETA_A_MAX)
        return {"theta_raa": _log_so3(rot),
                "theta_sqrt_J": torch.sqrt(j[:, :2] - b.unsqueeze(-1)),
                "theta_a": theta_a}, projected


class Cov(_PositiveMass):
    """Eqs. 13-16: Σ = L Lᵀ + b 1 (L from θ_LΣ1..6, eq. 14), I = tr(Σ) 1 − Σ (eq. 15).

    Raw parameters: ``theta_sqrt_m`` (L,), ``theta_h`` (L, 3), ``theta_L`` (L, 6).
    Principal moments are J_i = σ_j + σ_k ≥ 2b with slack J_i + J_j − J_k = 2σ_k ≥ 2b, so
    m > 0, I ≻ 0 and the triangle inequality (eq. 8) hold.  Inverse: Σ = ½ tr(I) 1 − I (eq. 13).
    """

    kind = "cov"
    raw_shapes = {"theta_sqrt_m": (), "theta_L": (6,)}

    def covariance(self) -> Tensor:
        """(L, 3, 3) Σ_C = L Lᵀ + b 1 (eq. 14 and §3.5)."""
        return _cholesky_plus_bias(self.theta_L, self.inertia_bias)

    def rotational_inertia(self) -> Tensor:
        sigma = self.covariance()
        trace = sigma.diagonal(dim1=-2, dim2=-1).sum(-1)
        eye = torch.eye(3, dtype=sigma.dtype, device=sigma.device)
        return trace[:, None, None] * eye - sigma

    def _invert_inertia(self, inertia: Tensor, b: Tensor) -> Tuple[Dict[str, Tensor], Tensor]:
        sym = _symmetrise(inertia)
        lam, vec = torch.linalg.eigh(sym)
        sigma_min = 0.5 * (lam[:, 0] + lam[:, 1] - lam[:, 2])
        projected = ~((lam[:, 0] > b) & (sigma_min > b)) | _asymmetric(inertia)
        fixed = _reconstruct(vec, _project_principal_moments(lam, b))
        theta, projected = _cholesky_params(sym, fixed, projected, b, _covariance_of)
        return {"theta_L": theta}, projected


def _covariance_of(inertia: Tensor) -> Tensor:
    """Σ_C = ½ tr(I) 1 − I (eq. 13)."""
    eye = torch.eye(3, dtype=inertia.dtype, device=inertia.device)
    return 0.5 * inertia.diagonal(dim1=-2, dim2=-1).sum(-1)[:, None, None] * eye - inertia


def _cholesky_params(sym: Tensor, fixed: Tensor, projected: Tensor, b: Tensor,
                     to_factor: Callable[[Tensor], Tensor]) -> Tuple[Tensor, Tensor]:
    """θ (L, 6) of eq. 5 / 14 with L Lᵀ = to_factor(I) − b 1, I = ``sym`` or, for projected
    links, ``fixed``.  A link whose admissible-looking matrix is numerically not factorisable
    (eigenvalue within rounding of b) is projected too.  Returns (θ, projected mask)."""
    eye = torch.eye(3, dtype=sym.dtype, device=sym.device)
    shift = b[:, None, None] * eye
    target = torch.where(projected[:, None, None], fixed, sym)
    chol, info = torch.linalg.cholesky_ex(to_factor(target) - shift)
    failed = info != 0
    if bool(failed.any()):
        projected = projected | failed
        target = torch.where(projected[:, None, None], fixed, sym)
        chol = torch.linalg.cholesky(to_factor(target) - shift)
    return chol[..., _TRIL_ROWS, _TRIL_COLS], projected


_KINDS: Dict[str, type] = {cls.kind: cls for cls in (NoStr, Symm, SPD, Tri, Cov)}


def make_parametrisation(kind: str, mass: ArrayLike, com: ArrayLike, inertia: ArrayLike,
                         bias: Optional[float] = None) -> InertialParametrisation:
    """Parametrisation ``kind`` (one of PARAMETRISATIONS) initialised to the given values."""
    cls = _KINDS.get(str(kind).lower())
    if cls is None:
        valid = ", ".join(PARAMETRISATIONS)
        raise DiffneaError(f"unknown parametrisation {kind!r}; valid: {valid}")
    return cls.from_values(mass, com, inertia, bias=bias)
