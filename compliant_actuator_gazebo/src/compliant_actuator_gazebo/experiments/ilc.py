"""Iterative learning control of the link equilibrium positions (paper 003 §4.3, eq. 13).

At iteration n the commanded equilibrium trajectory is corrected by the link position error of
the previous trial,

    theta_eq(n) = theta_eq(n - 1) + K(n - 1) * e_q(n - 1),        e_q = q_desired - q     (eq. 13)

with an iteration-dependent gain K(n) = K0 * exp(-n / 10), K0 = 0.5. (The paper's text of this
gain is garbled in our copy, "qu_(n/10) with K0 = 0.5"; we read it as an exponentially decaying
gain, the usual choice that trades early speed for robustness to non-repeating disturbances.)
Iterations stop once the largest absolute error over the trial and over every joint is within
the tolerance band (0.08 rad in the paper, reached there after 11 iterations).

The trial itself is a callable: the embedded simulation here (scripts/reproduce_ilc), a real
robot, or any plant. Nothing in this module depends on ROS or on a simulator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from compliant_actuator_gazebo.errors import CompliantError

Trial = Callable[[np.ndarray], np.ndarray]   # (T, joints) equilibria -> (T, joints) link positions


def minimum_jerk(start: np.ndarray, goal: np.ndarray, duration: float, times: np.ndarray) -> np.ndarray:
    """Minimum-jerk positions (T, joints) from ``start`` to ``goal`` in ``duration`` seconds,
    held at ``goal`` after it (Flash and Hogan's quintic, s = 10 r^3 - 15 r^4 + 6 r^5)."""
    if not duration > 0.0:
        raise CompliantError(f"duration must be positive, got {duration}")
    start, goal = np.asarray(start, dtype=float), np.asarray(goal, dtype=float)
    r = np.clip(np.asarray(times, dtype=float) / duration, 0.0, 1.0)[:, None]
    s = r ** 3 * (10.0 - 15.0 * r + 6.0 * r ** 2)
    return start + (goal - start) * s


@dataclass(frozen=True)
class IlcConfig:
    """Gains and stopping rule of eq. 13 (defaults: paper 003 §4.3)."""

    k0: float = 0.5                  # K0
    decay_iterations: float = 10.0   # K(n) = K0 exp(-n / decay_iterations)
    tolerance: float = 0.08          # rad, band on the largest absolute error
    max_iterations: int = 50

    def __post_init__(self) -> None:
        if not (self.k0 > 0.0 and self.decay_iterations > 0.0 and self.tolerance > 0.0
                and self.max_iterations >= 1):
            raise CompliantError(f"invalid ILC configuration {self}")

    def gain(self, iteration: int) -> float:
        """K(n) of eq. 13."""
        return self.k0 * math.exp(-iteration / self.decay_iterations)


@dataclass
class IlcResult:
    """Every trial of the procedure; ``converged_iteration`` is the number of updates made
    before the error entered the band (None if it never did)."""

    desired: np.ndarray                              # (T, joints)
    equilibria: list[np.ndarray] = field(default_factory=list)   # input of each trial
    positions: list[np.ndarray] = field(default_factory=list)    # output of each trial
    max_errors: list[float] = field(default_factory=list)        # max |e| of each trial
    converged_iteration: Optional[int] = None

    @property
    def iterations(self) -> int:
        """ILC updates made (the paper's count: 11)."""
        return len(self.max_errors) - 1

    def rms_errors(self) -> np.ndarray:
        """(trials, joints) RMS error of every trial."""
        return np.array([np.sqrt(np.mean((self.desired - q) ** 2, axis=0)) for q in self.positions])


def run_ilc(trial: Trial, desired: np.ndarray, config: IlcConfig = IlcConfig(),
            initial: Optional[np.ndarray] = None,
            progress: Optional[Callable[[int, float], None]] = None) -> IlcResult:
    """Iterate eq. 13 from ``initial`` equilibria (default: the desired trajectory itself) until
    the largest absolute error is within ``config.tolerance`` or ``max_iterations`` updates."""
    desired = np.asarray(desired, dtype=float)
    if desired.ndim != 2 or not np.all(np.isfinite(desired)):
        raise CompliantError(f"desired must be a finite (T, joints) array, got shape {desired.shape}")
    equilibrium = desired.copy() if initial is None else np.asarray(initial, dtype=float).copy()
    if equilibrium.shape != desired.shape:
        raise CompliantError(f"initial equilibria {equilibrium.shape} do not match desired {desired.shape}")
    result = IlcResult(desired=desired)
    for iteration in range(config.max_iterations + 1):
        q = np.asarray(trial(equilibrium), dtype=float)
        if q.shape != desired.shape or not np.all(np.isfinite(q)):
            raise CompliantError(f"trial {iteration} returned {q.shape} positions with non-finite "
                             f"values or a shape other than {desired.shape}")
        error = desired - q
        worst = float(np.max(np.abs(error)))
        result.equilibria.append(equilibrium.copy())
        result.positions.append(q)
        result.max_errors.append(worst)
        if progress is not None:
            progress(iteration, worst)
        if worst <= config.tolerance:
            result.converged_iteration = iteration
            break
        if iteration == config.max_iterations:
            break
        equilibrium = equilibrium + config.gain(iteration) * error     # eq. 13
    return result
