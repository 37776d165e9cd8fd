"""Random initialisation of the DiffNEA parametrisations (paper 002 §4.1).

Paper 002 §4.1 trains every model from a *random initialisation*, with 5 seeds ("which affects
the random initialization"), but gives no distribution. We draw the raw parameters θ of each
parametrisation the way the authors' released implementation (facebookresearch/
differentiable-robot-model, ``rigid_body_params.py``) does when no initial value is given,
every draw independent per link, from a seeded ``torch.Generator``:

============ ============================================================ =====================
kind         raw parameters θ (eq.)                                        distribution
============ ============================================================ =====================
all          CoM c (learnt as θ_h = m c, eq. 3)                            N(0, 0.1²) m per axis
nostr        θ_m (eq. 3)                                                   U(0, 1) kg
             θ_IC1..9 (eq. 3)                                              N(0, 0.1²)
symm         θ_√m (eq. 4), m = θ² + b                                      N(0, 1)
             θ_IC1..6 (eq. 4)                                              N(0, 0.01²)
spd, cov     θ_√m; θ_LI1..6 (eq. 5) / θ_LΣ1..6 (eq. 14)                    N(0, 1); N(0, 0.01²)
tri          θ_√m; θ_RAA (eq. 9); θ_√J1, θ_√J2 (eq. 11); θ_a (eq. 11)      N(0, 1); N(0, 0.01²);
                                                                           N(0, 0.1²); N(0, 0.01²)
============ ============================================================ =====================

``draws="l4dc"`` takes instead the classes that the release's L4DC configurations name
(``conf/torch_robot_model_learnable_l4dc_{no_,}constraints.yaml``, module
``rigid_body_parametrizations.py``): NoStr's nine entries θ_IC ~ N(0, 1) (``NoStructureNet``'s
default), and the constrained masses θ_√m ~ U(0, 1) (``PositiveMassValue``); the rest as above.
Both are the authors'; the table's epoch ordering is compared under both (README).

The viscous joint damping (learnt with every model, paper §4.2) starts at ``MIN_DAMPING`` on
every joint rather than at the URDF's value, so no ground-truth value enters a random start.
By construction (paper §3) a random Tri or Cov start is physically consistent, an SPD start has
m > 0 and I ≻ 0, and NoStr / Symm starts need not be consistent.
"""
from __future__ import annotations

import torch

from diffnea_ros.errors import DiffneaError
from diffnea_ros.learnable import MIN_DAMPING, LearnableDynamics
from diffnea_ros.parametrisation import InertialParametrisation

COM_STD = 0.1           # [m]
SQRT_MASS_STD = 1.0     # θ_√m
NOSTR_INERTIA_STD = 0.1
INERTIA_STD = 0.01      # θ_IC (symm), θ_L (spd, cov), θ_RAA and θ_a (tri)
SQRT_J_STD = 0.1        # θ_√J1, θ_√J2 (tri)

# (raw parameter, "normal" or "uniform", scale) per kind; θ_h follows from the mass and the CoM.
RANDOM_RAW: dict[str, tuple[tuple[str, str, float], ...]] = {
    "nostr": (("theta_m", "uniform", 1.0), ("theta_I", "normal", NOSTR_INERTIA_STD)),
    "symm": (("theta_sqrt_m", "normal", SQRT_MASS_STD), ("theta_I", "normal", INERTIA_STD)),
    "spd": (("theta_sqrt_m", "normal", SQRT_MASS_STD), ("theta_L", "normal", INERTIA_STD)),
    "tri": (("theta_sqrt_m", "normal", SQRT_MASS_STD), ("theta_raa", "normal", INERTIA_STD),
            ("theta_sqrt_J", "normal", SQRT_J_STD), ("theta_a", "normal", INERTIA_STD)),
    "cov": (("theta_sqrt_m", "normal", SQRT_MASS_STD), ("theta_L", "normal", INERTIA_STD)),
}
L4DC_NOSTR_INERTIA_STD = 1.0
_L4DC_SQRT_MASS = ("theta_sqrt_m", "uniform", 1.0)
RANDOM_RAW_L4DC: dict[str, tuple[tuple[str, str, float], ...]] = {
    "nostr": (("theta_m", "uniform", 1.0), ("theta_I", "normal", L4DC_NOSTR_INERTIA_STD)),
    **{kind: (_L4DC_SQRT_MASS,) + spec[1:] for kind, spec in RANDOM_RAW.items() if kind != "nostr"},
}
DRAWS = {"released": RANDOM_RAW, "l4dc": RANDOM_RAW_L4DC}
#: what each set of draws is, for reports
DRAW_SOURCES = {"released": "released code", "l4dc": "L4DC configurations (--draws l4dc)"}


@torch.no_grad()
def randomise_parametrisation(parametrisation: InertialParametrisation,
                              generator: torch.Generator,
                              draws: str = "released") -> InertialParametrisation:
    """Overwrite the raw parameters θ of ``parametrisation`` in place with a random draw of
    ``draws`` (module docstring); returns it."""
    if draws not in DRAWS:
        raise DiffneaError(f"unknown random draws {draws!r}: expected one of {', '.join(DRAWS)}")
    spec = DRAWS[draws].get(parametrisation.kind)
    if spec is None:
        raise DiffneaError(f"no random initialisation for parametrisation "
                           f"{parametrisation.kind!r}")
    for name, law, scale in spec:
        param = getattr(parametrisation, name)
        draw = torch.empty(param.shape, dtype=torch.float64)
        if law == "uniform":
            draw.uniform_(0.0, scale, generator=generator)
        else:
            draw.normal_(0.0, scale, generator=generator)
        param.copy_(draw.to(param.dtype))
    com = torch.empty(parametrisation.theta_h.shape, dtype=torch.float64).normal_(
        0.0, COM_STD, generator=generator)
    parametrisation.theta_h.copy_((parametrisation.mass().double().unsqueeze(-1) * com)
                                  .to(parametrisation.theta_h.dtype))
    parametrisation.projected_links = ()
    return parametrisation


def randomise_dynamics(dynamics: LearnableDynamics, seed: int,
                       draws: str = "released") -> LearnableDynamics:
    """Random start of a :class:`LearnableDynamics` for ``seed``: random θ of its
    parametrisation (all learnable links, ``draws`` of :data:`DRAWS`) and damping
    ``MIN_DAMPING``; returns it."""
    generator = torch.Generator().manual_seed(int(seed))
    randomise_parametrisation(dynamics.parametrisation, generator, draws)
    with torch.no_grad():
        damping = torch.full_like(dynamics.raw_damping, MIN_DAMPING)
        dynamics.raw_damping.copy_(damping + torch.log(-torch.expm1(-damping)))
    return dynamics
