"""The one reader of sensor_msgs/JointState topics in bags, for every package (pair bags, the
identification data of diffnea_ros, the kernels of kernel_manager_ros).

* :func:`read_joint_states`: the JointStates of one topic of any bag, mapped by joint name;
* :class:`JointStateCollector`: its per-topic part, for readers that take several topics in one
  pass (:func:`panda_pairs.pair_bag.read_pairs`);
* :class:`BagFile`: a recording open for reading (one bag file, or the split files ``rosbag
  record --split`` wrote, read as one bag), where everything rosbag raises for a missing,
  corrupt or truncated file is one :class:`BagError` line.

Messages are validated by :class:`~sim2real_checks.joint_state.JointStateLayout`; the ones
left out are counted by reason (:data:`DROP_REASONS`), never returned.
"""
from __future__ import annotations

import dataclasses
import struct
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence

import genpy
import numpy as np
import rosbag

from panda_sim2real import label_topic
from panda_pairs.bag_set import resolve_bags
from panda_pairs.errors import BagError
from sim2real_checks import (InvalidJointState, JointStateLayout, MALFORMED, MISSING_JOINT, NON_FINITE,
                             check_fields)

JOINT_STATE_TYPE = "sensor_msgs/JointState"
DUPLICATE_STAMP = "duplicate_stamp"    # a second message with the same header stamp
DROP_REASONS = (MALFORMED, MISSING_JOINT, NON_FINITE, DUPLICATE_STAMP)

# Everything rosbag and genpy raise for a file that is not a readable bag.
BAG_READ_ERRORS = (rosbag.ROSBagException, struct.error, OSError, EOFError, ValueError,
                   genpy.DeserializationError, zlib.error)


def unreadable_bag(path: str, exc: Exception) -> BagError:
    """The one-line error for a file rosbag cannot read (one of BAG_READ_ERRORS)."""
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return BagError(f"cannot read bag {path}: not a bag or corrupt ({detail})")


@contextmanager
def _rosbag_errors(path: str) -> Iterator[None]:
    """Turns what rosbag raises for the bag ``path`` into a BagError (wrap rosbag calls only)."""
    try:
        yield
    except rosbag.ROSBagUnindexedException as exc:
        raise BagError(f"cannot read bag {path}: no index, it looks truncated (recording "
                       f"interrupted?); try 'rosbag reindex {path}'") from exc
    except BAG_READ_ERRORS as exc:
        raise unreadable_bag(path, exc) from exc


