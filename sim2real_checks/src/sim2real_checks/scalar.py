"""The check of one number (std_msgs/Float64 commands): finite and within its bounds."""
from __future__ import annotations

import math

from sim2real_checks.errors import Rejected


def check_scalar(value: float, low: float, high: float, what: str = "value") -> float:
    """``value`` if finite and in [low, high], else :class:`Rejected` (``non_finite``, ``bounds``)."""
    value = float(value)
    if not math.isfinite(value):
        raise Rejected("non_finite", f"{what} is {value}")
    if not low <= value <= high:
        raise Rejected("bounds", f"{what} {value:.4g} outside [{low:.4g}, {high:.4g}]")
    return value
