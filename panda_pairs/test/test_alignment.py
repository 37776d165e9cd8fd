"""Start-point detection and alignment (paper 000 §IV-B) on synthetic shifted signals."""
import numpy as np
import pytest

from panda_pairs.alignment import (AlignmentError, align_all, align_pair, detect_motion_start,
                                    motion_start_time, resample)
from panda_pairs.pair_bag import Stream, TrajectoryPair

RATE = 100.0
DOF = 7
MOVE_AT = 0.5          # the move starts rest_before = 0.5 s after the planned start
SHIFT = 0.037          # the "real" robot lags by 37 ms
DURATION = 3.0


def smooth_move(t, t0, length=1.2, amplitude=None):
    """Quintic rest-to-rest move of every joint from 0 to ``amplitude`` starting at ``t0``."""
    amplitude = np.linspace(0.3, -0.5, DOF) if amplitude is None else amplitude
    s = np.clip((t - t0) / length, 0.0, 1.0)
    p = 10 * s**3 - 15 * s**4 + 6 * s**5
    dp = (30 * s**2 - 60 * s**3 + 30 * s**4) / length
    return p[:, None] * amplitude, dp[:, None] * amplitude


def make_stream(start, t0, noise=0.0, rng=None, still=False, stamp_phase=0.0):
    t = start + stamp_phase + np.arange(int(DURATION * RATE)) / RATE
    q, qd = smooth_move(t, t0)
    if still:
        q, qd = np.zeros_like(q), np.zeros_like(qd)
    tau = 5.0 * qd + 1.0
    if noise:
        q = q + rng.normal(0.0, noise, q.shape)
        qd = qd + rng.normal(0.0, noise, qd.shape)
        tau = tau + rng.normal(0.0, 10 * noise, tau.shape)
    return Stream(t, q, qd, tau)


def make_pair(start=10.0, still_real=False, seed=1):
    rng = np.random.default_rng(seed)
    sim = make_stream(start, start + MOVE_AT)
    real = make_stream(start, start + MOVE_AT + SHIFT, noise=1e-4, rng=rng, still=still_real)
    return TrajectoryPair(7, "multi", start, start + DURATION, sim, real)


def test_detect_motion_start_finds_the_first_sample_outside_the_band():
    t = np.arange(300) / RATE
    q, _ = smooth_move(t, 1.0)
    i = detect_motion_start(t, q, rest_until=0.5)
    assert t[i] >= 1.0
    assert np.max(np.abs(q[i])) > 2e-3 >= np.max(np.abs(q[i - 1]))
    assert t[i - 1] < motion_start_time(t, q, 0.5) <= t[i]


def test_detected_shift_is_within_one_sample():
    aligned = align_pair(make_pair(), rate=RATE, pre=0.3)
    assert abs(aligned.shift - SHIFT) < 1.0 / RATE
    # the sub-sample refinement does better than a whole sample on this clean signal
    assert abs(aligned.shift - SHIFT) < 0.3 / RATE


def test_resampled_grids_are_equal_and_uniform():
    aligned = align_pair(make_pair(), rate=RATE, pre=0.3)
    assert aligned.sim.shape == aligned.real.shape == (len(aligned.t), 3 * DOF)
    np.testing.assert_allclose(np.diff(aligned.t), 1.0 / RATE, atol=1e-9)
    # the detected start is where the first joint leaves the 2 mrad band (a little after the
    # planned start of the slowly accelerating quintic move)
    detected = aligned.t[aligned.start_index]
    assert 10.0 + MOVE_AT < detected < 10.0 + MOVE_AT + 0.15
    assert np.max(np.abs(aligned.sim[aligned.start_index, :DOF])) == pytest.approx(2e-3, rel=1e-6)
    assert aligned.t[0] == pytest.approx(aligned.t[aligned.start_index] - 0.3, abs=1e-9)
    # after the shift the two positions agree up to the noise and the residual shift error
    assert np.max(np.abs(aligned.sim[:, :DOF] - aligned.real[:, :DOF])) < 0.01


def test_a_stream_that_never_moves_raises():
    with pytest.raises(AlignmentError, match="never leaves"):
        align_pair(make_pair(still_real=True))
    t = np.arange(100) / RATE
    with pytest.raises(AlignmentError):
        detect_motion_start(t, np.zeros((100, DOF)), rest_until=0.5)


def test_too_short_streams_raise_and_are_skipped_by_align_all():
    pair = make_pair()
    short = TrajectoryPair(8, "single", pair.start, pair.end, pair.sim,
                           Stream(pair.real.t[:3], pair.real.q[:3], pair.real.qd[:3],
                                  pair.real.tau[:3]))
    with pytest.raises(AlignmentError):
        align_pair(short)
    summary = align_all([pair, short], rate=RATE)
    assert [p.trajectory_id for p in summary.aligned] == [7]
    assert [s.trajectory_id for s in summary.skipped] == [8]


def test_resample_is_linear_interpolation_of_all_columns():
    t = np.array([0.0, 1.0, 3.0])
    x = np.array([[0.0, 10.0], [1.0, 20.0], [5.0, 0.0]])
    grid = np.array([0.0, 0.5, 2.0, 3.0])
    expected = np.stack([np.interp(grid, t, x[:, c]) for c in range(2)], axis=1)
    np.testing.assert_allclose(resample(t, x, grid), expected)
