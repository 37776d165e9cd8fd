"""The joint-state stream of the online identifier: joints mapped by name, zero-phase
Savitzky-Golay derivatives of a growing segment (with a causal estimate for predictions), and a
bounded ring of finished samples.

:class:`StreamingDerivatives` keeps the current *segment* (a uniformly sampled run; a gap of more
than ``gap_periods`` periods or a stamp going backwards starts a new one) and, every
``PROCESS_SECONDS`` of data, takes zero-phase Savitzky-Golay accelerations
(:func:`~diffnea_ros.acceleration.savgol_derivatives`) of the samples whose whole centred window
has arrived. The first and last half window of a segment are not used (no one-sided fits); a
window whose stamps are not uniform (jitter over 10 % of the period) is not used either.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from scipy.signal import savgol_coeffs

from sim2real_checks import InvalidJointState, JointStateLayout, MALFORMED

from diffnea_ros.acceleration import (DEFAULT_GAP_PERIODS, DEFAULT_POLYORDER,
                                      DEFAULT_TOLERANCE, DEFAULT_WINDOW_SECONDS,
                                      savgol_derivatives, window_length)
from diffnea_ros.errors import DataError

PROCESS_SECONDS = 0.25      # data between two Savitzky-Golay passes over the stream [s]
DT_PROBE_STEPS = 8          # steps whose median fixes a segment's sample period
STAMP = "stamp"             # InvalidSample.reason of an unusable or repeated header stamp


class InvalidSample(DataError):
    """A joint-state sample that cannot be used; the message says why (one line), ``reason`` is
    the short code (sim2real_checks' joint-state reasons, or STAMP) that keys the node's
    throttled error line and diagnostics counter."""

    def __init__(self, message: str, reason: str = MALFORMED) -> None:
        super().__init__(message)
        self.reason = reason


class JointStateMapper(JointStateLayout):
    """sim2real_checks' JointStateLayout for the identifier: an empty velocity field means "not
    measured", the effort (what is learnt) is required, and a bad joint state raises
    :class:`InvalidSample` with the layout's reason."""

    def arrays(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
               effort: Sequence[float], require_velocity: bool = False,
               require_effort: bool = True) -> tuple[np.ndarray, Optional[np.ndarray], np.ndarray]:
        """(q, qd or None, tau) in the model's joint order; :class:`InvalidSample` if bad."""
        try:
            q, qd, tau = super().arrays(names, position, velocity, effort, require_velocity,
                                        require_effort=True)
        except InvalidJointState as exc:
            raise InvalidSample(str(exc), exc.reason) from None
        assert tau is not None    # required above
        return q, qd, tau


@dataclass(frozen=True)
class Block:
    """Finished samples of the stream: t (n,), q, qd, qdd, tau (n, dof)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray


class StreamingDerivatives:
    """Zero-phase Savitzky-Golay qd/qdd of a sample stream, half a window late, plus a causal
    estimate for the newest sample (see the module docstring). Not thread-safe by itself."""

    def __init__(self, dof: int, window_seconds: float = DEFAULT_WINDOW_SECONDS,
                 polyorder: int = DEFAULT_POLYORDER, gap_periods: float = DEFAULT_GAP_PERIODS,
                 tolerance: float = DEFAULT_TOLERANCE) -> None:
        self.dof = dof
        self.window_seconds = window_seconds
        self.polyorder = polyorder
        self.gap_periods = gap_periods
        self.tolerance = tolerance
        self.segments = 0            # segments started
        self.dropped_blocks = 0      # samples whose window was not uniformly sampled
        self.dt: Optional[float] = None
        self._start_segment()

    def _start_segment(self, capacity: int = 64) -> None:
        self.segments += 1
        self.dt = None
        self._n = 0                  # samples held
        self._p = 0                  # index of the next sample to finish
        self._n_win = 0
        self._half = 0
        self._t = np.empty(capacity)
        self._x = np.empty((capacity, 3, self.dof))   # q, qd (NaN: not measured), tau
        self._causal: Optional[np.ndarray] = None     # (2, n_win) coefficients for qd, qdd
        self._chunk = 0                                # samples per Savitzky-Golay pass

    @property
    def window(self) -> int:
        """Savitzky-Golay window [samples] of the current segment (0 while its period is unknown)."""
        return self._n_win

    def push(self, t: float, q: np.ndarray, qd: Optional[np.ndarray],
             tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, Optional[Block]]:
        """Add one sample; return the causal (qd, qdd) for it and the samples finished now.

        Raises :class:`InvalidSample` for a stamp equal to the previous one; a stamp going
        backwards or a gap starts a new segment (the old one's last samples are finished then).
        """
        flushed = None
        if self._n:
            step = t - self._t[self._n - 1]
            if step == 0.0:
                raise InvalidSample(f"stamp {t:.9f} s repeats the previous sample's", STAMP)
            if step < 0.0 or (self.dt is not None and step > self.gap_periods * self.dt):
                flushed = self._finish(minimum=1)
                self._start_segment(len(self._t))
        if self._n == len(self._t):
            self._make_room()
        k = self._n
        self._t[k] = t
        self._x[k, 0], self._x[k, 2] = q, tau
        self._x[k, 1] = qd if qd is not None else np.nan
        self._n += 1
        if self.dt is None and self._n > DT_PROBE_STEPS:
            self._fix_period()
        return (*self._causal_estimate(q, qd), flushed if flushed is not None else self._finish())

    def _fix_period(self) -> None:
        steps = np.diff(self._t[:self._n])
        self.dt = float(np.median(steps))
        self._n_win = window_length(self.dt, self.window_seconds, self.polyorder)
        self._half = self._n_win // 2
        self._causal = np.stack([savgol_coeffs(self._n_win, self.polyorder, deriv=d,
                                               delta=self.dt, pos=self._n_win - 1, use="dot")
                                 for d in (1, 2)])
        self._chunk = max(int(round(PROCESS_SECONDS / self.dt)), 1)
        capacity = max(len(self._t), 4 * (self._n_win + self._chunk))
        if capacity > len(self._t):
            self._resize(capacity, 0)

    def _resize(self, capacity: int, start: int) -> None:
        n = self._n - start
        t, x = np.empty(capacity), np.empty((capacity, 3, self.dof))
        t[:n], x[:n] = self._t[start:self._n], self._x[start:self._n]
        self._t, self._x, self._n, self._p = t, x, n, max(self._p - start, 0)

    def _make_room(self) -> None:
        """Drop samples no longer needed (before the window of the next sample to finish and
        of the newest sample); grow if there are none."""
        keep_from = min(self._p - self._half, self._n - self._n_win) if self.dt else 0
        if keep_from > 0:
            n = self._n - keep_from
            self._t[:n] = self._t[keep_from:self._n]
            self._x[:n] = self._x[keep_from:self._n]
            self._n, self._p = n, self._p - keep_from
        else:
            self._resize(2 * len(self._t), 0)

    def _causal_estimate(self, q: np.ndarray, qd: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        if self._causal is None or self._n < self._n_win:
            return (qd if qd is not None else np.zeros(self.dof)), np.zeros(self.dof)
        window = self._x[self._n - self._n_win:self._n, 0]
        qd_fit, qdd = self._causal @ window
        return (qd if qd is not None else qd_fit), qdd

    def _finish(self, minimum: Optional[int] = None) -> Optional[Block]:
        """Savitzky-Golay over the samples whose centred window is complete, once ``minimum``
        (default: ``PROCESS_SECONDS`` of data) of them wait."""
        if self.dt is None:
            return None
        half = self._half
        self._p = max(self._p, half)
        end = self._n - half
        if end - self._p < (self._chunk if minimum is None else minimum):
            return None
        a, b = self._p - half, end + half
        self._p = end
        try:
            d = savgol_derivatives(self._t[a:b], self._x[a:b, 0], self.window_seconds,
                                   self.polyorder, tolerance=self.tolerance,
                                   gap_periods=self.gap_periods)
        except DataError:
            self.dropped_blocks += end - (a + half)
            return None
        rows = slice(half, b - a - half)
        x = self._x[a + half:end]
        qd = np.where(np.isnan(x[:, 1]), d.qd[rows], x[:, 1])
        return Block(self._t[a + half:end].copy(), x[:, 0].copy(), qd, d.qdd[rows].copy(),
                     x[:, 2].copy())


class SampleRing:
    """The training buffer: the last ``capacity`` finished samples, addressed by their global
    index (0 = the first sample ever stored)."""

    def __init__(self, capacity: int, dof: int) -> None:
        self.capacity = capacity
        self.total = 0
        self._data = np.empty((capacity, 4, dof))   # q, qd, qdd, tau

    @property
    def count(self) -> int:
        return min(self.total, self.capacity)

    def extend(self, block: Block) -> None:
        data = np.stack([block.q, block.qd, block.qdd, block.tau], axis=1)[-self.capacity:]
        n = data.shape[0]
        start = (self.total + len(block.t) - n) % self.capacity
        first = min(n, self.capacity - start)
        self._data[start:start + first] = data[:first]
        self._data[:n - first] = data[first:]
        self.total += len(block.t)

    def take(self, index: np.ndarray) -> np.ndarray:
        """Rows of the given global indices (must still be held): (n, 4, dof), a copy."""
        return self._data[np.asarray(index) % self.capacity]

    def oldest(self) -> int:
        return self.total - self.count
