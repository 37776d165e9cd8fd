"""The fuzz driver's verdicts, without a master: a node logging faster than once per second for
one reason is caught whatever the numbers in the text, a restarted node counts as dead, and a
NaN output is counted."""
import math

from rosgraph_msgs.msg import Log
from sensor_msgs.msg import JointState

from sim2real_checks.graph_fuzzer import GraphFuzzer


def fuzzer(monkeypatch, pids):
    f = GraphFuzzer(["/a", "/b"], ["/clock"], rate=20, repeats=1, burst=10)
    monkeypatch.setattr(GraphFuzzer, "_pid", staticmethod(lambda node: pids[node]))
    f._pids = {"/a": 1, "/b": 2}
    return f


def test_log_rate_per_reason_and_liveness(monkeypatch):
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
