"""Is a recorded pair complete? A pair is incomplete when its START has no END (or the other way
round), or when the samples of a robot do not reach the ends of its window [start, end]: they
start late or stop early (a recorder stopped or killed during it, a robot that stopped
publishing). Incomplete pairs are left out of a recording and each is named in one line.
Samples missing inside the window (a loaded machine drops some at 1 kHz) do not make a pair
incomplete."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

MIN_GAP = 0.1          # s: a stream this close to a pair's start and end covers it
GAP_PERIODS = 5.0      # ... as does one within this many of its median sample periods


@dataclass(frozen=True)
class IncompletePair:
    """A pair left out of a recording, and why (one phrase)."""

    trajectory_id: int
    kind: str
    start: Optional[float]
    end: Optional[float]
    reason: str

    def line(self) -> str:
        """One line for a person: which pair, when, and what is wrong with it."""
        def at(t: Optional[float]) -> str:
            return "?" if t is None else f"{t:.3f}"
        return (f"pair {self.trajectory_id} ({self.kind or '?'}, {at(self.start)}-{at(self.end)} "
                f"s) is incomplete: {self.reason}")


def gap_tolerance(t: np.ndarray) -> float:
    """How far from a pair's start and end the samples ``t`` of a stream may begin and end."""
    if len(t) < 2:
        return MIN_GAP
    return max(MIN_GAP, GAP_PERIODS * float(np.median(np.diff(t))))


def coverage_problem(t: np.ndarray, start: float, end: float, tolerance: float) -> Optional[str]:
    """Why the sorted sample times ``t`` (all within [start, end]) do not reach both ends of the
    window, or None when they begin and end within ``tolerance`` of them."""
    if len(t) == 0:
        return "no samples"
    if t[0] - start > tolerance:
        return f"starts {t[0] - start:.3f} s after the pair's start"
    if end - t[-1] > tolerance:
        return f"stops {end - t[-1]:.3f} s before the pair's end"
    return None