class BagFile:
    """A recording open for reading (use it in a ``with`` block): one bag file or the split files
    of one recording (:func:`~panda_pairs.bag_set.resolve_bags`), read one after the other as
    one bag. ``topics`` maps each topic to its message type; ``files`` are the files read;
    ``unreadable`` maps each ``.bag.active`` file that has no index (its recorder was killed) to
    why it is left out. BagError for a missing, corrupt or truncated closed file, also while
    reading, or when no file is readable."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.bags = resolve_bags(path)
        self.files: list[str] = []
        self.unreadable: dict[str, str] = {}
        self.topics: dict[str, str] = {}
        for name in self.bags.all_files:
            try:
                topics = _file_topics(name)
            except BagError as exc:
                if name not in self.bags.unclosed:
                    raise
                self.unreadable[name] = str(exc)
                continue
            self.files.append(name)
            for topic_name, kind in topics.items():
                self.topics.setdefault(topic_name, kind)
        if not self.files:
            raise BagError(next(iter(self.unreadable.values())))

    @property
    def unclosed(self) -> tuple[str, ...]:
        """The ``.bag.active`` files of the recording, read or not."""
        return self.bags.unclosed

    def _read(self, topics: list[str], raw: bool) -> Iterator[Any]:
        for name in self.files:
            with _rosbag_errors(name):
                with rosbag.Bag(name, "r") as bag:
                    yield from bag.read_messages(topics=topics, raw=raw)

    def messages(self, topics: Iterable[str]) -> Iterator[tuple[str, Any]]:
        """(topic, message) of ``topics`` in bag time order (file after file)."""
        topics = list(topics)
        if not topics:
            return   # rosbag would read every topic
        for name, msg, _ in self._read(topics, raw=False):
            yield name, msg

    def raw_messages(self, topics: Iterable[str]) -> Iterator[tuple[str, Any, Any]]:
        """(topic, serialised message, bag time) of ``topics`` in bag time order, for copying
        into another bag with ``write(topic, raw, time, raw=True)``; :func:`decode` reads one."""
        topics = list(topics)
        if not topics:
            return
        for entry in self._read(topics, raw=True):
            yield entry[0], entry[1], entry[2]

    def start_time(self) -> float:
        """The bag time of its first message [s]."""
        with _rosbag_errors(self.files[0]):
            with rosbag.Bag(self.files[0], "r") as bag:
                return float(bag.get_start_time())

    def close(self) -> None:
        """Nothing stays open between reads; kept for the ``with`` block."""

    def __enter__(self) -> "BagFile":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def _file_topics(path: str) -> dict[str, str]:
    """Topic -> message type of one bag file; BagError if rosbag cannot read it."""
    with _rosbag_errors(path):
        with rosbag.Bag(path, "r") as bag:
            info = bag.get_type_and_topic_info().topics
    return {name: i.msg_type for name, i in info.items()}


def decode(raw: Any) -> Any:
    """The message of a serialised (raw) bag entry."""
    return raw[4]().deserialize(raw[1])


@dataclass(frozen=True)
class JointStates:
    """The usable JointStates of one topic, sorted by stamp, one per stamp: t (N,) [s] header
    stamps; q, qd, tau (N, dof) float64 in the order of ``joint_names`` (qd None if a message
    had no velocities, read without ``require_velocity``). ``dropped`` counts the messages left
    out by reason (DROP_REASONS); ``label`` names the robot when the bag says (else None)."""

    joint_names: tuple[str, ...]
    t: np.ndarray
    q: np.ndarray
    qd: Optional[np.ndarray]
    tau: np.ndarray
    dropped: dict[str, int]
    label: Optional[str] = None

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @property
    def skipped(self) -> int:
        """Messages left out, for any reason."""
        return sum(self.dropped.values())


class JointStateCollector:
    """The JointState messages of one topic: :meth:`add` keeps the well-formed ones (names and
    arrays match, see :func:`check_fields`) and counts the others; :meth:`build` maps them by
    name to a joint order."""

    def __init__(self, require_velocity: bool = True) -> None:
        self.require_velocity = require_velocity
        self.malformed = 0
        self._messages: list[tuple[float, tuple[str, ...], Sequence[float], Sequence[float],
                                   Sequence[float]]] = []

    def __len__(self) -> int:
        """Well-formed messages so far."""
        return len(self._messages)

    def add(self, msg: Any) -> None:
        names = tuple(msg.name)
        try:
            check_fields(names, msg.position, msg.velocity, msg.effort, self.require_velocity)
        except InvalidJointState:
            self.malformed += 1
            return
        self._messages.append((msg.header.stamp.to_sec(), names, msg.position, msg.velocity,
                               msg.effort))

    def common_names(self) -> tuple[str, ...]:
        """The joints of every well-formed message, in the order of the first one."""
        if not self._messages:
            return ()
        common = set(self._messages[0][1]).intersection(*(set(m[1]) for m in self._messages))
        return tuple(name for name in self._messages[0][1] if name in common)

    def seen_names(self) -> set[str]:
        """The joints of any well-formed message."""
        return set().union(*(set(m[1]) for m in self._messages))

    def build(self, joint_names: Sequence[str]) -> JointStates:
        """The messages as :class:`JointStates` in the order ``joint_names``; a message missing
        one of them or with NaN/Inf in their values is dropped, as is a repeated stamp."""
        layout = JointStateLayout(joint_names)
        dropped = dict.fromkeys(DROP_REASONS, 0)
        dropped[MALFORMED] = self.malformed
        stamps, rows = [], []
        for stamp, names, position, velocity, effort in self._messages:
            try:
                rows.append(layout.arrays(names, position, velocity, effort,
                                          self.require_velocity))
            except InvalidJointState as exc:
                dropped[exc.reason] += 1
                continue
            stamps.append(stamp)
        shape = (len(rows), layout.dof)
        t = np.asarray(stamps, dtype=np.float64)
        q, tau = (np.asarray([r[i] for r in rows], dtype=np.float64).reshape(shape)
                  for i in (0, 2))
        measured = all(r[1] is not None for r in rows)
        qd = np.asarray([r[1] for r in rows], dtype=np.float64).reshape(shape) if measured \
            else None
        order = np.argsort(t, kind="stable")
        keep = np.ones(t.shape[0], dtype=bool)
        keep[1:] = np.diff(t[order]) > 0.0
        dropped[DUPLICATE_STAMP] += int(np.count_nonzero(~keep))
        order = order[keep]
        return JointStates(layout.joint_names, t[order], q[order],
                           None if qd is None else qd[order], tau[order], dropped)


def read_joint_states(path: str, topic: str, joint_names: Optional[Sequence[str]] = None,
                      require_velocity: bool = True) -> JointStates:
    """The JointStates of ``topic`` in the bag ``path``, mapped by name to ``joint_names``
    (default: the joints of every well-formed message, in the order of the first), with the
    robot's label from the bag (:func:`~panda_sim2real.bag_layout.label_topic`) if it has one.

    Without ``require_velocity`` an empty velocity field means "not measured" (then qd is None).
    BagError (one line) for a missing, corrupt or truncated bag, a topic that is not in it or
    is not JointState, no well-formed message, or a wanted joint that no message names.
    """
    label: Optional[str] = None
    collector = JointStateCollector(require_velocity)
    with BagFile(path) as bag:
        if topic not in bag.topics:
            have = ", ".join(t for t, kind in bag.topics.items() if kind == JOINT_STATE_TYPE)
            raise BagError(f"bag {path} has no topic {topic}; JointState topics in it: "
                           f"{have or 'none'}")
        if bag.topics[topic] != JOINT_STATE_TYPE:
            raise BagError(f"topic {topic} in {path} carries {bag.topics[topic]}, not "
                           f"{JOINT_STATE_TYPE}")
        label_name = label_topic(topic)
        for name, msg in bag.messages([topic] + ([label_name] if label_name in bag.topics
                                                 else [])):
            if name == topic:
                collector.add(msg)
            elif label is None:
                label = str(getattr(msg, "data", "")).strip() or None
    if not len(collector):
        raise BagError(f"bag {path}: no well-formed JointState message on {topic} "
                       f"({collector.malformed} malformed)")
    if joint_names is None:
        joint_names = collector.common_names()
        if not joint_names:
            raise BagError(f"bag {path}: no joint is in every message on {topic}; give the "
                           f"joint names")
    seen = collector.seen_names()
    missing = [name for name in joint_names if name not in seen]
    if missing:
        raise BagError(f"topic {topic} in {path} has no data for joint(s) {', '.join(missing)} "
                       f"(it has {', '.join(sorted(seen))})")
    return dataclasses.replace(collector.build(joint_names), label=label)
