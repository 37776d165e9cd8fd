"""RobotClock: the robot's time mapped to host time by the fastest arrival, drift-bounded."""
import numpy as np
import pytest

from panda_fci.time_mapping import RobotClock


def test_offset_is_the_fastest_arrival_and_late_states_do_not_move_stamps():
    rng = np.random.default_rng(0)
    clock = RobotClock()
    offset = 1000.0
    robot_times = np.arange(0.0, 2.0, 0.001)
    delays = 0.0002 + rng.exponential(0.0003, robot_times.size)
    delays[500:520] += 0.02                           # a burst of late states
    stamps = [clock.observe(t, t + offset + d) for t, d in zip(robot_times, delays)]
    # after the first states the stamp is within the smallest delay of the true host time
    err = np.asarray(stamps[100:]) - (robot_times[100:] + offset)
    assert np.all(err >= 0.0) and np.max(err) < 0.0006
    assert np.all(np.diff(stamps) > 0)                # monotonic: 1 ms apart, never reordered


def test_a_drifting_robot_clock_is_followed():
    clock = RobotClock(drift=1e-4)
    rate = 1.0 + 50e-6                                # the robot clock runs 50 ppm slow
    for k in range(20000):
        t = k * 0.001
        stamp = clock.observe(t, 5.0 + t * rate + 0.0002)
    assert stamp == pytest.approx(5.0 + t * rate + 0.0002, abs=1e-4)


def test_a_robot_clock_that_jumps_back_restarts_the_estimate_and_converts_both_ways():
    clock = RobotClock()
    with pytest.raises(ValueError, match="no robot state seen"):
        clock.to_host(0.0)
    clock.observe(100.0, 500.0)
    clock.observe(3.0, 600.0)                          # the robot restarted
    assert clock.to_host(3.5) == pytest.approx(600.5)
    assert clock.to_robot(600.5) == pytest.approx(3.5)
