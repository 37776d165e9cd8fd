"""The robot's clock mapped to the host's (ROS) clock.

libfranka stamps every robot state with the robot's own time (1 ms ticks since it booted); ROS
messages need host time. Each state arrives at the host some delay after the robot stamped it,
so host_arrival - robot_time = offset + delay with delay >= 0. The smallest such difference seen
is the best estimate of the offset (the state that arrived fastest); the estimate may rise by at
most ``drift`` seconds per second, so that a slowly drifting robot clock is followed while a
late-arriving burst of states never moves the stamps. A robot clock that jumps backwards (the
robot, or the stand-in, restarted) starts a new estimate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

DEFAULT_DRIFT = 1e-4      # s/s: 100 ppm, far above a quartz clock's drift


@dataclass
class RobotClock:
    """Maps robot time [s] to host time [s] (see the module docstring)."""

    drift: float = DEFAULT_DRIFT
    offset: Optional[float] = None          # host - robot [s]; None before the first state
    _last_robot_time: float = -math.inf

    def observe(self, robot_time: float, host_arrival: float) -> float:
        """Take one state's robot time and host arrival time; return its host stamp."""
        if robot_time < self._last_robot_time or self.offset is None:
            self.offset = host_arrival - robot_time
        else:
            allowed = self.offset + self.drift * (robot_time - self._last_robot_time)
            self.offset = min(allowed, host_arrival - robot_time)
        self._last_robot_time = robot_time
        return robot_time + self.offset

    def to_host(self, robot_time: float) -> float:
        """Host time of a robot time (ValueError before the first state)."""
        if self.offset is None:
            raise ValueError("no robot state seen yet: the robot clock is unknown")
        return robot_time + self.offset

    def to_robot(self, host_time: float) -> float:
        """Robot time of a host time (ValueError before the first state)."""
        if self.offset is None:
            raise ValueError("no robot state seen yet: the robot clock is unknown")
        return host_time - self.offset
