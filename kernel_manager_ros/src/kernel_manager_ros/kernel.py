"""State-space kernels (paper 001 §3.1) and the set a kernel manager applies (§3.2).

A kernel k holds
  * its region of state space: e_k = N(0, sigma^2) over the eq. 8 distance c_k(s) = c(centre, s)
    from the state preceding the divergence. We use the Gaussian scaled to peak 1,
        e_k(c_k(s)) = exp(-c_k(s)^2 / (2 sigma^2)),
    instead of the density (which peaks at 1 / (sigma sqrt(2 pi))): the activation is then
    unit-free and in (0, 1], so one activation threshold (§3.2: "e_k ∘ c_k(s) > epsilon") means
    the same for every sigma; the kernel is active within c_k(s) < sigma sqrt(-2 ln threshold);
  * the divergence probability distribution (p_s, p_p), normalised (Algorithm 1, "d");
  * the transfer function f_k (transfer.py) and its kind: "sensor" when some sensors held their
    value across the divergent transition (eq. 9: their time stamps unchanged, t_i = t'_i, and
    f_{k,sn_i} the identity; §6.2), ``held`` names them; "motor" when every sensor moved. A
    sensor kernel replaces only the held sensors' data (their values and stamps of s); the
    other sensors report what the simulation reports (their transfer blocks are kept in the file
    but not applied);
  * ``support``: how many roll-out divergences were merged into it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from kernel_manager_ros.distance import weighted_l1
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.transfer import LinearTransfer

KINDS = ("motor", "sensor")


@dataclass(frozen=True)
class Kernel:
    centre: np.ndarray         # (d,)
    sigma: float
    p_sim: float
    p_phy: float
    transfer: LinearTransfer
    kind: str
    support: int = 1
    held: tuple[str, ...] = ()   # sensor kernels: the sensors that held their value (eq. 9)

    def __post_init__(self) -> None:
        centre = np.asarray(self.centre, dtype=float)
        if centre.ndim != 1 or not np.isfinite(centre).all():
            raise KernelError(f"kernel centre must be a finite vector, got {self.centre!r}")
        if centre.size != self.transfer.state_dim:
            raise KernelError(f"kernel centre has {centre.size} values, its transfer maps "
                              f"{self.transfer.state_dim}-D states")
        if not (math.isfinite(self.sigma) and self.sigma > 0.0):
            raise KernelError(f"kernel sigma must be > 0, got {self.sigma}")
        if self.kind not in KINDS:
            raise KernelError(f"kernel kind must be one of {KINDS}, got {self.kind!r}")
        for name, p in (("p_sim", self.p_sim), ("p_phy", self.p_phy)):
            if not (0.0 <= p <= 1.0):
                raise KernelError(f"kernel {name} must be in [0, 1], got {p}")
        object.__setattr__(self, "centre", centre)
        held = tuple(self.held)
        names = tuple(b.name for b in self.transfer.blocks)
        if self.kind == "sensor" and not held:
            held = names          # a sensor kernel without names holds every sensor
        if self.kind == "motor" and held:
            raise KernelError(f"a motor kernel holds no sensors, got held={list(held)}")
        unknown = set(held) - set(names)
        if unknown:
            raise KernelError(f"kernel holds unknown sensors {sorted(unknown)} (its transfer "
                              f"has {list(names)})")
        object.__setattr__(self, "held", held)

    def held_slices(self) -> tuple[slice, ...]:
        """The state slices of the held sensors."""
        return tuple(slice(b.start, b.stop) for b in self.transfer.blocks if b.name in self.held)

    def distance(self, state: np.ndarray, weights: np.ndarray) -> float:
        """c_k(s) of eq. 8."""
        return float(weighted_l1(state, self.centre, weights))

    def activation(self, state: np.ndarray, weights: np.ndarray) -> float:
        """e_k ∘ c_k(s) = exp(-c_k(s)^2 / (2 sigma^2)) (see the module docstring)."""
        return activation_of(self.distance(state, weights), self.sigma)

    def radius(self, threshold: float) -> float:
        """The c_k(s) below which the activation exceeds ``threshold``."""
        return activation_radius(self.sigma, threshold)


def activation_of(distance: Any, sigma: Any) -> Any:
    """exp(-c^2 / (2 sigma^2)), elementwise."""
    return np.exp(-np.square(distance) / (2.0 * np.square(sigma)))


def activation_radius(sigma: Any, threshold: float) -> Any:
    """sigma sqrt(-2 ln threshold): where the activation equals ``threshold``."""
    return sigma * math.sqrt(-2.0 * math.log(threshold))


@dataclass(frozen=True)
class KernelSet:
    """The kernels in application order ("first active kernel", §3.2), with the state and
    action layout they were generated for and the activation threshold."""

    kernels: tuple[Kernel, ...]
    state_names: tuple[str, ...]
    action_names: tuple[str, ...]
    weights: np.ndarray
    activation_threshold: float
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        weights = np.asarray(self.weights, dtype=float)
        d, m = len(self.state_names), len(self.action_names)
        if d == 0 or m == 0:
            raise KernelError("a kernel set needs state and action names")
        if len(set(self.state_names)) != d:
            raise KernelError(f"state names must be unique, got {list(self.state_names)}")
        if weights.shape != (d,) or not np.isfinite(weights).all() or (weights < 0).any():
            raise KernelError(f"kernel set: {weights.shape[0] if weights.ndim else 0} weights "
                              f"for {d} state values (need {d} finite weights >= 0)")
        if not math.isclose(float(weights.sum()), 1.0, rel_tol=1e-9, abs_tol=1e-9):
            raise KernelError(f"kernel set: weights must sum to 1 (eq. 8), sum {weights.sum()}")
        if not (0.0 < self.activation_threshold < 1.0):
            raise KernelError(f"activation threshold must be in (0, 1), got "
                              f"{self.activation_threshold}")
        for k, kernel in enumerate(self.kernels):
            if kernel.transfer.state_dim != d or kernel.transfer.action_dim != m:
                raise KernelError(f"kernel {k} maps {kernel.transfer.state_dim}-D states and "
                                  f"{kernel.transfer.action_dim}-D actions; the set has {d} "
                                  f"and {m}")
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "kernels", tuple(self.kernels))

    def __len__(self) -> int:
        return len(self.kernels)

    @property
    def state_dim(self) -> int:
        return len(self.state_names)

    @property
    def action_dim(self) -> int:
        return len(self.action_names)

    def counts(self) -> dict[str, int]:
        return {kind: sum(k.kind == kind for k in self.kernels) for kind in KINDS}

    def centres(self) -> np.ndarray:
        return np.array([k.centre for k in self.kernels]).reshape(len(self.kernels),
                                                                   self.state_dim)

    def sigmas(self) -> np.ndarray:
        return np.array([k.sigma for k in self.kernels], dtype=float)

    def activations(self, state: np.ndarray) -> np.ndarray:
        """e_k ∘ c_k(s) of every kernel (a linear scan: the reference for KernelIndex)."""
        return activation_of(weighted_l1(self.centres(), state, self.weights), self.sigmas())

    def first_active_scan(self, state: np.ndarray) -> Optional[tuple[int, float]]:
        """The first kernel whose activation exceeds the threshold, by brute force."""
        active = np.flatnonzero(self.activations(state) > self.activation_threshold)
        if active.size == 0:
            return None
        k = int(active[0])
        return k, float(self.kernels[k].activation(state, self.weights))

    def with_kernels(self, kernels: Sequence[Kernel]) -> "KernelSet":
        return KernelSet(tuple(kernels), self.state_names, self.action_names, self.weights,
                         self.activation_threshold, dict(self.metadata))
