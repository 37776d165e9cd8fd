"""The start-up every node of the package shares: panda_sim2real's (init, build from parameters,
spin), where a KernelError stops the node with one [FATAL] line and exit status 1."""
from __future__ import annotations

from typing import Callable, TypeVar

from panda_sim2real.node_runner import run_node as run_any_node

from kernel_manager_ros.errors import KernelError

NodeT = TypeVar("NodeT")


def run_node(name: str, make: Callable[[], NodeT], spin: Callable[[NodeT], None]) -> NodeT:
    """``rospy.init_node(name)``, ``node = make()``, ``spin(node)``; returns the node after
    shutdown."""
    return run_any_node(name, make, spin, errors=(KernelError,))
