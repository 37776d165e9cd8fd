"""Joint velocities and accelerations from sampled positions by zero-phase Savitzky-Golay
differentiation.

Paper 002's identification loss L_ID (eq. 2) compares measured torques with
f_ID(q, qd, qdd); robots measure q (and usually qd) but not qdd, so qdd has to be obtained by
differentiating the recorded positions. A Savitzky-Golay filter fits a polynomial of degree
``polyorder`` to a centred window of samples and differentiates the fit: it is zero-phase (no
lag between qdd and the torque it explains) and smooths the noise that plain finite differences
amplify.

The filter assumes uniform sampling with period ``dt``. Stamps are checked: every step must be
``dt`` within a relative ``tolerance``; a step longer than ``gap_periods`` periods ends a
*segment* (each segment is filtered on its own, so no derivative straddles a gap); a step that
is a whole multiple ``k * dt`` (``2 <= k <= gap_periods``) is ``k - 1`` dropped samples, which
are filled by cubic-spline interpolation for the filter only (results are returned at the
given stamps).

Stamps that jitter by more than ``tolerance`` (a robot sampling at 1 kHz whose host stamps the
samples, often +-0.5 ms) are put on a *steady clock*: t_i ~ a + b k_i fitted by least squares
over the segment, with k_i the grid index (the sample index, or with dropped samples the stamps
rounded to the clock, refitted until stable). The filter then runs on that clock's period b, as
the robot sampled. It is accepted when every stamp lies within a period of the clock (without
drops; ``MAX_JITTER`` periods with them, where the grid is found reliably to about 0.3) and the
jitter averages out as white jitter does (its mean over ``JITTER_WINDOW`` samples stays below
``MAX_JITTER_MEAN`` periods and ``WHITE_SIGMAS`` standard errors: a jump of the clock or a
drifting rate is no jitter); anything else is a :class:`DataError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.signal import savgol_filter

from diffnea_ros.errors import DataError

DEFAULT_WINDOW_SECONDS = 0.15   # 15 samples at 100 Hz: smooths sensor noise, keeps 1 Hz motions
DEFAULT_POLYORDER = 3           # cubic fit: unbiased qdd for motions smooth at the window scale
DEFAULT_TOLERANCE = 0.1         # relative jitter allowed in a sampling step
DEFAULT_GAP_PERIODS = 5.0       # a step longer than this many periods starts a new segment
MAX_JITTER = 0.5                # stamps this many periods off a steady clock: the grid is unknown
JITTER_WINDOW = 51              # samples over which jitter must average out...
MAX_JITTER_MEAN = 0.2           # ...to below this many periods (5 sigma of +-0.5 uniform jitter)
WHITE_SIGMAS = 6.0              # ...and to within this many standard errors of white jitter


@dataclass(frozen=True)
class Derivatives:
    """Smoothed positions q and their time derivatives qd, qdd, each (N, dof)."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray


def sample_period(t: np.ndarray, segment_ids: Optional[np.ndarray] = None) -> float:
    """The sampling period: the median step of the stamps ``t`` (N,) within segments.

    Stamps must be finite and strictly increasing within each run of equal ``segment_ids``
    (all of ``t`` if no ids are given); at least one step is needed.
    """
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 1:
        raise DataError(f"time stamps must be a vector, got shape {t.shape}")
    steps = np.diff(t)
    if segment_ids is not None:
        ids = np.asarray(segment_ids)
        if ids.shape != t.shape:
            raise DataError(f"segment ids have shape {ids.shape}, time stamps {t.shape}")
        steps = steps[ids[1:] == ids[:-1]]
    if steps.size == 0:
        raise DataError(f"need at least 2 samples in a segment to know the sample period, "
                        f"got {t.shape[0]} samples")
    if not np.all(np.isfinite(t)) or np.any(steps <= 0.0):
        raise DataError("time stamps must be finite and strictly increasing; sort the samples "
                        "and remove duplicates")
    return float(np.median(steps))


