"""Link-side torques of a real harmonic drive beyond Gaz et al.'s sigmoid friction (issue 38).

The torque sensor sits between the drive and the link, so what the link receives is the sensed
joint torque tau_J less every loss on the link side of the sensor:

    tau_link = tau_J - s_T(t) m(q) [tau_f(qd) + tau_s(qd) + tau_p(z) + tau_l(tau_J, qd)]
                     - tau_r(q) - tau_c(q)

  tau_f  Gaz et al.'s sigmoid (friction.py), the part the identifier models
  tau_s  Stribeck excess: stiction exp(-(qd / v_s)^2) tanh(10 qd / v_s)
  tau_p  presliding hysteresis, a Dahl bristle z' = qd (1 - sign(qd) z / z_max),
         tau_p = torque_p z / z_max (integrated implicitly, stable at any step)
  tau_l  load-dependent friction: coefficient |tau_J| tanh(qd / v_l)
  s_T    thermal drift: 1 + kappa rise (1 - exp(-t / time_constant))
  m      position-dependent friction: 1 + modulation sin(N q + phase)
  tau_r  torque ripple: ripple sin(2 N q + phase)
  tau_c  cable harness: stiffness (q - neutral)

Parameters: unmodelled_config.py (model); state: :class:`DriveState` (data), as in Pinocchio.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from panda_sim2real.friction import sigmoid_friction
from panda_sim2real.robot_config import FrictionParams
from panda_sim2real.unmodelled_config import (CableParams, HarmonicDriveParams, LoadFrictionParams,
                                              StribeckParams, ThermalDriftParams, UnmodelledEffects)


def stribeck_excess(p: StribeckParams, qd: np.ndarray) -> np.ndarray:
    """Friction above the Coulomb level at low speed [N m]; 0 at rest and at speed."""
    return p.stiction * np.exp(-(qd / p.stribeck_velocity) ** 2) * np.tanh(10.0 * qd / p.stribeck_velocity)


def presliding_step(p: StribeckParams, z: np.ndarray, qd: np.ndarray, dt: float) -> np.ndarray:
    """The bristle deflection after ``dt``: implicit Euler of z' = qd (1 - sign(qd) z / z_max),
    which keeps |z| <= z_max."""
    return (z + qd * dt) / (1.0 + np.abs(qd) * dt / p.presliding_displacement)


def presliding_torque(p: StribeckParams, z: np.ndarray) -> np.ndarray:
    return p.presliding_torque * z / p.presliding_displacement


def load_friction(p: LoadFrictionParams, tau_j: np.ndarray, qd: np.ndarray) -> np.ndarray:
    return p.coefficient * np.abs(tau_j) * np.tanh(qd / p.velocity_scale)


def thermal_factor(p: ThermalDriftParams, t: float) -> np.ndarray:
    """The friction's factor after ``t`` seconds of the session (1 when cold)."""
    return 1.0 + p.friction_per_kelvin * p.temperature_rise * (1.0 - np.exp(-max(t, 0.0) / p.time_constant))


def friction_modulation(p: HarmonicDriveParams, q: np.ndarray) -> np.ndarray:
    return 1.0 + p.friction_modulation * np.sin(p.gear_ratio * q + p.phase)


def torque_ripple(p: HarmonicDriveParams, q: np.ndarray) -> np.ndarray:
    return p.ripple * np.sin(2.0 * p.gear_ratio * q + p.phase)


def cable_torque(p: CableParams, q: np.ndarray) -> np.ndarray:
    return p.stiffness * (q - p.neutral)


@dataclass
class DriveState:
    """The drive's memory: the presliding bristle deflection [rad] per joint."""

    bristle: np.ndarray


class DriveEffects:
    """The link-side losses of one robot (see the module docstring)."""

    def __init__(self, effects: UnmodelledEffects, friction: Optional[FrictionParams], dof: int) -> None:
        self.effects = effects
        self.friction = friction
        self.state = DriveState(np.zeros(dof))

    def reset(self) -> None:
        self.state.bristle = np.zeros_like(self.state.bristle)

    def static_torque(self, q: np.ndarray) -> np.ndarray:
        """The losses at rest at ``q`` (ripple and cables; friction is 0 at rest) [N m]."""
        e, total = self.effects, np.zeros_like(q)
        if e.harmonic_drive is not None:
            total = total + torque_ripple(e.harmonic_drive, q)
        if e.cables is not None:
            total = total + cable_torque(e.cables, q)
        return total

    def friction_torque(self, t: float, q: np.ndarray, qd: np.ndarray, tau_j: np.ndarray) -> np.ndarray:
        """All friction on the link side of the sensor now [N m] (the sigmoid included)."""
        e = self.effects
        total = sigmoid_friction(self.friction, qd) if self.friction is not None else np.zeros_like(qd)
        if e.stribeck is not None:
            total = total + stribeck_excess(e.stribeck, qd) + presliding_torque(e.stribeck, self.state.bristle)
        if e.load_friction is not None:
            total = total + load_friction(e.load_friction, tau_j, qd)
        if e.harmonic_drive is not None:
            total = total * friction_modulation(e.harmonic_drive, q)
        if e.thermal_drift is not None:
            total = total * thermal_factor(e.thermal_drift, t)
        return total

    def losses(self, t: float, q: np.ndarray, qd: np.ndarray, tau_j: np.ndarray, dt: float) -> np.ndarray:
        """tau_J - tau_link for this physics step [N m]; advances the bristles by ``dt``."""
        e = self.effects
        total = self.friction_torque(t, q, qd, tau_j) + self.static_torque(q)
        if e.stribeck is not None:
            self.state.bristle = presliding_step(e.stribeck, self.state.bristle, qd, dt)
        return total
