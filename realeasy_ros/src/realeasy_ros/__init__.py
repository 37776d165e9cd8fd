"""Realeasy: sim-to-real data path and residual learning for the Franka Emika Panda."""
from sim2real_checks import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "model": ["RealeasyModel", "load_model"],
    "networks": ["REALTIME", "ModelSpec", "RealtimeRealeasy", "build_network"],
    "realtime": ["RealtimeResidual"],
    "residual_stream": ["ResidualStream"],
})
