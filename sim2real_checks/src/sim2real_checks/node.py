"""The start-up every sim2real node shares (CONTRIBUTING.md, "Nodes"): init, build the node
from its parameters (the package's error stops it with one [FATAL] line and exit status 1),
spin until shutdown, then close what it holds (physics, a robot connection)."""
from __future__ import annotations

import gc
from typing import Any, Callable, Optional, TypeVar

import rospy

NodeT = TypeVar("NodeT")
ConfigT = TypeVar("ConfigT")


def run_node(name: str, make: Callable[[], NodeT], spin: Callable[[NodeT], None] = lambda node: rospy.spin(),
             close: Callable[[NodeT], None] = lambda node: None,
             errors: tuple[type[Exception], ...] = (), freeze_gc: bool = False) -> NodeT:
    """``rospy.init_node(name)`` (a SIGINT while it runs: a quiet exit 0), ``node = make()``
    (one of ``errors``: one [FATAL] line, exit 1), ``spin(node)``, ``close(node)``; returns the
    node after shutdown. ``freeze_gc``: move the objects made at start-up out of the garbage
    collector's scans (short pauses on a 1 kHz path)."""
    try:
        rospy.init_node(name)
    except rospy.ROSInitException:
        if rospy.core.is_shutdown_requested():
            raise SystemExit(0) from None
        raise
    try:
        node = make()
    except errors as exc:
        rospy.logfatal(f"{rospy.get_name()}: {' '.join(str(exc).split())}")
        raise SystemExit(1) from None
    if freeze_gc:
        gc.collect()
        gc.freeze()
    try:
        spin(node)
    except rospy.ROSException:     # interrupted, or a publish raced the shutdown's closing
        if not rospy.core.is_shutdown_requested():
            raise
    finally:
        close(node)
    return node


def mapping_param(name: str, from_mapping: Callable[[Any, str], ConfigT],
                  from_file: Callable[[Optional[str]], ConfigT]) -> ConfigT:
    """A node's structured configuration (CONTRIBUTING.md, "Nodes"): the YAML mapping the launch
    file loaded under the private parameter ``name`` (``<rosparam file=... ns="name"/>``), read by
    ``from_mapping(value, source)``. A string is the old way, a file path (kept for one release,
    with a warning): ``from_file(path)``; an absent or empty parameter: ``from_file(None)``, the
    package's default file. Anything else is the package's error, raised by ``from_mapping``."""
    value = rospy.get_param(name, None)
    if value is None or value == "":
        return from_file(None)
    if isinstance(value, str):
        warn_deprecated_path(name, value)
        return from_file(value)
    return from_mapping(value, f"parameter {rospy.resolve_name(name)}")


def warn_deprecated_path(name: str, path: str) -> None:
    """The warning of a configuration parameter given as a file path (the old way, kept for one
    release): load the YAML in the launch file instead."""
    rospy.logwarn(f"{rospy.resolve_name(name)}: a file path is deprecated; load the YAML onto the "
                  f"parameter server in the launch file (<rosparam file=\"{path}\" ns=\"{name.lstrip('~')}\"/>)")
