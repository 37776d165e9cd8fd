"""The guard's counters on /diagnostics, once per second, for nodes that publish no diagnostics
of their own (the others append :meth:`Guard.status` to theirs)."""
from __future__ import annotations

import rospy
from diagnostic_msgs.msg import DiagnosticArray

from sim2real_checks.guard import Guard


def node_guard(period: float = 1.0) -> Guard:
    """A Guard named after the running node that logs with rospy.logerr."""
    return Guard(rospy.get_name(), period=period, log=rospy.logerr)


class GuardDiagnostics:
    """Publishes ``guard.status()`` on /diagnostics at ``rate`` Hz while the node runs."""

    def __init__(self, guard: Guard, rate: float = 1.0) -> None:
        self.guard = guard
        self._publisher = rospy.Publisher("/diagnostics", DiagnosticArray, queue_size=5)
        self._timer = rospy.Timer(rospy.Duration(1.0 / rate), self._publish)

    def _publish(self, _event: rospy.timer.TimerEvent) -> None:
        msg = DiagnosticArray(status=[self.guard.status()])
        msg.header.stamp = rospy.Time.now()
        self.guard.publish(self._publisher, msg)     # quiet when it races the shutdown

    def shutdown(self) -> None:
        self._timer.shutdown()
