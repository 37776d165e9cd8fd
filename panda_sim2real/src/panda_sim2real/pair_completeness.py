"""Is a recorded pair complete? A pair is incomplete when its START has no END (or the other way
round), or when the samples of a robot do not cover its window [start, end]: they start late,
stop early or leave a gap (a recorder stopped or killed during it, a robot that stopped
publishing). Incomplete pairs are left out of a recording and each is named in one line."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

MIN_GAP = 0.1          # s: a gap in a stream shorter than this is never a hole
GAP_PERIODS = 5.0      # ... nor one shorter than this many of the stream's median periods


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
    """The longest spacing of samples that is not a hole in a stream sampled at times ``t``."""
    if len(t) < 2:
        return MIN_GAP
    return max(MIN_GAP, GAP_PERIODS * float(np.median(np.diff(t))))


def coverage_problem(t: np.ndarray, start: float, end: float, tolerance: float) -> Optional[str]:
    """Why the sorted sample times ``t`` (all within [start, end]) do not cover the window, or
    None when every spacing, including those to start and end, is at most ``tolerance``."""
    if len(t) == 0:
        return "no samples"
    if t[0] - start > tolerance:
        return f"starts {t[0] - start:.3f} s after the pair's start"
    if end - t[-1] > tolerance:
        return f"stops {end - t[-1]:.3f} s before the pair's end"
    if len(t) > 1:
        spacing = np.diff(t)
        k = int(np.argmax(spacing))
        if spacing[k] > tolerance:
            return f"has no sample for {spacing[k]:.3f} s after {t[k]:.3f} s"
    return None
