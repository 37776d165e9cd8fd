"""Differentiable recursive Newton-Euler identification (Sutanto et al. 2020, paper 002): the
robot model apart from the pure algorithms (as in Pinocchio), the physically consistent
parametrisations, identification from pair bags, the identifier node and the export to the
simulator. The names below load their module on first use."""
from sim2real_checks import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "inverse_dynamics": ["rnea"],
    "learnable": ["LearnableDynamics"],
    "model": ["RigidBodyModel"],
    "plausibility": ["PANDA_BOUNDS_FILE", "PlausibilityBounds", "check_plausibility"],
    "prior": ["InertialPrior"],
})
