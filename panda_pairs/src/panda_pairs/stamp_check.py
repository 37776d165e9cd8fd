"""How far a stream of stamped messages has got, by its header stamps checked against the time
they were received (the receiver's ROS time): a stamp ahead of the receive clock by more than a
tolerance, or behind a stamp already taken, is a jump. It is counted and does not move the
stream on, so one future-stamped message cannot end a trajectory early (the pair runner)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

AHEAD = "ahead"            # stamp later than the receive time + tolerance
BACKWARDS = "backwards"    # stamp earlier than the latest stamp taken
JUMPS = (AHEAD, BACKWARDS)


@dataclass
class StampCheck:
    """Progress of one stream: ``latest`` is the latest plausible stamp [s] (None before the
    first); ``jumps`` counts the implausible ones by kind (AHEAD, BACKWARDS)."""

    tolerance: float
    latest: Optional[float] = None
    jumps: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JUMPS, 0))

    def __post_init__(self) -> None:
        if not self.tolerance >= 0.0:
            raise ValueError(f"stamp tolerance must be >= 0 s, got {self.tolerance}")

    def observe(self, stamp: float, received: float) -> Optional[str]:
        """Take a message stamped ``stamp`` that arrived at ``received`` (both ROS time [s]):
        None if plausible (it becomes ``latest``), else the kind of jump (counted, ignored)."""
        if stamp > received + self.tolerance:
            kind = AHEAD
        elif self.latest is not None and stamp < self.latest:
            kind = BACKWARDS
        else:
            self.latest = stamp
            return None
        self.jumps[kind] += 1
        return kind

    def past(self, when: float) -> bool:
        """Has a plausible stamp at or after ``when`` been received?"""
        return self.latest is not None and self.latest >= when

    @property
    def jump_count(self) -> int:
        return sum(self.jumps.values())
