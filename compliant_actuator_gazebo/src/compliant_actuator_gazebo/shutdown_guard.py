"""The guard of compliant_sim and compliant_manager: sim2real_checks' Guard whose publish also
drops, quietly, a message that races the node's shutdown. rospy closes its topics in a
pre-shutdown hook, before rospy.is_shutdown() turns true, so a callback publishing in between
raised "publish() to a closed topic" (the kernel manager had it in 8 shutdowns of 20 at 1 kHz
steps; kernel_manager_ros has the twin of this module). To go once Guard.publish asks
rospy.core.is_shutdown_requested() itself. Also :func:`init_node`, which a SIGINT during
rospy.init_node ends quietly."""
from __future__ import annotations

from typing import Any

import rospy
from rospy.exceptions import ROSException
from sim2real_checks.guard import Guard


class ShutdownGuard(Guard):
    def publish(self, publisher: Any, msg: Any) -> bool:
        try:
            return super().publish(publisher, msg)
        except ROSException:
            if rospy.core.is_shutdown_requested():
                return False
            raise


def node_guard() -> ShutdownGuard:
    """A ShutdownGuard named after the running node that logs with rospy.logerr."""
    return ShutdownGuard(rospy.get_name(), log=rospy.logerr)


def init_node(name: str) -> bool:
    """``rospy.init_node(name)``; False when the node was shut down before it completed."""
    try:
        rospy.init_node(name)
    except rospy.ROSInitException:
        if rospy.core.is_shutdown_requested():
            return False
        raise
    return True
