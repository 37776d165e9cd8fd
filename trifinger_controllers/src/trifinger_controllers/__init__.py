"""Structured TriFinger cube policies (Funk et al. 2021, paper 004): the controllers (MP-PG,
CPC-TG, CIC-CG), perception, the simulated platform, Bayesian optimisation and residual policy
learning. The names below load their module on first use."""
from sim2real_checks import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "aligned": ["AlignedController"],
    "controllers": ["CONTROLLERS", "default_grasp", "make_controller"],
    "controllers.base": ["Controller"],
    "cube": ["IDENTITY"],
    "evaluation": ["episode_specs", "evaluate", "run_episode"],
    "kinematics": ["FingerKinematics"],
    "platform": ["SimulatedPlatform"],
    "sim_options": ["SimOptions", "add_arguments", "from_arguments"],
    "task": ["RESTING_HEIGHT"],
    "types": ["CubePose", "Observation", "PHYSICS_RATE"],
})
