"""Alignment of trajectory pairs by start-point detection (paper 000 §IV-B: "alignment of the time
series pairs by start point detection. This is possible when the recording contains the robot
resting before and after trajectory plan execution by observing movements outside the confidence
interval").

Each stream's rest samples (before ``start + rest_before``) give a band mean ± max(k std,
min_band) per joint; the motion starts at the first sample where a joint position leaves it. The
real stream is shifted so that its start coincides with the simulation's, and both are resampled
onto one uniform grid (linear interpolation) that begins ``pre`` seconds before the start.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import numpy as np

from panda_pairs.pair_bag import Stream, TrajectoryPair
from panda_sim2real import GeneratorSettings

REST_BEFORE = GeneratorSettings.rest_before  # [s] rest after a planned start (generator default)
MIN_REST_SAMPLES = 5     # fewer rest samples give no usable confidence band
MIN_GRID_SAMPLES = 10    # an aligned pair shorter than this is useless

Progress = Callable[[Iterable], Iterable]


class AlignmentError(ValueError):
    """A pair cannot be aligned (a stream never moves or is too short); skip it and count it."""


@dataclass(frozen=True)
class AlignedPair:
    """A pair on one uniform time grid ``t`` (sim time [s]); ``sim``/``real`` have shape
    (T, 3 dof) with columns [q, qd, tau] in physical units. ``shift`` [s] is how much later the
    real robot started moving than the simulation (subtracted from the real stamps)."""

    trajectory_id: int
    kind: str
    t: np.ndarray
    sim: np.ndarray
    real: np.ndarray
    shift: float
    start_index: int   # grid index of the detected motion start

    def __len__(self) -> int:
        return int(self.t.shape[0])


@dataclass(frozen=True)
class SkippedPair:
    trajectory_id: int
    kind: str
    reason: str


@dataclass
class AlignmentSummary:
    aligned: list[AlignedPair] = field(default_factory=list)
    skipped: list[SkippedPair] = field(default_factory=list)


def _rest_band(t: np.ndarray, q: np.ndarray, rest_until: float, k: float,
               min_band: float) -> tuple[np.ndarray, np.ndarray]:
    rest = t < rest_until
    n_rest = int(np.count_nonzero(rest))
    if n_rest < MIN_REST_SAMPLES:
        raise AlignmentError(f"only {n_rest} rest samples before t = {rest_until:.3f} s "
                             f"(need {MIN_REST_SAMPLES})")
    mean = q[rest].mean(axis=0)
    band = np.maximum(k * q[rest].std(axis=0), min_band)
    return mean, band


def detect_motion_start(t: np.ndarray, q: np.ndarray, rest_until: float, k: float = 6.0,
                        min_band: float = 2e-3) -> int:
    """Index of the first sample at which any joint leaves its rest band (paper 000 §IV-B).

    The band is mean ± max(k std, min_band) [rad] per joint over the samples with
    ``t < rest_until``. Raises :class:`AlignmentError` if there are too few rest samples or the
    stream never leaves the band.
    """
    t = np.asarray(t, dtype=float)
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or q.shape[0] != t.shape[0]:
        raise AlignmentError(f"positions of shape {q.shape} do not match {t.shape[0]} stamps")
    mean, band = _rest_band(t, q, rest_until, k, min_band)
    outside = np.any(np.abs(q - mean) > band, axis=1)
    if not np.any(outside):
        raise AlignmentError("the robot never leaves its rest band (it does not move)")
    return int(np.argmax(outside))


def motion_start_time(t: np.ndarray, q: np.ndarray, rest_until: float, k: float = 6.0,
                      min_band: float = 2e-3) -> float:
    """The time [s] the band is left, refined between the two samples around the crossing by
    linear interpolation of the excess (sub-sample precision for the shift)."""
    t = np.asarray(t, dtype=float)
    q = np.asarray(q, dtype=float)
    i = detect_motion_start(t, q, rest_until, k, min_band)
    if i == 0:
        return float(t[0])
    mean, band = _rest_band(t, q, rest_until, k, min_band)
    before = np.abs(q[i - 1] - mean) - band   # <= 0 for every joint
    after = np.abs(q[i] - mean) - band        # > 0 for at least one joint
    rising = after > 0.0
    frac = np.ones_like(after)
    frac[rising] = -before[rising] / (after[rising] - before[rising])
    # the earliest crossing among the joints that crossed
    return float(t[i - 1] + np.min(frac[rising]) * (t[i] - t[i - 1]))


def resample(t: np.ndarray, x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Linear interpolation of the rows of ``x`` (N, m) at ``grid`` (T,), all columns at once;
    ``grid`` must lie inside [t[0], t[-1]]."""
    idx = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, len(t) - 2)
    w = ((grid - t[idx]) / (t[idx + 1] - t[idx]))[:, None]
    return (1.0 - w) * x[idx] + w * x[idx + 1]


