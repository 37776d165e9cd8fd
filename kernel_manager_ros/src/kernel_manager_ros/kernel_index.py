"""Finding the first active kernel (paper 001 §3.2) without a linear scan.

Kernel k is active at s when e_k ∘ c_k(s) > threshold, i.e. when c_k(s) < r_k = sigma_k
sqrt(-2 ln threshold) (kernel.py). A cKDTree over the kernel centres in w-scaled coordinates
answers eq. 8 balls exactly with p = 1; one ball query of radius max_k r_k returns a superset
of the active kernels, whose own activations are then checked, and the lowest index among the
active ones wins ("the kernel manager selects the first active kernel"). With equal sigmas
(generate_kernels' default) the ball is exactly the activation region; the exact check then only
settles the boundary (activation > threshold is strict).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from scipy.spatial import cKDTree

from kernel_manager_ros.kernel import KernelSet, activation_radius


class KernelIndex:
    """first_active(state) over a fixed KernelSet."""

    def __init__(self, kernel_set: KernelSet) -> None:
        self.kernel_set = kernel_set
        self.weights = kernel_set.weights
        self.threshold = float(kernel_set.activation_threshold)
        self.centres = kernel_set.centres()
        sigmas = kernel_set.sigmas()
        self._two_sigma2 = 2.0 * np.square(sigmas)
        self._log_threshold = float(np.log(self.threshold))
        self.radius = float(activation_radius(sigmas.max(), self.threshold)) if len(sigmas) \
            else 0.0
        self._tree: Optional[cKDTree] = cKDTree(self.centres * self.weights) if len(sigmas) \
            else None

    def __len__(self) -> int:
        return self.centres.shape[0]

    def first_active(self, state: np.ndarray) -> Optional[tuple[int, float]]:
        """(index of the first active kernel, its activation), or None when no kernel is
        active at ``state`` (a finite (d,) vector; the caller validates it)."""
        if self._tree is None:
            return None
        candidates = self._tree.query_ball_point(state * self.weights, self.radius, p=1.0,
                                                 return_sorted=True)
        if not candidates:
            return None
        idx = np.asarray(candidates, dtype=np.intp)
        dist = np.abs(self.centres[idx] - state) @ self.weights
        # activation > threshold  <=>  -c^2 / (2 sigma^2) > ln(threshold)
        active = np.flatnonzero(-np.square(dist) / self._two_sigma2[idx] > self._log_threshold)
        if active.size == 0:
            return None
        j = active[0]
        return int(idx[j]), float(np.exp(-dist[j] ** 2 / self._two_sigma2[idx[j]]))
