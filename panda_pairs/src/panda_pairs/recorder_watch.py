"""Is the recorder still recording? The pair runner watches the ``rosbag record`` node by name:
it waits until the node subscribes to the topics it must record, then asks the node's own XML-RPC
server for its process id every ``period`` seconds. A refused connection, another process id or
no answer twice in a row means the recorder is gone (a killed process stays registered at the
master, so the master's lists alone cannot tell)."""
from __future__ import annotations

import http.client
import threading
import time
import xmlrpc.client
from typing import Any, Callable, Optional, Protocol, Sequence

from panda_sim2real import PandaError


class RecorderLost(PandaError):
    """The recorder died, was restarted or stopped answering: what is recorded ends here."""


class Master(Protocol):
    """The part of :class:`rosgraph.Master` the watch uses."""

    def lookupNode(self, node_name: str) -> str: ...          # noqa: N802 (ROS API)

    def getSystemState(self) -> Any: ...                       # noqa: N802 (ROS API)


class _TimeoutTransport(xmlrpc.client.Transport):
    """An XML-RPC transport whose connections time out after ``timeout`` seconds."""

    def __init__(self, timeout: float) -> None:
        super().__init__()
        self._timeout = timeout

    def make_connection(self, host: Any) -> http.client.HTTPConnection:
        connection = super().make_connection(host)
        connection.timeout = self._timeout
        return connection


def node_pid(uri: str, caller_id: str, timeout: float) -> int:
    """The process id a ROS node at ``uri`` reports (its XML-RPC ``getPid``). OSError when it
    cannot be reached (TimeoutError when it does not answer), ValueError for a bad answer."""
    proxy = xmlrpc.client.ServerProxy(uri, transport=_TimeoutTransport(timeout))
    try:
        code, message, pid = proxy.getPid(caller_id)
    except (xmlrpc.client.Error, http.client.HTTPException) as exc:
        raise ValueError(f"bad answer from {uri}: {exc}") from exc
    if code != 1:
        raise ValueError(f"{uri} refused getPid: {message}")
    return int(pid)


def subscribes(master: Master, node: str, topics: Sequence[str]) -> bool:
    """Does the master list ``node`` as a subscriber of every topic in ``topics``?"""
    subscribers = {topic: set(nodes) for topic, nodes in master.getSystemState()[1]}
    return all(node in subscribers.get(topic, ()) for topic in topics)


class RecorderWatch:
    """Watches the node ``name`` (the recorder) from :meth:`start` until :meth:`stop`;
    :attr:`lost` says why it is gone (None while it records)."""

    def __init__(self, master: Master, name: str, caller_id: str, period: float = 0.5,
                 timeout: float = 2.0,
                 probe: Callable[[str, str, float], int] = node_pid) -> None:
        self.master = master
        self.name = name
        self.caller_id = caller_id
        self.period = period
        self.timeout = timeout
        self._probe = probe
        self._uri: Optional[str] = None
        self._pid: Optional[int] = None
        self._unanswered = 0
        self._lost: Optional[str] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @property
    def lost(self) -> Optional[str]:
        return self._lost

    @property
    def pid(self) -> Optional[int]:
        return self._pid

    def wait_until_subscribed(self, topics: Sequence[str], give_up: Callable[[], bool],
                              poll: float = 0.1) -> bool:
        """Block until the recorder subscribes to every topic of ``topics`` (False if
        ``give_up()`` first)."""
        while not give_up():
            if subscribes(self.master, self.name, topics):
                return True
            time.sleep(poll)
        return False

    def start(self) -> None:
        """Find the recorder (RecorderLost if it is not there) and check it in the background."""
        try:
            self._uri = self.master.lookupNode(self.name)
            self._pid = self._probe(self._uri, self.caller_id, self.timeout)
        except Exception as exc:     # the master's or the node's errors: either way not there
            raise RecorderLost(f"the recorder {self.name} cannot be reached: {exc}") from exc
        self._thread = threading.Thread(target=self._run, name="recorder_watch", daemon=True)
        self._thread.start()

    def check(self) -> Optional[str]:
        """One check now: why the recorder is gone, or None (also sets :attr:`lost`)."""
        if self._lost is not None or self._uri is None:
            return self._lost
        try:
            pid = self._probe(self._uri, self.caller_id, self.timeout)
        except TimeoutError:
            self._unanswered += 1
            if self._unanswered >= 2:
                self._lost = (f"the recorder {self.name} (pid {self._pid}) has not answered "
                              f"for {2 * self.timeout:g} s")
            return self._lost
        except (OSError, ValueError) as exc:
            self._lost = f"the recorder {self.name} (pid {self._pid}) died ({exc})"
            return self._lost
        self._unanswered = 0
        if pid != self._pid:
            self._lost = (f"the recorder {self.name} was restarted (pid {self._pid} -> {pid}); "
                          f"a restarted recorder writes new files")
        return self._lost

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            if self.check() is not None:
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + self.period)
