"""When the compliant manager publishes one stream's whole-robot arrays (``~publish_rate``).

Sampling the latest per-joint states with a timer at the rate the simulation publishes them
loses every timer period that happens to contain no new sample and merges the two samples of the
next: the joints' messages come from another process, a few at a time, and whenever they arrive
in bursts (a loaded machine, a simulation catching up with the wall clock) the arrays ran at half
the rate (two frames per timer period: 50 Hz for 100 Hz) or less. Here a *frame* (every joint
reported since the last publication) is published when it completes; a rate limit on a grid of
``period`` keeps the average at most ``1 / period`` yet lets up to ``burst`` late frames through
back to back; a frame that does not complete within a period (a joint that stopped or reports
more slowly) is published as it is, by the node's timer.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional

from compliant_actuator_gazebo.errors import CompliantError

BURST = 4
"""Frames a stream may publish back to back after arriving late (a catch-up after a stall)."""


class StreamSchedule:
    """The publication times of one stream's arrays; times are the node's clock in seconds."""

    def __init__(self, joints: Iterable[str], period: float, burst: int = BURST) -> None:
        if not (math.isfinite(period) and period > 0):
            raise CompliantError(f"period must be a finite number > 0, got {period}")
        self.joints = frozenset(joints)
        self.period = period
        self.burst = burst
        self._fresh: set[str] = set()
        self._first: Optional[float] = None     # arrival of the oldest unpublished sample
        self._next = -math.inf                  # the rate grid: the next publication's slot

    def sample(self, joint: str, now: float) -> None:
        """A new sample of ``joint`` arrived."""
        if not self._fresh:
            self._first = now
        self._fresh.add(joint)

    def due(self, now: float) -> bool:
        """Publish now: a complete frame (or one older than a period) whose slot has come (half
        a period of jitter allowed)."""
        if not self._fresh:
            return False
        if self._next - now > 2.0 * self.period:          # the clock went back (a reset)
            self._next = now
        complete = self._fresh >= self.joints
        overdue = now - self._first >= self.period
        return (complete or overdue) and now >= self._next - 0.5 * self.period

    def published(self, now: float) -> None:
        """The arrays were published at ``now``."""
        self._fresh.clear()
        self._first = None
        self._next = max(self._next, now - self.burst * self.period) + self.period
