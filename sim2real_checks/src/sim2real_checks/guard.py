"""A node's guard over what it reads and publishes: every rejected input and every withheld
output is counted per (topic, reason) and logged as one error line per topic, reason and
``period``, whatever the detail text (the counts of the suppressed lines are in the next line and
in the diagnostics)."""
from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar

import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rospy.exceptions import ROSException

from sim2real_checks.errors import Rejected
from sim2real_checks.finite import non_finite_fields

T = TypeVar("T")
OUTPUT_REASON = "non_finite_output"


def reason_of(exc: BaseException) -> str:
    """The reason code of an exception: :class:`Rejected`'s own, else its class name."""
    return getattr(exc, "reason", None) or type(exc).__name__


@dataclass
class _Line:
    last: float = -float("inf")
    suppressed: int = 0


@dataclass
class Guard:
    """Counters and throttled error lines of one node. ``log`` receives each line (rospy.logerr
    on a node); ``clock`` is monotonic seconds."""

    node: str
    period: float = 1.0
    log: Optional[Callable[[str], None]] = None
    clock: Callable[[], float] = time.monotonic
    counts: Counter = field(default_factory=Counter)
    _lines: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reject(self, topic: str, exc: BaseException, action: str = "rejected") -> None:
        """Count ``exc`` against ``topic`` and log it unless this topic and reason were logged
        less than ``period`` ago."""
        reason = reason_of(exc)
        with self._lock:
            self.counts[(topic, reason)] += 1
            line = self._lines.setdefault((topic, reason), _Line())
            now = self.clock()
            if now - line.last < self.period:
                line.suppressed += 1
                return
            more = f" (+{line.suppressed} more since the last line)" if line.suppressed else ""
            line.last, line.suppressed = now, 0
        self._emit(f"{self.node}: {topic}: {action} [{reason}]: {exc}{more}")

    def check(self, topic: str, checker: Callable[[Any], T], msg: Any,
              errors: tuple[type[BaseException], ...] = (Rejected,)) -> Optional[T]:
        """``checker(msg)``, or None after counting and logging the rejection."""
        try:
            return checker(msg)
        except errors as exc:
            self.reject(topic, exc)
            return None

    def publish(self, publisher: Any, msg: Any, values: Optional[np.ndarray] = None) -> bool:
        """Publish ``msg`` unless a float of it is NaN/Inf (then count, log, return False).
        ``values``, when given, is an array holding every float of ``msg`` (the state a
        JointStateLayout.message was built from): the hot path checks it in one vector
        operation instead of walking the message's fields, which only a failure then does to
        name them. A publisher closed by the node's shutdown drops the message quietly."""
        bad = [] if values is not None and np.isfinite(values).all() else non_finite_fields(msg)
        if bad:
            self.reject(publisher.resolved_name,
                        Rejected(OUTPUT_REASON, f"NaN/Inf in {', '.join(bad[:3])}"),
                        action="not published")
            return False
        try:
            publisher.publish(msg)
        except ROSException:
            # rospy closes its topics in a pre-shutdown hook, before is_shutdown() turns true
            if rospy.core.is_shutdown_requested():
                return False
            raise
        return True

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    def status(self, name: Optional[str] = None) -> DiagnosticStatus:
        """A DiagnosticStatus with one counter per topic and reason (WARN once any was counted)."""
        with self._lock:
            items = sorted(self.counts.items())
        total = sum(n for _, n in items)
        return DiagnosticStatus(
            level=DiagnosticStatus.WARN if total else DiagnosticStatus.OK,
            name=name or f"{self.node}: input and output checks",
            message=f"{total} messages rejected or withheld" if total else "no bad messages",
            hardware_id=self.node,
            values=[KeyValue(key=f"{topic} [{reason}]", value=str(n))
                    for (topic, reason), n in items])

    def _emit(self, line: str) -> None:
        if self.log is not None:
            self.log(line)
