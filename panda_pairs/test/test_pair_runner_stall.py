"""The pair runner's own clock bounds the wait for a trajectory's end: a robot that stops
reporting stops the run with StreamStalled naming it, instead of waiting forever; a robot that
reports an error stops it with RobotStopped."""
import threading

import pytest
import rospy

from panda_sim2real.msg import RobotState
from panda_pairs.pair_runner import PairRunner, RobotStopped, StreamStalled
from panda_pairs.stamp_check import StampCheck


def runner(latest_sim: float, latest_real: float) -> PairRunner:
    r = PairRunner.__new__(PairRunner)             # the wait alone: no master needed
    r._streams = {"/sim": "/sim/joint_states", "/real": "/real/joint_states"}
    r._checks = {"/sim": StampCheck(0.2, latest=latest_sim), "/real": StampCheck(0.2, latest=latest_real)}
    r._cond, r.recorder, r.stall_timeout, r._last_report = threading.Condition(), None, 10.0, 0.0
    r._robot_error = None
    r.report = lambda error=None: None
    return r


def test_a_stream_that_stops_reporting_stalls_the_run(monkeypatch):
    clock = iter([100.0 + 0.5 * k for k in range(100)])
    monkeypatch.setattr(rospy, "get_time", lambda: next(clock))
    monkeypatch.setattr(rospy, "is_shutdown", lambda: False)
    with pytest.raises(StreamStalled, match=r"/real/joint_states did not report 95\.000 s"):
        runner(latest_sim=96.0, latest_real=90.0)._wait_until(95.0)
    assert runner(latest_sim=96.0, latest_real=95.5)._wait_until(95.0)


def test_an_error_the_robot_reports_stops_the_run_mid_pair(monkeypatch):
    """fci_bridge's last_error (a reflex, a lost connection) stops the wait for the pair's end:
    the END is never published, so the pair stays incomplete; a cleared error ('') does not."""
    monkeypatch.setattr(rospy, "get_time", lambda: 95.2)
    monkeypatch.setattr(rospy, "is_shutdown", lambda: False)
    r = runner(latest_sim=96.0, latest_real=95.1)
    r._on_robot_state(RobotState(last_error="ControlException: ... communication_constraints_violation"))
    with pytest.raises(RobotStopped, match="communication_constraints_violation; the pair in progress "
                                           "stays incomplete"):
        r._wait_until(95.5)
    r._on_robot_state(RobotState(last_error=""))
    assert r._robot_error is None
