"""The reflexes a robot's FCI has and franky-sim's server lacks (issue 39), checked once per 1 ms
cycle of a motion by the stand-in served over FCI (fci_standin.py):

- ``communication_constraints_violation`` after LOST_CYCLES_LIMIT consecutive cycles without a
  command from the client (the FCI's documented behaviour: "If the robot fails to receive a
  command packet in time for 20 steps in a row, this error is triggered", Polymetis'
  troubleshooting of the Franka FCI);
- ``controller_torque_discontinuity``: a commanded torque that changes faster than the torque
  rate limit (1000 N m/s, config/fci_bridge.yaml's ``max_delta_tau`` per cycle) allows for the
  cycles since the last command;
- ``joint_position_limits_violation`` and ``joint_velocity_violation``: the measured joint
  position outside its limits, or its speed above the velocity limit;
- ``joint_motion_generator_position_limits_violation``, ``..._velocity_limits_violation``,
  ``..._velocity_discontinuity`` (the acceleration limit) and ``..._acceleration_discontinuity``
  (the jerk limit) for the commands of joint position and velocity motion generators, by finite
  differences of consecutive commands.

The indices are libfranka's ``Error`` enum (research_interface/robot/error.h), the order of the
41 flags of the robot state's ``errors`` and ``reflex_reason``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from panda_sim2real import JointLimits

TICK = 0.001                     # s: one FCI cycle
LOST_CYCLES_LIMIT = 20           # consecutive cycles without a command before the robot aborts
TORQUE_RATE_LIMIT = 1.0          # N m per cycle (1000 N m/s)
TOLERANCE = 1.001                # relative slack on every limit (floating point, not physics)
ERROR_COUNT = 41                 # flags in libfranka's robot state
ERROR_INDEX = {
    "joint_position_limits_violation": 0,
    "joint_velocity_violation": 3,
    "joint_motion_generator_position_limits_violation": 12,
    "joint_motion_generator_velocity_limits_violation": 13,
    "joint_motion_generator_velocity_discontinuity": 14,
    "joint_motion_generator_acceleration_discontinuity": 15,
    "communication_constraints_violation": 25,
    "controller_torque_discontinuity": 32,
}
MODES = ("torque", "position", "velocity", "other")


def error_flags(names: tuple[str, ...]) -> tuple[bool, ...]:
    """The 41 flags of a robot state with the named errors set."""
    active = {ERROR_INDEX[name] for name in names}
    return tuple(i in active for i in range(ERROR_COUNT))


@dataclass
class ReflexMonitor:
    """The checks of one motion; :meth:`start` at each new motion, :meth:`cycle` once per 1 ms."""

    limits: JointLimits
    torque_rate_limit: float = TORQUE_RATE_LIMIT
    lost_cycles_limit: int = LOST_CYCLES_LIMIT
    _missed: int = 0
    _last_torque: Optional[np.ndarray] = None
    _commands: list = field(default_factory=list)    # the last consecutive generator commands

    def start(self) -> None:
        self._missed, self._last_torque, self._commands = 0, None, []

    def cycle(self, mode: str, new_command: bool, command: Optional[np.ndarray],
              q: np.ndarray, dq: np.ndarray) -> Optional[str]:
        """The error this cycle raises, or None. ``mode``: one of MODES; ``command``: the
        commanded torque (torque), position (position) or velocity (velocity) when
        ``new_command``; ``q``, ``dq``: the measured joint state."""
        limits = self.limits
        if np.any(q < limits.position_min - 1e-9) or np.any(q > limits.position_max + 1e-9):
            return "joint_position_limits_violation"
        if np.any(np.abs(dq) > TOLERANCE * limits.velocity):
            return "joint_velocity_violation"
        if not new_command:
            self._missed += 1
            self._commands = []            # finite differences need consecutive commands
            return ("communication_constraints_violation"
                    if self._missed >= self.lost_cycles_limit else None)
        cycles, self._missed = self._missed + 1, 0
        command = np.asarray(command, dtype=float)
        if mode == "torque":
            last, self._last_torque = self._last_torque, command
            if last is not None and np.any(np.abs(command - last)
                                           > TOLERANCE * cycles * self.torque_rate_limit):
                return "controller_torque_discontinuity"
            return None
        if mode not in ("position", "velocity"):
            return None
        self._commands = (self._commands + [command])[-4:]
        return self._generator_error(mode)

    def _generator_error(self, mode: str) -> Optional[str]:
        """Position, velocity, acceleration and jerk of consecutive generator commands."""
        limits, history = self.limits, np.array(self._commands)
        if mode == "position":
            q_c = history[-1]
            if np.any(q_c < limits.position_min) or np.any(q_c > limits.position_max):
                return "joint_motion_generator_position_limits_violation"
            derivatives = [np.diff(history, n, axis=0) / TICK ** n for n in (1, 2, 3)]
        else:
            derivatives = [history] + [np.diff(history, n, axis=0) / TICK ** n for n in (1, 2)]
        names = ("joint_motion_generator_velocity_limits_violation",
                 "joint_motion_generator_velocity_discontinuity",
                 "joint_motion_generator_acceleration_discontinuity")
        for value, limit, name in zip(derivatives, (limits.velocity, limits.acceleration, limits.jerk), names):
            if len(value) and np.any(np.abs(value[-1]) > TOLERANCE * limit):
                return name
        return None
