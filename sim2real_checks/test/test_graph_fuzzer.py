"""The fuzz driver's verdicts, without a master: a node logging faster than once per second for
one reason is caught whatever the numbers in the text, a restarted node counts as dead, and a
NaN output is counted."""
import math

import rospy
from rosgraph_msgs.msg import Log
from sensor_msgs.msg import JointState

from sim2real_checks.graph_fuzzer import GraphFuzzer


def fuzzer(monkeypatch, pids, sim_time=True):
    f = GraphFuzzer(["/a", "/b"], ["/clock"], rate=20, repeats=1, burst=10, sim_time=sim_time)
    monkeypatch.setattr(GraphFuzzer, "_pid", staticmethod(lambda node: pids[node]))
    f._pids = {"/a": 1, "/b": 2}
    return f


def test_log_rate_per_reason_and_liveness(monkeypatch):
    """Under /use_sim_time the lines are timed on arrival."""
    clock = iter([0.0, 0.3, 0.0, 1.2, 0.5, 2.0])
    monkeypatch.setattr("sim2real_checks.graph_fuzzer.time.monotonic", lambda: next(clock))
    f = fuzzer(monkeypatch, {"/a": 1, "/b": 3})
    f._on_log(Log(name="/a", level=Log.ERROR, msg="/a: x: rejected [bounds]: v 1e6"))
    f._on_log(Log(name="/a", level=Log.ERROR, msg="/a: x: rejected [bounds]: v 7"))     # 0.3 s
    f._on_log(Log(name="/b", level=Log.ERROR, msg="dropped sample 17 of 20"))
    f._on_log(Log(name="/b", level=Log.ERROR, msg="dropped sample 18 of 20"))           # 1.2 s
    f._on_log(Log(name="/a", level=Log.ERROR, msg="/a: y: rejected [bounds]: another topic"))
    f._on_log(Log(name="/a", level=Log.INFO, msg="info lines are not counted"))
    f._on_output(JointState(position=[math.nan]), "/out")
    f._on_output(JointState(position=[1.0]), "/out")
    report = f.finish()
    assert report.log_bursts == [("/a", "x [bounds]", 0.3)]    # per topic and reason
    assert report.dead == ["/b"]              # another pid: restarted
    assert report.non_finite == {"/out": 1} and report.outputs == {"/out": 2}


def stamped(name, text, stamp):
    msg = Log(name=name, level=Log.ERROR, msg=text)
    msg.header.stamp = rospy.Time.from_sec(stamp)
    return msg


def test_on_a_wall_clock_graph_lines_are_timed_by_their_stamp(monkeypatch):
    """Delivery delays (arrivals 0.9 s apart for lines logged 1.0 s apart) are no burst; lines
    logged 0.3 s apart are one, however late they arrive; an unstamped line is not timed."""
    clock = iter([0.0, 0.9, 5.0, 9.0, 9.5])
    monkeypatch.setattr("sim2real_checks.graph_fuzzer.time.monotonic", lambda: next(clock))
    f = fuzzer(monkeypatch, {"/a": 1, "/b": 2}, sim_time=False)
    f._on_log(stamped("/a", "/a: x: rejected [bounds]: v 1e6", 100.0))
    f._on_log(stamped("/a", "/a: x: rejected [bounds]: v 7 (+5 more since the last line)", 101.0))
    f._on_log(stamped("/b", "/b: y: rejected [size]: 3 values", 200.0))
    f._on_log(stamped("/b", "/b: y: rejected [size]: 5 values", 200.3))
    f._on_log(Log(name="/a", level=Log.ERROR, msg="/a: x: rejected [bounds]: unstamped"))
    report = f.finish()
    assert [(node, reason) for node, reason, _ in report.log_bursts] == [("/b", "y [size]")]
    assert abs(report.log_bursts[0][2] - 0.3) < 1e-6
    assert report.error_lines == {"/a": 3, "/b": 2}
