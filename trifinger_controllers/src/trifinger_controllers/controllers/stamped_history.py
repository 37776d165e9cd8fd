"""A ring buffer of the controller's recent values by time, to match a camera image with what
the controller did when it was taken (the image arrives 90-190 ms late, paper 004 §III)."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np


class StampedHistory:
    """The last ``size`` records of named arrays (shapes given by keyword), each with its time."""

    def __init__(self, size: int, **shapes: Tuple[int, ...]) -> None:
        self.size = int(size)
        self.times = np.full(self.size, -np.inf)
        self.values: Dict[str, np.ndarray] = {name: np.zeros((self.size,) + tuple(shape))
                                              for name, shape in shapes.items()}
        self._count = 0

    def record(self, t: float, **values: np.ndarray) -> None:
        """Keep ``values`` (one per name given at construction) as the record at time ``t``."""
        k = self._count % self.size
        self.times[k] = t
        for name, value in values.items():
            self.values[name][k] = value
        self._count += 1

    def index_at(self, stamp: float, tolerance: float) -> Optional[int]:
        """Index of the record closest to ``stamp`` if within ``tolerance`` [s], else None."""
        k = int(np.argmin(np.abs(self.times - stamp)))
        return k if abs(self.times[k] - stamp) <= tolerance else None
