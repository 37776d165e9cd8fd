"""Drive every topic the nodes under test subscribe to with :func:`hostile_cases` (at a steady
rate, then in a 1 kHz burst that alternates the cases), and watch what they do: which nodes died
or were restarted, which of their outputs carried NaN/Inf, how often each node logged an error
for one reason, and whether a good message afterwards still gives the right output."""
from __future__ import annotations

import copy
import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Optional
from xmlrpc.client import ServerProxy

import numpy as np
import rosgraph
import rosnode
import rospy
import rostopic
from genpy.message import fill_message_args
from rosgraph_msgs.msg import Log

from sim2real_checks.finite import non_finite_fields
from sim2real_checks.fuzz import hostile_cases

TAG = re.compile(r"\[([A-Za-z0-9_-]+)\]")
GUARD_LINE = re.compile(r"^\S+: (\S+): [a-z ]+ \[([A-Za-z0-9_-]+)\]")
"""A Guard's line, ``<node>: <topic>: rejected [<reason>]: ...``: throttled per topic and reason."""
NUMBERS = re.compile(r"[-+]?\d[\d.e+-]*")
JITTER = 0.05
"""Two lines of one reason count as one second apart when at least 1 - JITTER s apart. They are
timed by their stamp (when the node logged them) on wall-clock graphs, on arrival under
/use_sim_time (a simulated stamp is not the clock the nodes' throttle runs on): arrival times
carry the /rosout delivery's delays, which a loaded machine stretches past JITTER."""


@dataclass(frozen=True)
class Expectation:
    """After the fuzzing, ``send`` (fields of the topic's message type, as rostopic pub takes
    them) to ``topic`` gives, within ``timeout`` s, a message on ``output`` whose ``field``
    (a dotted path) equals ``value`` within ``tolerance``. The message is sent once (latched): a
    node that needs a history (a warm-up) must be set up for it in the test. Without ``output``, only the node's
    liveness and finite outputs are checked after ``send``."""

    topic: str
    send: dict
    output: str = ""
    field: str = ""
    value: Any = None
    tolerance: float = 1e-6
    timeout: float = 5.0


@dataclass
class Report:
    cases: dict = field(default_factory=dict)          # topic -> number of hostile messages
    dead: list = field(default_factory=list)            # nodes gone or restarted
    non_finite: dict = field(default_factory=dict)      # output topic -> count
    outputs: dict = field(default_factory=dict)         # output topic -> messages seen
    log_bursts: list = field(default_factory=list)      # (node, reason, gap s)
    unreached: list = field(default_factory=list)       # topics no node under test took
    error_lines: dict = field(default_factory=dict)     # node -> lines at WARN or above
    expectations: dict = field(default_factory=dict)    # topic -> "ok" or what went wrong


