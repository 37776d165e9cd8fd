"""The start-up every sim2real node shares (CONTRIBUTING.md, "Nodes"): init, build the node
from its parameters (the package's error stops it with one [FATAL] line and exit status 1),
spin until shutdown, then close what it holds (physics, a robot connection).

The spin runs in a thread of its own while the main thread only waits: Python runs signal
handlers in the main thread, and rospy's SIGINT handler closes every connection, taking the lock
of a queued publisher; run inside a ``publish`` on the main thread (which holds that lock) it
deadlocked, and roslaunch had to SIGKILL the node (seen on the Panda simulator, the clock source,
in kernel_manager_ros's pipeline.test under load)."""
from __future__ import annotations

import faulthandler
import gc
import threading
from typing import Any, Callable, Optional, TypeVar

import rospy

NodeT = TypeVar("NodeT")
ConfigT = TypeVar("ConfigT")
HANG_DUMP_AFTER = 10.0
"""s after shutdown began at which a node still running prints every thread's stack on stderr
(roslaunch escalates to SIGTERM at 15 s): where a node hangs at shutdown shows in the log."""


def run_node(name: str, make: Callable[[], NodeT], spin: Callable[[NodeT], None] = lambda node: rospy.spin(),
             close: Callable[[NodeT], None] = lambda node: None,
             errors: tuple[type[Exception], ...] = (), freeze_gc: bool = False) -> NodeT:
    """``rospy.init_node(name)`` (a SIGINT while it runs: a quiet exit 0), ``node = make()``
    (one of ``errors``: one [FATAL] line, exit 1), ``spin(node)``, ``close(node)``; returns the
    node after shutdown (a node still running HANG_DUMP_AFTER s after shutdown began prints its
    threads' stacks). ``freeze_gc``: move the objects made at start-up out of the garbage
    collector's scans (short pauses on a 1 kHz path)."""
    try:
        rospy.init_node(name)
    except rospy.ROSInitException:
        if rospy.core.is_shutdown_requested():
            raise SystemExit(0) from None
        raise
    rospy.on_shutdown(lambda: faulthandler.dump_traceback_later(HANG_DUMP_AFTER, exit=False))
    try:
        node = make()
    except errors as exc:
        rospy.logfatal(f"{rospy.get_name()}: {' '.join(str(exc).split())}")
        raise SystemExit(1) from None
    if freeze_gc:
        gc.collect()
        gc.freeze()
    try:
        _spin_off_the_main_thread(spin, node)
    except rospy.ROSException:     # interrupted, or a publish raced the shutdown's closing
        if not rospy.core.is_shutdown_requested():
            raise
    finally:
        close(node)
    return node


def _spin_off_the_main_thread(spin: Callable[[NodeT], None], node: NodeT) -> None:
    """``spin(node)`` in the thread "spin"; the main thread waits for it, free to run signal
    handlers (module docstring). What the spin raises is raised here."""
    raised: list[BaseException] = []

    def target() -> None:
        try:
            spin(node)
        except BaseException as exc:       # SystemExit too: re-raised in the main thread
            raised.append(exc)

    worker = threading.Thread(target=target, name="spin", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)
    if raised:
        raise raised[0]


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
