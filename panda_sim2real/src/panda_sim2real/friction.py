"""Joint friction of the Franka Emika Panda as identified by Gaz et al. (RA-L 2019).

    tau_f(qd) = phi1 / (1 + exp(-phi2 (qd + phi3))) - phi1 / (1 + exp(-phi2 phi3))

an asymmetric sigmoid with tau_f(0) = 0 that saturates at Coulomb-like levels. In their model it
enters the measured joint torque: tau_J = M(q) qdd + C(q, qd) qd + g(q) + tau_f(qd).
"""
from __future__ import annotations

import numpy as np

from panda_sim2real.robot_config import FrictionParams


def sigmoid_friction(params: FrictionParams, qd: np.ndarray) -> np.ndarray:
    """Friction torque [N m] at joint velocities ``qd`` [rad/s] (any leading shape, last = joints)."""
    qd = np.asarray(qd, dtype=float)
    moving = params.phi1 / (1.0 + np.exp(-params.phi2 * (qd + params.phi3)))
    at_rest = params.phi1 / (1.0 + np.exp(-params.phi2 * params.phi3))
    return moving - at_rest
