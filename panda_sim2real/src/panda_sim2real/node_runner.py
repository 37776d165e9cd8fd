"""The start-up every node of the package shares: init, build from parameters (a bad parameter,
file or robot stops the node with one [FATAL] line and exit status 1), spin until shutdown, then
close what the node holds (physics, the robot connection)."""
from __future__ import annotations

from typing import Callable, TypeVar

import rospy

from panda_sim2real.errors import PandaError

NodeT = TypeVar("NodeT")


def run_node(name: str, make: Callable[[], NodeT], spin: Callable[[NodeT], None],
             close: Callable[[NodeT], None] = lambda node: None,
             errors: tuple[type[Exception], ...] = (PandaError,)) -> NodeT:
    """``rospy.init_node(name)``, ``node = make()`` (one of ``errors``: [FATAL] line, exit 1),
    ``spin(node)``, ``close(node)``; returns the node after shutdown."""
    try:
        rospy.init_node(name)
    except rospy.ROSInitException:
        if rospy.core.is_shutdown_requested():      # SIGINT while starting: a quiet end
            raise SystemExit(0) from None
        raise
    try:
        node = make()
    except errors as exc:
        rospy.logfatal(f"{rospy.get_name()}: {exc}")
        raise SystemExit(1) from None
    try:
        spin(node)
    except rospy.ROSException:     # interrupted, or a publish raced the shutdown's closing
        if not rospy.core.is_shutdown_requested():
            raise
    finally:
        close(node)
    return node