class GraphFuzzer:
    def __init__(self, nodes: list[str], exclude: list[str], rate: float, repeats: int,
                 burst: int, sim_time: bool = False) -> None:
        self.nodes = [rosgraph.names.script_resolve_name("/", n) for n in nodes]
        self.exclude = set(exclude)
        self.rate, self.repeats, self.burst = rate, repeats, burst
        self.report = Report()
        self._lock = threading.Lock()
        self._lines: dict[tuple[str, str], list[float]] = defaultdict(list)
        self._subscribers: list[rospy.Subscriber] = []
        self._capture: Optional[list[tuple[str, Any]]] = None
        self._pids: dict[str, Optional[int]] = {}
        self._stamped_lines = not sim_time        # see JITTER

    # --- the graph -------------------------------------------------------------------------
    def wait_for_nodes(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(n in rosnode.get_node_names() for n in self.nodes):
                break
            time.sleep(0.2)
        while time.monotonic() < deadline and self._silent_nodes():
            time.sleep(0.2)        # registered at init; their topics follow once built
        time.sleep(1.0)
        self._pids = {n: self._pid(n) for n in self.nodes}
        missing = [n for n, pid in self._pids.items() if pid is None] + self._silent_nodes()
        if missing:
            raise RuntimeError(f"nodes not up (or without topics) after {timeout:g} s: {missing}")

    def _silent_nodes(self) -> list[str]:
        """Nodes under test that neither publish (beyond /rosout) nor subscribe yet."""
        publishers, subscribers, _ = rosgraph.Master(rospy.get_name()).getSystemState()
        active = {n for t, names in publishers if t != "/rosout" for n in names}
        active |= {n for t, names in subscribers if t not in self.exclude for n in names}
        return [n for n in self.nodes if n not in active]

    def topics(self) -> tuple[dict[str, str], dict[str, str]]:
        """(subscribed, published) topics of the nodes under test -> type."""
        master = rosgraph.Master(rospy.get_name())
        publishers, subscribers, _ = master.getSystemState()
        types = dict(master.getTopicTypes())
        sub = {t: types[t] for t, names in subscribers
               if t in types and t not in self.exclude and set(names) & set(self.nodes)}
        pub = {t: types[t] for t, names in publishers
               if t in types and t != "/rosout" and set(names) & set(self.nodes)}
        return sub, pub

    def watch(self, published: dict[str, str]) -> None:
        """Count the non-finite messages of every output and the nodes' log lines."""
        for topic_name in published:
            cls, _, _ = rostopic.get_topic_class(topic_name)
            if cls is not None:
                self._subscribers.append(rospy.Subscriber(
                    topic_name, cls, self._on_output, callback_args=topic_name, queue_size=2000))
        self._subscribers.append(rospy.Subscriber("/rosout", Log, self._on_log, queue_size=5000))

    def _on_output(self, msg: Any, topic_name: str) -> None:
        header = getattr(msg, "_connection_header", None) or {}
        if header.get("callerid") == rospy.get_name():
            return          # the fuzzer's own message on a topic a node under test also publishes
        bad = bool(non_finite_fields(msg))
        with self._lock:
            self.report.outputs[topic_name] = self.report.outputs.get(topic_name, 0) + 1
            if bad:
                self.report.non_finite[topic_name] = self.report.non_finite.get(topic_name, 0) + 1
            if self._capture is not None:
                self._capture.append((topic_name, msg))

    def _on_log(self, msg: Log) -> None:
        node = rosgraph.names.script_resolve_name("/", msg.name)
        if node not in self.nodes or msg.level < Log.WARN:
            return
        guarded, tag = GUARD_LINE.match(msg.msg), TAG.search(msg.msg)
        if guarded:
            reason = f"{guarded.group(1)} [{guarded.group(2)}]"
        else:
            reason = tag.group(1) if tag else NUMBERS.sub("#", msg.msg)[:120]
        with self._lock:
            if not self._stamped_lines:
                self._lines[(node, reason)].append(time.monotonic())
            elif not msg.header.stamp.is_zero():    # an unstamped line is counted, not timed
                self._lines[(node, reason)].append(msg.header.stamp.to_sec())
            self.report.error_lines[node] = self.report.error_lines.get(node, 0) + 1

    # --- the fuzzing -----------------------------------------------------------------------
    def fuzz(self, topic_name: str, type_name: str, good: Optional[dict]) -> None:
        cls = rostopic.get_topic_class(topic_name)[0]
        base = cls()
        if good:
            fill_message_args(base, [good])
        cases = hostile_cases(base)
        publisher = rospy.Publisher(topic_name, cls, queue_size=self.burst + 10)
        if not self._wait_connected(publisher):
            self.report.unreached.append(topic_name)
            publisher.unregister()
            return
        period = 1.0 / self.rate
        sent = 0
        for case in cases:
            for _ in range(self.repeats):
                publisher.publish(_stamped_now(case.message))
                sent += 1
                time.sleep(period)
        burst_period = 0.001
        start = time.monotonic()
        for k in range(self.burst):
            publisher.publish(_stamped_now(cases[k % len(cases)].message))
            sent += 1
            lag = start + (k + 1) * burst_period - time.monotonic()
            if lag > 0:
                time.sleep(lag)
        self.report.cases[topic_name] = sent
        time.sleep(0.5)
        publisher.unregister()

    def check_expectation(self, expectation: Expectation) -> str:
        """Send the good message once (latched) and wait for an output message that matches."""
        cls = rostopic.get_topic_class(expectation.topic)[0]
        if cls is None:
            return f"{expectation.topic} has no publisher type"
        msg = cls()
        fill_message_args(msg, [expectation.send])
        publisher = rospy.Publisher(expectation.topic, cls, queue_size=10, latch=True)
        self._wait_connected(publisher)
        want = np.asarray(expectation.value, dtype=float)
        with self._lock:
            self._capture = []
        publisher.publish(msg)
        deadline = time.monotonic() + expectation.timeout
        result = f"no message on {expectation.output} within {expectation.timeout:g} s"
        while expectation.output and time.monotonic() < deadline:
            time.sleep(0.05)
            with self._lock:
                seen, self._capture = self._capture, []
            for topic_name, out in seen:
                if topic_name != expectation.output:
                    continue
                got = np.asarray(_field(out, expectation.field), dtype=float)
                if got.shape == want.shape and np.all(np.abs(got - want) <= expectation.tolerance):
                    deadline = 0.0
                    result = "ok"
                    break
                result = (f"{expectation.output}.{expectation.field} = "
                          f"{np.round(got, 4).tolist()}, expected {want.tolist()} "
                          f"± {expectation.tolerance:g}")
        if not expectation.output:
            time.sleep(1.0)
            result = "ok"
        with self._lock:
            self._capture = None
        publisher.unregister()
        key = f"{len(self.report.expectations)}: {expectation.topic} -> {expectation.output}"
        self.report.expectations[key] = result
        return result

    def finish(self) -> Report:
        """Liveness (same pid as at the start) and the log-rate verdicts."""
        for node in self.nodes:
            pid = self._pid(node)
            if pid is None or pid != self._pids.get(node):
                self.report.dead.append(node)
        with self._lock:
            for (node, reason), stamps in self._lines.items():
                gaps = np.diff(stamps)
                if gaps.size and gaps.min() < 1.0 - JITTER:
                    self.report.log_bursts.append((node, reason, float(gaps.min())))
        return self.report

    @staticmethod
    def _pid(node: str) -> Optional[int]:
        try:
            uri = rosnode.get_api_uri(rosgraph.Master(rospy.get_name()), node, skip_cache=True)
            if not uri:
                return None
            code, _, pid = ServerProxy(uri).getPid(rospy.get_name())
            return int(pid) if code == 1 else None
        except Exception:  # noqa: BLE001 - any failure to reach the node means it is gone
            return None

    @staticmethod
    def _wait_connected(publisher: rospy.Publisher, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while publisher.get_num_connections() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        return publisher.get_num_connections() > 0


def _stamped_now(msg: Any) -> Any:
    """``msg`` with a zero header stamp set to now, as a publisher stamps its messages (so that
    a stamp check does not hide the other cases; the far-future case keeps its stamp)."""
    header = getattr(msg, "header", None)
    if header is None or not hasattr(header, "stamp") or not header.stamp.is_zero():
        return msg
    msg = copy.copy(msg)
    msg.header = copy.copy(header)
    msg.header.stamp = rospy.Time.now()
    return msg


def _field(msg: Any, path: str) -> Any:
    value = msg
    for part in path.split(".") if path else []:
        value = getattr(value, part)
    return value
