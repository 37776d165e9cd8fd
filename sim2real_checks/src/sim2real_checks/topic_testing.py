"""For the packages' rostests: the listener harness. ``wait_for`` polls a condition (wall clock);
``TopicRecorder`` subscribes to topics and keeps every message with its receive time, thread-safe;
``joint_state_message`` builds the sensor_msgs/JointState a test feeds a node. Imports without a master;
only subscribing needs one."""
from __future__ import annotations

import threading
import time
from collections import deque
from itertools import count as counter
from typing import Any, Callable, Iterable, Mapping, Optional

import rospy
from sensor_msgs.msg import JointState


def wait_for(predicate: Callable[[], Any], timeout: float, period: float = 0.02) -> bool:
    """True once ``predicate()`` holds; False after ``timeout`` wall seconds (the predicate is
    tried once more after the deadline) or at rospy shutdown. Its exceptions propagate."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline or rospy.is_shutdown():
            return False
        time.sleep(period)
    return True


class TopicRecorder:
    """Every message of some topics with its receive time (``clock()``, monotonic by default),
    per topic in arrival order. ``keep``: only the newest messages are stored (``count`` still
    counts all). ``lock`` is reentrant: hold it to read several topics consistently."""

    def __init__(self, topics: Mapping[str, type], queue_size: int = 100,
                 queue_sizes: Optional[Mapping[str, int]] = None, keep: Optional[int] = None,
                 clock: Callable[[], float] = time.monotonic, subscribe: bool = True) -> None:
        self.lock = threading.RLock()
        self._now = clock
        self._seq = counter()
        self._entries: dict[str, deque[tuple[int, float, Any]]] = {t: deque(maxlen=keep) for t in topics}
        self._counts = dict.fromkeys(topics, 0)
        sizes = dict(queue_sizes or {})
        self.subscribers: dict[str, Any] = {}
        if subscribe:           # False: the bookkeeping alone (``record``), without a master
            self.subscribers = {
                topic: rospy.Subscriber(topic, msg_type, self.record, callback_args=topic,
                                        queue_size=sizes.get(topic, queue_size))
                for topic, msg_type in topics.items()}

    @property
    def topics(self) -> list[str]:
        return list(self._entries)

    def record(self, msg: Any, topic: str) -> None:
        """The subscribers' callback: store ``msg`` of ``topic`` with its receive time."""
        with self.lock:         # the time under the lock: in arrival order
            self._entries[topic].append((next(self._seq), self._now(), msg))
            self._counts[topic] += 1

    def received(self, topic: str) -> list[tuple[float, Any]]:
        """(receive time, message) of ``topic``, oldest first."""
        with self.lock:
            return [(t, msg) for _, t, msg in self._entries[topic]]

    def messages(self, topic: str) -> list[Any]:
        with self.lock:
            return [msg for _, _, msg in self._entries[topic]]

    def latest(self, topic: str) -> Any:
        """The newest message of ``topic``, None before the first."""
        with self.lock:
            entries = self._entries[topic]
            return entries[-1][2] if entries else None

    def count(self, topic: Optional[str] = None) -> int:
        """Messages received on ``topic`` (all topics: None) since the start or ``clear``."""
        with self.lock:
            return self._counts[topic] if topic is not None else sum(self._counts.values())

    def counts(self) -> dict[str, int]:
        with self.lock:
            return dict(self._counts)

    def snapshot(self) -> dict[str, list[Any]]:
        """The messages of every topic, read at one instant."""
        with self.lock:
            return {topic: [msg for _, _, msg in entries] for topic, entries in self._entries.items()}

    def clear(self, *topics: str) -> None:
        """Forget the messages (and counts) of ``topics`` (none given: of every topic)."""
        with self.lock:
            for topic in topics or list(self._entries):
                self._entries[topic].clear()
                self._counts[topic] = 0

    def take(self) -> list[tuple[str, Any]]:
        """(topic, message) of every topic in arrival order; then ``clear()``."""
        with self.lock:
            merged = sorted((seq, topic, msg) for topic, entries in self._entries.items()
                            for seq, _, msg in entries)
            self.clear()
        return [(topic, msg) for _, topic, msg in merged]

    def connected(self, topics: Optional[Iterable[str]] = None) -> bool:
        """Whether each subscription (of ``topics``; None: all) has a publisher connected."""
        names = self.subscribers if topics is None else topics
        return all(self.subscribers[t].get_num_connections() > 0 for t in names)

    def close(self) -> None:
        """Unregister the subscribers (the messages stay readable)."""
        for sub in self.subscribers.values():
            sub.unregister()


def joint_state_message(stamp: float, names: Iterable[str], q: Iterable[float], qd: Iterable[float],
                tau: Iterable[float]) -> JointState:
    """A JointState stamped ``stamp`` (s) with positions ``q``, velocities ``qd``, efforts ``tau``."""
    msg = JointState()
    msg.header.stamp = rospy.Time.from_sec(stamp)
    msg.name = list(names)
    msg.position, msg.velocity, msg.effort = list(q), list(qd), list(tau)
    return msg
