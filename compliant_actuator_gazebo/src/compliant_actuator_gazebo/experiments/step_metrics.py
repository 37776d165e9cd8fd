"""Figures of a step response (paper 003 §4.1, Fig. 8: 0.8 rad steps of a 1-DoF link)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np

from compliant_actuator_gazebo.errors import CompliantError


@dataclass(frozen=True)
class StepMetrics:
    """Final value and transient of a link position response to a step of ``amplitude``."""

    amplitude: float             # rad, commanded step
    final: float                 # rad, mean over the last 10 % of the trace
    steady_state_error: float    # rad, amplitude - final (gravity sag of a soft joint)
    overshoot: float             # fraction of the final value's rise, >= 0
    rise_time: Optional[float]   # s, 10 % -> 90 % of the final rise (None: never reached)
    settling_time: Optional[float]  # s, last entry into the +-2 % band of the final rise
    peak_to_peak_end: float      # rad, residual oscillation over the last 10 %

    def as_dict(self) -> dict:
        return asdict(self)


def step_metrics(time: np.ndarray, position: np.ndarray, amplitude: float,
                 step_time: float = 0.0) -> StepMetrics:
    """Metrics of ``position`` (starting at rest before ``step_time``) after a step of
    ``amplitude`` commanded at ``step_time``."""
    time, position = np.asarray(time, dtype=float), np.asarray(position, dtype=float)
    if time.shape != position.shape or time.size < 10 or not np.all(np.isfinite(position)):
        raise CompliantError("need matching, finite time and position traces of at least 10 samples")
    after = time >= step_time
    t, q = time[after] - step_time, position[after]
    q0 = float(position[~after][-1]) if np.any(~after) else float(q[0])
    tail = q[int(0.9 * q.size):]
    final = float(np.mean(tail))
    rise = final - q0
    if abs(rise) < 1e-12:
        return StepMetrics(amplitude, final, amplitude - (final - q0), 0.0, None, None,
                           float(np.ptp(tail)))
    progress = (q - q0) / rise
    overshoot = max(0.0, float(np.max(progress)) - 1.0)

    def first_at(level: float) -> Optional[float]:
        hit = np.flatnonzero(progress >= level)
        return float(t[hit[0]]) if hit.size else None

    t10, t90 = first_at(0.1), first_at(0.9)
    rise_time = t90 - t10 if t10 is not None and t90 is not None else None
    outside = np.flatnonzero(np.abs(progress - 1.0) > 0.02)
    settling = (float(t[outside[-1] + 1]) if outside.size and outside[-1] + 1 < t.size
                else (0.0 if not outside.size else None))
    return StepMetrics(amplitude, final, amplitude - (final - q0), overshoot, rise_time,
                       settling, float(np.ptp(tail)))


def trace_rms_difference(time_a: np.ndarray, value_a: np.ndarray, time_b: np.ndarray,
                         value_b: np.ndarray) -> float:
    """RMS of a - b over a's samples, b interpolated linearly at a's times (the engines' agreement
    of issue 35); ValueError for traces that do not overlap."""
    time_a, value_a = np.asarray(time_a, float), np.asarray(value_a, float)
    time_b, value_b = np.asarray(time_b, float), np.asarray(value_b, float)
    inside = (time_a >= time_b[0] - 1e-9) & (time_a <= time_b[-1] + 1e-9)
    if inside.sum() < 10:
        raise CompliantError("the traces overlap in fewer than 10 samples")
    other = np.interp(time_a[inside], time_b, value_b)
    return float(np.sqrt(np.mean((value_a[inside] - other) ** 2)))