def window_length(dt: float, window_seconds: float = DEFAULT_WINDOW_SECONDS,
                  polyorder: int = DEFAULT_POLYORDER) -> int:
    """The filter window in samples: ``window_seconds / dt`` rounded to an odd number, and at
    least the smallest odd number greater than ``polyorder``."""
    if polyorder < 2:
        raise DataError(f"polyorder must be >= 2 to give accelerations, got {polyorder}")
    if not (window_seconds > 0.0 and dt > 0.0):
        raise DataError(f"window_seconds and the sample period must be positive, got "
                        f"{window_seconds} and {dt}")
    n = int(round(window_seconds / dt))
    n += 1 - n % 2
    smallest = polyorder + 1 + polyorder % 2
    return max(n, smallest)


def segment_starts(t: np.ndarray, dt: float, segment_ids: Optional[np.ndarray] = None,
                   gap_periods: float = DEFAULT_GAP_PERIODS) -> np.ndarray:
    """Indices where a new segment begins (always including 0): a change of ``segment_ids`` or a
    step in ``t`` longer than ``gap_periods * dt`` (or not forward in time)."""
    steps = np.diff(np.asarray(t, dtype=np.float64))
    cut = (steps > gap_periods * dt) | (steps <= 0.0)
    if segment_ids is not None:
        ids = np.asarray(segment_ids)
        cut |= ids[1:] != ids[:-1]
    return np.concatenate([[0], np.flatnonzero(cut) + 1]).astype(np.int64)


def _step_grid(t: np.ndarray, dt: float, tolerance: float) -> Optional[np.ndarray]:
    """Integer grid index of each stamp of one segment from its steps, or None if a step is not
    a whole number of periods within ``tolerance``."""
    ratio = np.diff(t) / dt
    k = np.rint(ratio)
    if np.any((k < 1) | (np.abs(ratio - k) > tolerance)):
        return None
    return np.concatenate([[0], np.cumsum(k.astype(np.int64))])


def _clock_fit(t: np.ndarray, k: np.ndarray, max_jitter: float) -> Optional[tuple[float, float]]:
    """(a, b) of the clock t ~ a + b k, or None unless every stamp is within ``max_jitter``
    periods of it and the jitter averages out (module docstring)."""
    b, a = np.polyfit(k, t, 1)
    if not b > 0.0:
        return None
    jitter = t - (a + b * k)
    window = min(JITTER_WINDOW, jitter.shape[0])
    mean = np.convolve(jitter, np.full(window, 1.0 / window), mode="valid")
    white = WHITE_SIGMAS * np.std(jitter) / np.sqrt(window)   # what white jitter's mean stays in
    if np.max(np.abs(jitter)) >= max_jitter * b or \
            np.max(np.abs(mean)) >= min(MAX_JITTER_MEAN * b, white):
        return None
    return float(a), float(b)


def _tracked_grid(t: np.ndarray, dt: float, alpha: float = 0.02, beta: float = 2e-5) -> np.ndarray:
    """A first grid index of jittered stamps with dropped samples: an alpha-beta tracker of the
    clock's phase and period rounds each step against the filtered stamp of the previous sample,
    not against its jittered one. Reliable to about 0.3 periods of jitter (tested)."""
    k = np.zeros(t.shape[0])
    head = np.arange(min(64, t.shape[0]))      # the start, taken as drop-free: the clock's phase
    x = float(np.mean(t[head] - dt * head))
    b = float(dt)
    for i in range(1, t.shape[0]):
        m = max(1.0, float(np.rint((t[i] - x) / b)))
        r = t[i] - (x + b * m)
        x, b = x + b * m + alpha * r, b + beta * r / m
        k[i] = k[i - 1] + m
    return k


