"""The start-up every node of the package shares: init, build from parameters (a bad parameter or
file stops the node with one [FATAL] line and exit status 1), then spin until shutdown."""
from __future__ import annotations

from typing import Callable, TypeVar

import rospy

from kernel_manager_ros.errors import KernelError

NodeT = TypeVar("NodeT")


def run_node(name: str, make: Callable[[], NodeT], spin: Callable[[NodeT], None]) -> NodeT:
    """``rospy.init_node(name)``, ``node = make()``, ``spin(node)``; returns the node after
    shutdown."""
    rospy.init_node(name)
    try:
        node = make()
    except KernelError as exc:
        rospy.logfatal(f"{rospy.get_name()}: {exc}")
        raise SystemExit(1) from None
    try:
        spin(node)
    except rospy.ROSInterruptException:
        pass
    return node
