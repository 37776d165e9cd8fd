"""What ``trifinger_sim`` applies when its torque commands stop (a killed or hung controller):
after ``timeout_steps`` simulated steps without a new torque command it holds the fingers where
they are, with trifinger_simulation's joint PD law (the position command's gains) around the
positions at the timeout plus the last command, clipped to the torque limit, as feed-forward:

    tau = clip(tau_last) + kp (q_hold - q) - kd qdot

Why this law: on the robot, robot_interfaces' real-time backend repeats the last action when no
new one arrives in time (robot_fingers allows unlimited repetitions), and its driver turns the
motors off (zero torque) only when it shuts down. Neither is safe here. The last command alone is
an open-loop torque computed for a state long gone (in trifinger_simulation it swung the fingers
by up to 1.3 rad within 3 s and threw a lifted cube); zero torque or pure damping lets the
fingers fall and drops a lifted cube; the PD alone holds the fingers but releases the grip (the
squeeze was in the last torque), so a lifted cube falls too. With the last torque as feed-forward
the grip is kept and the PD bounds the drift to about |tau_last| / kp (0.397 / 9 = 0.044 rad at
most): a cube lifted by CPC, CIC or MP stayed within 1.3 mm for 3 s and the joints within
0.021 rad (README, "Command timeout"). A position command is already a
closed-loop hold of its target and is not timed out."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from trifinger_controllers.types import TORQUE_LIMIT, RobotState
from trifinger_controllers.errors import TrifingerError

HOLD = "hold"
RESUME = "resume"


@dataclass(frozen=True)
class Hold:
    """The hold begun at ``step`` because the command that arrived at ``command_step`` went
    stale: PD target ``position`` (the joints then) and the ``feedforward`` torque."""

    position: np.ndarray
    feedforward: np.ndarray
    step: int
    command_step: int

    def torque(self, kp: np.ndarray, kd: np.ndarray, position: np.ndarray,
               velocity: np.ndarray) -> np.ndarray:
        """The hold law's torque for the joint ``position`` and ``velocity`` (unclipped)."""
        return self.feedforward + kp * (self.position - position) - kd * velocity


class CommandWatchdog:
    """Decides at every step whether the newest torque command is still fresh or the fingers are
    to be held; counts the holds."""

    def __init__(self, timeout_steps: int) -> None:
        if timeout_steps < 1:
            raise TrifingerError(f"timeout_steps must be >= 1, got {timeout_steps}")
        self.timeout_steps = int(timeout_steps)
        self.hold: Optional[Hold] = None
        self.last: Optional[Hold] = None       # the newest hold, also once it has ended
        self.holds = 0

    def update(self, robot: RobotState, command_step: int,
               torque: Optional[np.ndarray]) -> Optional[str]:
        """Update for the step of ``robot`` given the newest command (arrived at ``command_step``;
        ``torque`` None for a position command, which never goes stale). Returns HOLD when a hold
        begins, RESUME when a newer command ends one, else None."""
        stale = torque is not None and robot.step - command_step > self.timeout_steps
        if stale:
            if self.hold is not None and self.hold.command_step == command_step:
                return None
            self.hold = Hold(np.array(robot.position, dtype=float),
                             np.clip(np.asarray(torque, dtype=float), -TORQUE_LIMIT, TORQUE_LIMIT),
                             robot.step, command_step)
            self.last = self.hold
            self.holds += 1
            return HOLD
        if self.hold is not None:
            self.hold = None
            return RESUME
        return None


@dataclass
class HoldLog:
    """When to log the hold: a line whenever holding differs from what the last line said, at
    most one line per ``period`` wall seconds. The last line thus tells the current state within
    a period, and a flapping command stream gives one line a second, not one per hold."""

    period: float = 1.0
    clock: Callable[[], float] = time.monotonic
    holding: bool = False                # what the last line said
    holds: int = 0                       # holds counted when the last line was logged
    _last: float = field(default=-float("inf"))

    def due(self, holding: bool, holds: int) -> Optional[int]:
        """None, or the number of holds since the last line when a line is due now."""
        if holding == self.holding:
            return None
        now = self.clock()
        if now - self._last < self.period:
            return None
        since = holds - self.holds
        self.holding, self.holds, self._last = holding, holds, now
        return since
