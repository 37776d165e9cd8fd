"""The pair runner's stamp check (stamp_check.py): a stream's progress is its latest plausible
header stamp; stamps ahead of the receive clock or going backwards are counted and ignored."""
import pytest

from panda_pairs.stamp_check import AHEAD, BACKWARDS, StampCheck


def test_plausible_stamps_are_the_streams_progress():
    check = StampCheck(tolerance=0.2)
    assert check.latest is None and not check.past(0.0)
    for t in (1.0, 1.001, 1.002):
        assert check.observe(t, received=t + 0.003) is None     # a lagging robot is fine
    assert check.latest == 1.002 and check.past(1.002) and not check.past(1.0021)
    assert check.observe(1.002, received=1.01) is None          # a repeated stamp is no jump
    assert check.jump_count == 0


def test_one_future_stamp_does_not_end_a_trajectory():
    check = StampCheck(tolerance=0.2)
    check.observe(10.0, received=10.0)
    assert check.observe(1010.0, received=10.001) == AHEAD
    assert check.latest == 10.0 and not check.past(12.0)       # the end at 12 s is not reached
    # the stream goes on normally afterwards: no backwards jumps against the ignored stamp
    for k in range(1, 2001):
        assert check.observe(10.0 + k * 1e-3, received=10.0 + k * 1e-3) is None
    assert check.past(12.0)
    assert check.jumps == {AHEAD: 1, BACKWARDS: 0}


def test_tolerance_bounds_how_far_ahead_a_stamp_may_be():
    check = StampCheck(tolerance=0.2)
    assert check.observe(5.2, received=5.0) is None             # 0.2 s ahead: accepted
    assert check.observe(5.5, received=5.1) == AHEAD            # 0.4 s ahead: a jump
    assert StampCheck(tolerance=0.0).observe(5.0001, received=5.0) == AHEAD
    with pytest.raises(ValueError, match="tolerance must be >= 0"):
        StampCheck(tolerance=-0.1)
    with pytest.raises(ValueError, match="tolerance must be >= 0"):
        StampCheck(tolerance=float("nan"))


def test_backwards_stamps_are_counted_and_ignored():
    check = StampCheck(tolerance=0.2)
    check.observe(3.0, received=3.0)
    assert check.observe(2.5, received=3.01) == BACKWARDS
    assert check.observe(0.0, received=3.02) == BACKWARDS
    assert check.latest == 3.0
    assert check.observe(3.03, received=3.03) is None and check.latest == 3.03
    assert check.jumps == {AHEAD: 0, BACKWARDS: 2} and check.jump_count == 2
