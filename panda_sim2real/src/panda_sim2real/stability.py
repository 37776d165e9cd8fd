"""The physics rate at which a simulator's PID is stable on its own dynamics.

The PID trajectory controller computes its torque from the state of one physics step and holds it
over the step; the engine integrates semi-implicitly. Linearised about a configuration q (gravity
and the integral term are slow and leave out), one step of joint-space error e = q - q_ref is

    v+ = v + dt M(q)^-1 (-P e - D v),   e+ = e + dt v+

whose spectral radius must stay below 1. With the nominal URDF's guessed inertias (diag 0.1 kg m²)
the shipped gains are stable at 1 kHz; with inertias identified from a robot (much smaller at the
wrist and about the first axes) the derivative term is not: M^-1 D dt exceeds 2. This module finds
the lowest rate of a list at which the step is stable with a margin (stable at 1.25 x the step) on
every given configuration, so a simulator loaded with an identified model runs as fast as it can
and stays stable.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from panda_sim2real.errors import ConfigError
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot_config import PIDGains, RobotConfig

RATES = (1000.0, 2000.0, 4000.0, 8000.0)   # Hz, the candidates (1 kHz: the shipped simulator's)
MARGIN = 1.25                              # stable at MARGIN x the step


def mass_matrix(physics: object, q: np.ndarray) -> np.ndarray:
    """M(q) column by column from the engine's inverse dynamics (any engine of physics.py)."""
    dof = q.shape[0]
    zero = np.zeros(dof)
    bias = physics.inverse_dynamics(q, zero, zero)
    columns = [physics.inverse_dynamics(q, zero, np.eye(dof)[j]) - bias for j in range(dof)]
    return np.column_stack(columns)


def spectral_radius(mass: np.ndarray, gains: PIDGains, dt: float) -> float:
    """Spectral radius of the linearised PID step at ``dt`` (module docstring)."""
    dof = mass.shape[0]
    inv = np.linalg.inv(mass)
    kp, kd = inv @ np.diag(gains.p), inv @ np.diag(gains.d)
    eye = np.eye(dof)
    velocity = np.hstack([-dt * kp, eye - dt * kd])              # v+ from (e, v)
    error = np.hstack([eye, np.zeros((dof, dof))]) + dt * velocity  # e+ = e + dt v+
    return float(np.max(np.abs(np.linalg.eigvals(np.vstack([error, velocity])))))


def stable_physics_rate(config: RobotConfig, configurations: Iterable[np.ndarray],
                        limits: JointLimits | None = None,
                        rates: Sequence[float] = RATES, margin: float = MARGIN) -> float:
    """The lowest of ``rates`` at which ``config``'s PID step is stable at ``margin`` times the
    step on every configuration (positions [rad]); the config's own rate for a controller that
    is not a PID. ConfigError if none is, or without configurations."""
    from panda_sim2real.robot import SimulatedRobot

    if not isinstance(config.controller, PIDGains):
        return float(config.physics_rate)
    qs = [np.asarray(q, dtype=float) for q in configurations]
    if not qs:
        raise ConfigError("stable_physics_rate needs at least one configuration")
    robot = SimulatedRobot(config, limits or JointLimits.from_yaml())
    try:
        masses = [mass_matrix(robot.physics, q) for q in qs]
    finally:
        robot.close()
    for rate in sorted(rates):
        dt = margin / rate
        if all(spectral_radius(m, config.controller, dt) < 1.0 for m in masses):
            return float(rate)
    raise ConfigError(f"the simulator's PID is not stable on this model at {max(rates):g} Hz "
                      f"(with a margin of {margin:g}); check the URDF's inertials or the gains")
