"""The robot's 1 kHz path in a process of its own (issue 39): :class:`ControlProcess` runs an
:class:`~panda_fci.fci_bridge.FciBridge` (franky's control loop, and the tick callback that
samples the trajectory and sets the reference of every 1 ms cycle) in a child process that does
nothing else, and offers the node the bridge's interface.

Why: franky runs libfranka's control loop in compiled code and calls the Python tick callback on
a thread of its own, so the loop itself never waits on Python; but the reference each cycle
tracks is set by that callback, which needs the interpreter lock. In the node's process the lock
is shared with rospy's threads (publishing 1 kHz joint states, serialising, service and
subscriber callbacks), and a ROS thread holding it delays the reference: the arm then follows the
trajectory late. In the child no thread does ROS work: only the tick callback, a thread that
hands the robot states on, and one that answers the node's calls.

Between the two processes (a Unix socket pair each, :mod:`multiprocessing.connection` framing):

- calls: ``(method, args)`` of FciBridge (connect, start, command, move_to, hold, recover,
  close), answered ``("ok", result, error)`` or ``("raised", kind, message, reason, error)``,
  re-raised in the node as the same panda error with the same line;
- updates: every robot state as a :class:`~panda_fci.fci_bridge.RobotSample`, with the
  bridge's error, its dropped-state count and whether a trajectory runs; an update without a
  sample when the robot stops on an error.

If the node's process ends, the child sees the call socket close, stops the controller (the
robot holds, libfranka stops it on its own when the connection goes) and exits. If the child
ends, the node reports it as the robot's error.
"""
from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Optional

import numpy as np

from panda_sim2real import ConfigError, JointLimits, PandaError, PlannedTrajectory, TrajectoryRejected
from panda_fci.errors import RobotError
from panda_fci.fci_bridge import BridgeConfig, FciBridge, RobotSample, wait_for_end
from panda_fci.realtime_host import lock_memory, realtime_kernel, set_fifo_priority

GIL_SWITCH_INTERVAL = 0.0002   # s: hand the tick callback the interpreter within 0.2 ms
START_TIMEOUT = 30.0           # s for the child to import and answer its first call
CLOSE_TIMEOUT = 5.0            # s for the child to stop the controller and exit
FORWARD_POLL = 0.1             # s: the forwarder's wait for a state (it checks for a stop in between)
CALLS = ("connect", "start", "command", "move_to", "hold", "recover", "close")
RAISED = {"RobotError": RobotError, "TrajectoryRejected": TrajectoryRejected,
          "ConfigError": ConfigError, "ValueError": ValueError}


@dataclass(frozen=True)
class Update:
    """What the child tells the node per robot state (``sample``), or on an error (no sample)."""

    sample: Optional[RobotSample]
    error: Optional[str]
    dropped: int
    executing: bool


