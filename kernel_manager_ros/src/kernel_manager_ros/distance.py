"""The state distance of paper 001 eq. 8: c(s, s') = sum_i w_i |s_i - s'_i|, sum_i w_i = 1.

Scaling every coordinate by its weight turns eq. 8 into the plain L1 (Minkowski p = 1) distance,
so a scipy cKDTree over ``scaled(x, w)`` queried with ``p=1`` answers eq. 8 exactly; the
quantiser (transitions.py) and the kernel index (kernel_index.py) both rely on that.
"""
from __future__ import annotations

import numpy as np


def weighted_l1(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """c(a, b) of eq. 8 over the last axis, broadcasting a and b (e.g. (d,) against (n, d))."""
    return np.abs(np.asarray(a, float) - np.asarray(b, float)) @ np.asarray(w, float)


def scaled(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Coordinates in which eq. 8 is the L1 distance: x_i * w_i (weights are >= 0)."""
    return np.asarray(x, float) * np.asarray(w, float)
