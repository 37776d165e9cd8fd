"""Joint-space effort controllers: the simulator's PID and the robot's joint impedance.

Both map (position, velocity, reference position, reference velocity) to joint torques and are
used by :class:`panda_sim2real.robot.SimulatedRobot` through the same ``compute`` call.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from panda_sim2real.robot_config import ImpedanceGains, PIDGains


class EffortController(Protocol):
    def reset(self) -> None: ...

    def compute(self, pos: np.ndarray, vel: np.ndarray, pos_ref: np.ndarray,
                vel_ref: np.ndarray, gravity: np.ndarray, dt: float) -> np.ndarray: ...


class PIDController:
    """ros_control's effort JointTrajectoryController: tau = P e + I + D e_dot, with the integral
    term I = clamp(I + Ki e dt, +-i_clamp) and e_dot the velocity error. No gravity feed-forward."""

    needs_gravity = False

    def __init__(self, gains: PIDGains) -> None:
        self.gains = gains
        self._integral = np.zeros_like(gains.p)

    def reset(self) -> None:
        self._integral[:] = 0.0

    def compute(self, pos: np.ndarray, vel: np.ndarray, pos_ref: np.ndarray,
                vel_ref: np.ndarray, gravity: np.ndarray, dt: float) -> np.ndarray:
        g = self.gains
        error = pos_ref - pos
        self._integral = np.clip(self._integral + g.i * error * dt, -g.i_clamp, g.i_clamp)
        return g.p * error + self._integral + g.d * (vel_ref - vel)


class JointImpedanceController:
    """The Panda's internal joint impedance: tau = K (q_d - q) + D (qd_d - qd) + g(q)."""

    def __init__(self, gains: ImpedanceGains) -> None:
        self.gains = gains
        self.needs_gravity = gains.gravity_compensation

    def reset(self) -> None:
        pass

    def compute(self, pos: np.ndarray, vel: np.ndarray, pos_ref: np.ndarray,
                vel_ref: np.ndarray, gravity: np.ndarray, dt: float) -> np.ndarray:
        g = self.gains
        tau = g.stiffness * (pos_ref - pos) + g.damping * (vel_ref - vel)
        return tau + gravity if g.gravity_compensation else tau


def make_controller(gains: PIDGains | ImpedanceGains) -> PIDController | JointImpedanceController:
    if isinstance(gains, PIDGains):
        return PIDController(gains)
    return JointImpedanceController(gains)
