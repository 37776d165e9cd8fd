"""The kernel transfer function f_k : S x A -> S (paper 001 §3.1): one linear map per sensor,

    sv_i' = f_{k,sn_i}(sv_i, a) = A_i sv_i + B_i a + c_i        (per sensor sn_i, eq. 9's stv_i)

fitted by least squares to deployment transitions (s, a, s') around a divergence.

Ridge toward identity. The fit data come from a small region of S (the kernel is local), so the
regressors sv_i and a barely vary and plain least squares is ill-posed (fewer samples than
d_i + m + 1 unknowns, or nearly collinear columns). We fit the deviation from the identity map:
with R = S' - S (per sensor) and centred regressors X = [sv - mean(sv), a - mean(a)],

    minimise ||X theta - (R - mean(R))||^2 + sum_j lambda_j theta_j^2,
    lambda_j = ridge * ||X_j||^2 + 1e-12 * n,

theta = [(A_i - I)^T; B_i^T]; the intercept is then c_i = mean(R) - (A_i - I) mean(sv) -
B_i mean(a), i.e. unpenalised: f reproduces the mean displacement exactly. lambda_j proportional
to the column's energy is ridge regression on standardised columns (an orthogonal design shrinks
each slope by 1 / (1 + ridge)); a column that does not vary gets slope 0, i.e. the identity. So
a sensor that held its value (S' = S) fits to exactly A = I, B = 0, c = 0.

``displacement`` is the largest eq. 8 distance c(f(s, a), s) over the fit samples: how far the
kernel moves a state where it was fitted. ``is_identity(tol)`` compares it with tol (eq. 8 units,
like epsilon_c). Whether a kernel is a sensor kernel is decided per sensor from the fit rows'
stamps and values (generation.held_sensors, eq. 9), not from the whole transfer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

import numpy as np

from kernel_manager_ros.distance import weighted_l1
from kernel_manager_ros.errors import KernelError


@dataclass(frozen=True)
class SensorTransfer:
    """f_{k,sn_i}: state[start:stop]' = A state[start:stop] + B action + c."""

    name: str
    start: int
    stop: int
    A: np.ndarray   # (k, k)
    B: np.ndarray   # (k, m)
    c: np.ndarray   # (k,)

    def __post_init__(self) -> None:
        k = self.stop - self.start
        if k <= 0 or self.start < 0:
            raise KernelError(f"sensor {self.name}: bad slice {self.start}:{self.stop}")
        for name, array, shape in (("A", self.A, (k, k)), ("B", self.B, (k, None)),
                                   ("c", self.c, (k,))):
            arr = np.asarray(array)
            if arr.ndim != len(shape) or any(s is not None and s != a
                                              for s, a in zip(shape, arr.shape)):
                raise KernelError(f"sensor {self.name}: {name} has shape {arr.shape}, expected "
                                  f"{tuple('m' if s is None else s for s in shape)}")
            if not np.isfinite(arr).all():
                raise KernelError(f"sensor {self.name}: {name} holds NaN/Inf")


@dataclass(frozen=True)
class LinearTransfer:
    """f_k as the composition of the per-sensor maps (they tile the state vector)."""

    blocks: tuple[SensorTransfer, ...]
    state_dim: int
    action_dim: int
    displacement: Optional[float] = None   # max c(f(s, a), s) over the fit samples

    def __post_init__(self) -> None:
        covered = np.zeros(self.state_dim, dtype=int)
        for b in self.blocks:
            if b.stop > self.state_dim or b.B.shape[1] != self.action_dim:
                raise KernelError(f"sensor {b.name}: block {b.start}:{b.stop} with "
                                  f"{b.B.shape[1]} action columns does not fit a "
                                  f"{self.state_dim}-D state and {self.action_dim}-D action")
            covered[b.start:b.stop] += 1
        if not (covered == 1).all():
            raise KernelError("the sensor blocks of a transfer must cover every state "
                              "coordinate exactly once")

    @classmethod
    def identity(cls, sensor_slices: Mapping[str, slice], action_dim: int) -> "LinearTransfer":
        blocks = tuple(SensorTransfer(name, sl.start, sl.stop, np.eye(sl.stop - sl.start),
                                      np.zeros((sl.stop - sl.start, action_dim)),
                                      np.zeros(sl.stop - sl.start))
                       for name, sl in sensor_slices.items())
        dim = max(sl.stop for sl in sensor_slices.values())
        return cls(blocks, dim, action_dim, None)

    @classmethod
    def fit(cls, states: np.ndarray, actions: np.ndarray, next_states: np.ndarray,
            sensor_slices: Mapping[str, slice], weights: np.ndarray,
            ridge: float = 1.0) -> "LinearTransfer":
        """Least squares per sensor, ridge-regularised toward the identity (module docstring)."""
        s = np.asarray(states, float)
        a = np.asarray(actions, float)
        s_next = np.asarray(next_states, float)
        if s.ndim != 2 or a.ndim != 2 or s_next.shape != s.shape or a.shape[0] != s.shape[0]:
            raise KernelError(f"transfer fit: states {s.shape}, actions {a.shape}, next states "
                              f"{s_next.shape} do not match")
        n = s.shape[0]
        if n == 0:
            raise KernelError("transfer fit: no samples")
        if ridge < 0.0:
            raise KernelError(f"ridge must be >= 0, got {ridge}")
        a_mean = a.mean(axis=0)
        a_c = a - a_mean
        blocks = []
        for name, sl in sensor_slices.items():
            sv, sv_next = s[:, sl], s_next[:, sl]
            k = sv.shape[1]
            sv_mean = sv.mean(axis=0)
            x = np.hstack([sv - sv_mean, a_c])
            r = sv_next - sv
            r_mean = r.mean(axis=0)
            gram = x.T @ x
            lam = ridge * np.diag(gram) + 1e-12 * n
            theta = np.linalg.solve(gram + np.diag(lam), x.T @ (r - r_mean))
            delta_a, b = theta[:k].T, theta[k:].T
            c = r_mean - delta_a @ sv_mean - b @ a_mean
            blocks.append(SensorTransfer(name, sl.start, sl.stop, np.eye(k) + delta_a, b, c))
        transfer = cls(tuple(blocks), s.shape[1], a.shape[1], None)
        moved = weighted_l1(transfer.apply_batch(s, a), s, weights)
        return cls(transfer.blocks, transfer.state_dim, transfer.action_dim,
                   float(moved.max()))

    def apply(self, state: np.ndarray, action: np.ndarray) -> np.ndarray:
        """f_k(s, a): the next state the kernel imposes."""
        s = np.asarray(state, float)
        a = np.asarray(action, float)
        out = s.copy()
        for b in self.blocks:
            out[b.start:b.stop] = b.A @ s[b.start:b.stop] + b.B @ a + b.c
        return out

    def apply_batch(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """f_k over rows of states (n, d) and actions (n, m)."""
        s = np.asarray(states, float)
        a = np.asarray(actions, float)
        out = s.copy()
        for b in self.blocks:
            out[:, b.start:b.stop] = s[:, b.start:b.stop] @ b.A.T + a @ b.B.T + b.c
        return out

    def is_identity(self, tol: float) -> bool:
        """True when f_k moves no fit sample further than tol (eq. 8 units) from itself; for a
        transfer without fit samples (displacement None), when every coefficient is the
        identity's within tol."""
        if self.displacement is not None:
            return self.displacement <= tol
        return all(np.abs(b.A - np.eye(b.A.shape[0])).max() <= tol
                   and (b.B.size == 0 or np.abs(b.B).max() <= tol)
                   and np.abs(b.c).max() <= tol for b in self.blocks)
