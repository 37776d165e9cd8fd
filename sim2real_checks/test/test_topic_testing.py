"""sim2real_checks.topic_testing without a master: wait_for, the recorder's bookkeeping (its
callback called directly), joint_state."""
from __future__ import annotations

import threading
import time

import pytest
import rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from sim2real_checks.topic_testing import TopicRecorder, joint_state_message, wait_for


def test_wait_for_true_once_the_predicate_holds() -> None:
    start = time.monotonic()
    assert wait_for(lambda: time.monotonic() > start + 0.05, 5.0, period=0.005)
    assert time.monotonic() - start < 1.0


def test_wait_for_false_after_the_timeout_having_tried_past_the_deadline() -> None:
    calls: list[float] = []

    def never() -> bool:
        calls.append(time.monotonic())
        return False
    start = time.monotonic()
    assert wait_for(never, 0.1, period=0.01) is False
    assert calls[-1] >= start + 0.1
    assert time.monotonic() - start < 1.0


def test_wait_for_lets_the_predicates_exception_through() -> None:
    def broken() -> bool:
        raise KeyError("joint")
    with pytest.raises(KeyError, match="joint"):
        wait_for(broken, 1.0)


def test_wait_for_stops_at_shutdown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rospy, "is_shutdown", lambda: True)
    start = time.monotonic()
    assert wait_for(lambda: False, 10.0) is False
    assert time.monotonic() - start < 1.0


def recorder(**options: object) -> TopicRecorder:
    ticks = iter(range(100, 10_000))
    return TopicRecorder({"/a": Float64, "/b": JointState}, subscribe=False,
                         clock=lambda: float(next(ticks)), **options)


def test_recorder_keeps_each_topic_in_order_with_receive_times() -> None:
    rec = recorder()
    assert rec.topics == ["/a", "/b"]
    assert rec.latest("/a") is None and rec.count() == 0
    a1, b1, a2 = Float64(1.0), JointState(), Float64(2.0)
    rec.record(a1, "/a")
    rec.record(b1, "/b")
    rec.record(a2, "/a")
    assert rec.messages("/a") == [a1, a2]
    assert rec.received("/a") == [(100.0, a1), (102.0, a2)]
    assert rec.latest("/a") is a2 and rec.latest("/b") is b1
    assert (rec.count("/a"), rec.count("/b"), rec.count()) == (2, 1, 3)
    assert rec.counts() == {"/a": 2, "/b": 1}
    assert rec.snapshot() == {"/a": [a1, a2], "/b": [b1]}
    with pytest.raises(KeyError):
        rec.record(a1, "/unknown")


def test_recorder_clear_and_take() -> None:
    rec = recorder()
    a1, b1, a2 = Float64(1.0), JointState(), Float64(2.0)
    for msg, topic in ((a1, "/a"), (b1, "/b"), (a2, "/a")):
        rec.record(msg, topic)
    rec.clear("/a")
    assert rec.messages("/a") == [] and rec.count("/a") == 0 and rec.messages("/b") == [b1]
    rec.record(a1, "/a")
    rec.record(a2, "/a")
    rec.record(b1, "/b")
    # arrival order across the topics; everything forgotten after
    assert rec.take() == [("/b", b1), ("/a", a1), ("/a", a2), ("/b", b1)]
    assert rec.count() == 0 and rec.take() == []
    rec.record(a1, "/a")
    rec.clear()
    assert rec.counts() == {"/a": 0, "/b": 0}


def test_recorder_keep_stores_the_newest_but_counts_all() -> None:
    rec = recorder(keep=2)
    values = [Float64(float(i)) for i in range(5)]
    for msg in values:
        rec.record(msg, "/a")
    assert rec.messages("/a") == values[-2:]
    assert rec.count("/a") == 5


def test_recorder_is_thread_safe() -> None:
    rec = TopicRecorder({"/a": Float64}, subscribe=False)

    def feed() -> None:
        for i in range(2000):
            rec.record(Float64(float(i)), "/a")
    threads = [threading.Thread(target=feed) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert rec.count("/a") == len(rec.messages("/a")) == 8000
    times = [t for t, _ in rec.received("/a")]
    assert times == sorted(times)
    with rec.lock:          # reentrant: a caller holds it across reads
        assert rec.count() == 8000


def test_recorder_without_subscribers_is_connected_vacuously_and_closes() -> None:
    rec = recorder()
    assert rec.subscribers == {}
    assert rec.connected()
    rec.close()


def test_joint_state() -> None:
    msg = joint_state_message(12.25, ("a", "b"), (1.0, 2.0), [0.5, 0.25], iter([3.0, 4.0]))
    assert isinstance(msg, JointState)
    assert msg.header.stamp == rospy.Time(12, 250_000_000)
    assert (msg.name, msg.position, msg.velocity, msg.effort) == (
        ["a", "b"], [1.0, 2.0], [0.5, 0.25], [3.0, 4.0])