class ControlProcess:
    """FciBridge's interface, with the bridge in a child process (see the module docstring).

    Call :meth:`next_sample` from one consumer thread (it advances ``error``, ``dropped``,
    ``latest_q`` and the robot time :meth:`wait_for` waits on); the other methods from any
    thread."""

    def __init__(self, address: str, limits: JointLimits, config: BridgeConfig,
                 realtime: str = "enforce", lock_memory: bool = False, priority: int = 0) -> None:
        """``priority``: SCHED_FIFO priority of the child (1-99; 0: the node's own scheduling),
        so that only the 1 kHz path runs real-time and the ROS side need not."""
        self.address = address
        self.limits = limits
        self.config = config
        self.realtime_kernel = realtime_kernel()
        self.error: Optional[str] = None
        self.dropped = 0
        self.latest_q: Optional[np.ndarray] = None
        self.on_error: Callable[[str], None] = lambda message: None
        self._robot_time = -math.inf
        self._executing = False
        self._call_lock = threading.Lock()
        calls, child_calls = socket.socketpair()
        updates, child_updates = socket.socketpair()
        fds = (child_calls.fileno(), child_updates.fileno())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "panda_fci.control_process", *map(str, fds)], pass_fds=fds)
        child_calls.close()
        child_updates.close()
        self._calls = Connection(calls.detach())
        self._updates = Connection(updates.detach())
        try:
            self._call("init", dict(address=address, limits=limits, config=config,
                                    realtime=realtime, lock=lock_memory, priority=priority),
                       timeout=START_TIMEOUT)
        except PandaError:
            self.close()
            raise

    # -- FciBridge's calls, run in the child --------------------------------------------------
    def connect(self, timeout: float = 0.0) -> None:
        self._call("connect", timeout, timeout=timeout + START_TIMEOUT)

    def start(self) -> None:
        self._call("start")

    def command(self, trajectory: PlannedTrajectory, idle_only: bool = False) -> PlannedTrajectory:
        return self._call("command", trajectory, idle_only)

    def move_to(self, goal: np.ndarray) -> PlannedTrajectory:
        return self._call("move_to", np.asarray(goal, dtype=float))

    def hold(self) -> None:
        self._call("hold")

    def recover(self) -> str:
        return self._call("recover", timeout=START_TIMEOUT)

    def close(self) -> None:
        """Stop the controller and the child (killed if it does not exit in time)."""
        if self.process.poll() is None:
            try:
                self._call("close", timeout=CLOSE_TIMEOUT)
            except RobotError:                   # it ended meanwhile, or does not answer
                pass
            try:
                self.process.wait(timeout=CLOSE_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._calls.close()
        self._updates.close()

    # -- what the node reads -------------------------------------------------------------------
    def next_sample(self, timeout: Optional[float] = None) -> Optional[RobotSample]:
        """The next robot state (None after ``timeout`` seconds without one); an error the
        child reports meanwhile is taken into ``error`` and passed to ``on_error`` once."""
        deadline = time.monotonic() + (timeout or 0.0)
        while True:
            try:
                if not self._updates.poll(max(deadline - time.monotonic(), 0.0)):
                    return None
                update: Update = self._updates.recv()
            except (EOFError, OSError):
                self._lost_child()
                return None
            self.dropped = update.dropped
            self._set_error(update.error)
            if update.sample is not None:
                self._robot_time = update.sample.robot_time
                self._executing = update.executing
                self.latest_q = update.sample.q
                return update.sample

    def executing(self, robot_time: float) -> bool:
        """Was a trajectory being followed at the latest state (``robot_time`` is that state's)?"""
        return self._executing

    def wait_for(self, plan: PlannedTrajectory, timeout: float) -> None:
        """Wait until the states read by :meth:`next_sample` pass the end of ``plan`` (robot
        time); RobotError when the robot stops on an error meanwhile or ``timeout`` wall seconds
        pass first."""
        wait_for_end(plan, timeout, lambda: self._robot_time, lambda: self.error)

    # -- plumbing --------------------------------------------------------------------------------
    def _call(self, method: str, *args: Any, timeout: float = START_TIMEOUT) -> Any:
        with self._call_lock:
            try:
                self._calls.send((method, args))
                if not self._calls.poll(timeout):
                    # a late answer would be read as the next call's: end the child instead
                    self.process.kill()
                    message = (f"the control process did not answer {method} within "
                               f"{timeout:.0f} s and was stopped: restart the node")
                    self._set_error(message)
                    raise RobotError(message)
                answer = self._calls.recv()
            except (EOFError, OSError, BrokenPipeError):
                self._lost_child()
                raise RobotError(f"the control process ended ({self._exit_note()}): restart the "
                                 f"node") from None
        if answer[0] == "ok":
            _, result, error = answer
            self._set_error(error)
            return result
        _, kind, message, reason, error = answer
        self._set_error(error)
        cls = RAISED.get(kind, RobotError)
        raise cls(message, reason) if cls is TrajectoryRejected else cls(message)

    def _set_error(self, error: Optional[str]) -> None:
        if error is not None and error != self.error:
            self.error = error
            self.on_error(error)
        self.error = error

    def _lost_child(self) -> None:
        try:                              # its sockets closed: it has ended or is ending
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        self._set_error(f"the control process ended ({self._exit_note()})")

    def _exit_note(self) -> str:
        code = self.process.poll()
        return "still running" if code is None else f"exit code {code}"


def _answer(bridge: FciBridge, method: str, args: tuple) -> tuple:
    """Run one of the bridge's calls; its result or the panda error it raised, as a message."""
    try:
        if method not in CALLS:
            raise RobotError(f"the control process has no call {method!r}")
        result = getattr(bridge, method)(*args)
    except PandaError as exc:
        return ("raised", type(exc).__name__, str(exc), getattr(exc, "reason", ""), bridge.error)
    except ValueError as exc:
        return ("raised", "ValueError", str(exc), "", bridge.error)
    return ("ok", result, bridge.error)


class _Child:
    """The child's side: the bridge, the forwarder of its states, the answers to the calls."""

    def __init__(self, calls: Connection, updates: Connection) -> None:
        self.calls, self.updates = calls, updates
        self.bridge: Optional[FciBridge] = None
        self._send_lock = threading.Lock()
        self._stop = threading.Event()

    def serve(self) -> None:
        method, args = self.calls.recv()
        try:
            if method != "init":
                raise RobotError(f"the control process needs 'init' first, got {method!r}")
            settings = dict(args[0])
            priority = settings.pop("priority")
            if priority:                         # before any thread: they inherit it
                set_fifo_priority(priority, "~control_priority")
            if settings.pop("lock"):
                lock_memory()
            self.bridge = FciBridge(**settings)
        except PandaError as exc:
            self.calls.send(("raised", type(exc).__name__, str(exc), "", None))
            return
        self.bridge.on_error = lambda message: self._push(None)
        self.calls.send(("ok", None, None))
        forwarder = threading.Thread(target=self._forward, name="fci_forward", daemon=True)
        forwarder.start()
        try:
            while True:
                try:
                    method, args = self.calls.recv()
                except (EOFError, OSError):          # the node is gone: stop the robot's motion
                    self.bridge.close()
                    break
                answer = _answer(self.bridge, method, args)
                self.calls.send(answer)
                if method == "close":
                    break
        finally:
            self._stop.set()
            forwarder.join(timeout=1.0)

    def _forward(self) -> None:
        """Every robot state to the node, with the bridge's error and counters."""
        bridge = self.bridge
        while not self._stop.is_set():
            sample = bridge.next_sample(timeout=FORWARD_POLL)
            if sample is not None:
                self._push(sample, bridge.executing(sample.robot_time))

    def _push(self, sample: Optional[RobotSample], executing: bool = False) -> None:
        try:
            with self._send_lock:
                self.updates.send(Update(sample, self.bridge.error, self.bridge.dropped, executing))
        except (BrokenPipeError, OSError):          # the node is gone; serve() closes the bridge
            self._stop.set()


def main() -> None:
    """The child: ``python -m panda_fci.control_process CALLS_FD UPDATES_FD``."""
    # roslaunch's Ctrl-C reaches the whole process group: the node closes its child in order
    # (and a node that is gone closes its sockets, which ends the child too)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    calls, updates = (Connection(int(fd)) for fd in sys.argv[1:3])
    try:
        _Child(calls, updates).serve()
    finally:
        calls.close()
        updates.close()
    os._exit(0)                                  # franky's threads do not hold the exit up


if __name__ == "__main__":
    # run the module under its own name: what the child pickles must unpickle in the node
    from panda_fci.control_process import main as child_main
    child_main()
