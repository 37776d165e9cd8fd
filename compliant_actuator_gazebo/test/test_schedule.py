"""When the compliant manager publishes a stream's arrays (schedule.StreamSchedule), on a fake
clock: every frame of a stream at the publish rate goes out, whether the frames come steadily,
with jitter, or in bursts (the timer sampling it replaces lost one frame of every two then);
faster streams are held to the rate; partial frames wait a period; nothing new, nothing out."""
import numpy as np
import pytest

from compliant_actuator_gazebo.schedule import BURST, StreamSchedule

JOINTS = ("a", "b", "c")
PERIOD = 0.01


def run(frame_times, timer_phase=0.0, duration=None):
    """Feed one frame (every joint, 0.1 ms apart) at each time and tick the node's timer every
    period; the times of the publications."""
    schedule = StreamSchedule(JOINTS, PERIOD)
    events = [(t + 1e-4 * k, "sample", joint) for t in frame_times
              for k, joint in enumerate(JOINTS)]
    end = duration if duration is not None else max(frame_times) + 3 * PERIOD
    events += [(t, "timer", None) for t in np.arange(timer_phase, end, PERIOD)]
    published = []
    for now, kind, joint in sorted(events, key=lambda e: e[0]):
        if kind == "sample":
            schedule.sample(joint, now)
        if schedule.due(now):
            schedule.published(now)
            published.append(now)
    return np.array(published)


@pytest.mark.parametrize("phase", [0.0, 0.00005, 0.0003, 0.005])
def test_steady_frames_at_the_rate_all_go_out_whatever_the_timer_phase(phase):
    frames = np.arange(200) * PERIOD
    jitter = np.random.default_rng(1).uniform(-0.3, 0.3, frames.size) * PERIOD
    assert run(frames + jitter, timer_phase=phase).size == frames.size


def test_frames_in_bursts_all_go_out():
    """Two frames back to back every two periods (the average is the rate): 100 %, not 50 %."""
    frames = np.sort(np.concatenate([np.arange(100) * 2 * PERIOD,
                                     np.arange(100) * 2 * PERIOD + 0.0005]))
    assert run(frames).size == frames.size
    four = np.sort(np.concatenate([np.arange(50) * 4 * PERIOD + k * 0.0003 for k in range(4)]))
    assert run(four).size == four.size


def test_a_faster_stream_is_held_to_the_rate():
    frames = np.arange(2000) * PERIOD / 10            # 10x the rate for 2 s
    published = run(frames)
    assert 200 <= published.size <= 200 + BURST + 2   # the catch-up allowance at the start
    window = 0.1                                      # any 10 periods: 10 + the allowance
    counts = [np.sum((published >= t) & (published < t + window)) for t in frames[::50]]
    assert max(counts) <= 10 + BURST + 1
    assert np.median(np.diff(published)) == pytest.approx(PERIOD, abs=1e-4)


def test_a_slower_stream_goes_out_frame_by_frame():
    frames = np.arange(50) * 3 * PERIOD
    published = run(frames)
    assert published.size == frames.size
    assert np.all(published - frames[:published.size] < 1e-3)    # as each frame completes


def test_partial_frames_wait_a_period_and_nothing_new_is_not_published():
    schedule = StreamSchedule(JOINTS, PERIOD)
    assert not schedule.due(0.0)
    for joint in JOINTS:
        schedule.sample(joint, 0.0)
    assert schedule.due(0.0)
    schedule.published(0.0)
    assert not schedule.due(0.5)                      # nothing new: nothing to publish
    schedule.sample("a", 1.0)                         # b and c stopped reporting
    assert not schedule.due(1.0 + 0.9 * PERIOD)
    assert schedule.due(1.0 + PERIOD)


def test_the_clock_going_back_does_not_block_the_stream():
    schedule = StreamSchedule(JOINTS, PERIOD)
    for t in (100.0, 100.01):
        for joint in JOINTS:
            schedule.sample(joint, t)
        assert schedule.due(t)
        schedule.published(t)
    for joint in JOINTS:                              # a simulation restarted at t = 0
        schedule.sample(joint, 0.0)
    assert schedule.due(0.0)


def test_a_period_must_be_positive():
    with pytest.raises(ValueError, match="period"):
        StreamSchedule(JOINTS, 0.0)