def _clock_grid(t: np.ndarray, dt: float, iterations: int = 8) -> Optional[tuple[np.ndarray, float]]:
    """(grid index, period) of a steady clock under jittered stamps (module docstring), or None.

    Without dropped samples the grid is the sample index, and the stamps may jitter by up to a
    period (a dropped sample would shift the jitter's mean by a period); with drops, the grid is
    the steps rounded by a tracker of the clock, then the stamps rounded to the clock fitted on
    them until stable, and the jitter must stay below ``MAX_JITTER`` periods for the rounding to
    be right."""
    t = t - t[0]     # a clock's epoch (1.7e9 s) would cost the fit its precision
    k = np.arange(t.shape[0], dtype=np.float64)
    fit = _clock_fit(t, k, 1.0)
    if fit is None:
        k = _tracked_grid(t, dt)
        for _ in range(iterations):
            fit = _clock_fit(t, k, np.inf)
            if fit is None:
                return None
            new = np.rint((t - fit[0]) / fit[1])
            new -= new[0]
            if np.array_equal(new, k):
                break
            k = new
        fit = _clock_fit(t, k, MAX_JITTER) if np.all(np.diff(k) >= 1) else None
    if fit is None or abs(fit[1] - dt) > 0.5 * dt:
        return None
    return k.astype(np.int64), fit[1]


def _grid_positions(t: np.ndarray, dt: float, tolerance: float) -> tuple[np.ndarray, float]:
    """(integer grid index of each stamp of one segment, the filter's period); DataError for
    stamps neither uniform within ``tolerance`` nor on a steady clock with jitter."""
    grid = _step_grid(t, dt, tolerance)
    if grid is not None:
        return grid, dt
    clock = _clock_grid(t, dt)
    if clock is not None:
        return clock
    ratio = np.diff(t) / dt
    i = int(np.argmax(np.abs(ratio - np.maximum(np.rint(ratio), 1))))
    raise DataError(f"time stamps are not uniformly sampled: step {t[i + 1] - t[i]:.6g} s at "
                    f"t = {t[i]:.6g} s vs. period {dt:.6g} s (tolerance {tolerance:.0%}), and "
                    f"not a steady clock with jitter below {MAX_JITTER:g} periods; resample the "
                    f"data to a fixed rate")


def savgol_derivatives(t: np.ndarray, q: np.ndarray,
                       window_seconds: float = DEFAULT_WINDOW_SECONDS,
                       polyorder: int = DEFAULT_POLYORDER,
                       segment_ids: Optional[np.ndarray] = None,
                       tolerance: float = DEFAULT_TOLERANCE,
                       gap_periods: float = DEFAULT_GAP_PERIODS) -> Derivatives:
    """Zero-phase Savitzky-Golay estimates of q, qd, qdd at the stamps ``t`` (N,) from the
    positions ``q`` (N, dof) or (N,), segment by segment (see the module docstring).

    ``segment_ids`` (N,), if given, marks samples that must not be filtered together (a change of
    id ends a segment, as does a gap in ``t``). Raises :class:`DataError` for non-uniform stamps
    or a segment shorter than the filter window.
    """
    t = np.asarray(t, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    one_d = q.ndim == 1
    q2 = q[:, None] if one_d else q
    if q2.ndim != 2 or q2.shape[0] != t.shape[0]:
        raise DataError(f"positions have shape {q.shape}, expected ({t.shape[0]}, dof)")
    if not np.all(np.isfinite(q2)):
        raise DataError("positions contain NaN or Inf; drop those samples first")
    dt = sample_period(t, segment_ids)
    n_win = window_length(dt, window_seconds, polyorder)
    starts = segment_starts(t, dt, segment_ids, gap_periods)
    stops = np.append(starts[1:], t.shape[0])
    out = [np.empty_like(q2) for _ in range(3)]
    for a, b in zip(starts, stops):
        grid, period = _grid_positions(t[a:b], dt, tolerance)
        if grid[-1] + 1 < n_win:
            raise DataError(f"segment at t = {t[a]:.6g} s has {b - a} samples "
                            f"({grid[-1] * period:.3g} s), fewer than the {n_win}-sample "
                            f"Savitzky-Golay window; record longer segments or shorten the window")
        if grid[-1] == b - a - 1:  # no dropped samples
            filled = q2[a:b]
        else:
            filled = CubicSpline(grid, q2[a:b], axis=0)(np.arange(grid[-1] + 1))
        for deriv, target in enumerate(out):
            y = savgol_filter(filled, n_win, polyorder, deriv=deriv, delta=period, axis=0,
                              mode="interp")
            target[a:b] = y[grid]
    if one_d:
        out = [x[:, 0] for x in out]
    return Derivatives(*out)