def _check_stream(stream: Stream, name: str) -> None:
    if len(stream) < MIN_GRID_SAMPLES:
        raise AlignmentError(f"the {name} stream has only {len(stream)} samples")


def align_pair(pair: TrajectoryPair, rate: float = 100.0, pre: float = 0.3,
               rest_before: float = REST_BEFORE, k: float = 6.0,
               min_band: float = 2e-3) -> AlignedPair:
    """Align a pair by start-point detection and resample it at ``rate`` [Hz] (paper 000 §IV-B).

    The grid starts ``pre`` seconds before the simulation's detected motion start and ends at
    the earlier end of the two (shifted) streams. Raises :class:`AlignmentError` if a stream
    never moves or is too short.
    """
    if rate <= 0.0 or pre < 0.0:
        raise AlignmentError(f"rate must be positive and pre non-negative (got {rate}, {pre})")
    _check_stream(pair.sim, "simulation")
    _check_stream(pair.real, "real")
    rest_until = pair.start + rest_before
    try:
        t0_sim = motion_start_time(pair.sim.t, pair.sim.q, rest_until, k, min_band)
    except AlignmentError as exc:
        raise AlignmentError(f"simulation: {exc}") from exc
    try:
        t0_real = motion_start_time(pair.real.t, pair.real.q, rest_until, k, min_band)
    except AlignmentError as exc:
        raise AlignmentError(f"real: {exc}") from exc
    shift = t0_real - t0_sim
    t_real = pair.real.t - shift
    begin = t0_sim - pre
    first = max(pair.sim.t[0], t_real[0])
    if begin < first - 1e-9:
        raise AlignmentError(f"the recording starts {t0_sim - first:.3f} s before the motion, "
                             f"less than pre = {pre} s")
    end = min(pair.sim.t[-1], t_real[-1])
    n = int(np.floor((end - begin) * rate + 1e-9)) + 1
    if n < MIN_GRID_SAMPLES:
        raise AlignmentError(f"only {max(n, 0)} samples after alignment")
    grid = begin + np.arange(n) / rate
    grid[-1] = min(grid[-1], end)
    return AlignedPair(
        trajectory_id=pair.trajectory_id, kind=pair.kind, t=grid,
        sim=resample(pair.sim.t, pair.sim.state, grid),
        real=resample(t_real, pair.real.state, grid),
        shift=float(shift), start_index=int(round(pre * rate)))


def align_all(pairs: Sequence[TrajectoryPair], rate: float = 100.0, pre: float = 0.3,
              kinds: Optional[Sequence[str]] = None,
              progress: Optional[Progress] = None) -> AlignmentSummary:
    """Align every pair (of the given ``kinds``, all if None); pairs that cannot be aligned are
    listed in ``skipped`` with the reason. ``progress`` may wrap the iteration (e.g. tqdm)."""
    selected = [p for p in pairs if kinds is None or p.kind in kinds]
    summary = AlignmentSummary()
    for pair in (progress(selected) if progress is not None else selected):
        try:
            summary.aligned.append(align_pair(pair, rate=rate, pre=pre))
        except AlignmentError as exc:
            summary.skipped.append(SkippedPair(pair.trajectory_id, pair.kind, str(exc)))
    return summary
