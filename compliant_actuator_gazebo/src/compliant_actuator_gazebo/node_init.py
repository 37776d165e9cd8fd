"""The start of the package's nodes: ``rospy.init_node``, which a SIGINT while it runs (a launch
shut down at once) ends quietly instead of with a ROSInitException traceback."""
from __future__ import annotations

import rospy


def init_node(name: str) -> bool:
    """``rospy.init_node(name)``; False when the node was shut down before it completed."""
    try:
        rospy.init_node(name)
    except rospy.ROSInitException:
        if rospy.core.is_shutdown_requested():
            return False
        raise
    return True
