"""Reading a recorded pair bag back into trajectory pairs (paper 000 §IV-B, "a data set of
simulated and real trajectory pairs with position, velocity and effort data for each of the robot
joints").

The bag layout is the one :mod:`panda_sim2real.pairs` writes:

* ``/sim/joint_states``, ``/real/joint_states``: sensor_msgs/JointState, stamp = robot time;
* ``/pairs/event``: panda_sim2real/PairEvent, one START (planned start ``s``) and one END
  (``s + duration``) per trajectory id;
* ``/real/label`` (optional): std_msgs/String naming what the "real" robot was.

The samples of each robot with stamps in ``[s, s + duration]`` belong to that trajectory.
"""
from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass, field
from typing import Optional, Sequence

import genpy
import numpy as np
import rosbag

from panda_sim2real.bag_layout import (DEFAULT_LABEL, EVENT_END, EVENT_START, EVENTS, JOINT_STATES,
                                     LABEL, REAL_NS, SIM_NS, topic)
from panda_sim2real.errors import BagError
from panda_sim2real.ros_conversions import measurement_from_msg

SIM_JOINT_STATES = topic(SIM_NS, JOINT_STATES)
REAL_JOINT_STATES = topic(REAL_NS, JOINT_STATES)


# Everything rosbag and genpy raise for a file that is not a readable bag.
BAG_READ_ERRORS = (rosbag.ROSBagException, struct.error, OSError, EOFError, ValueError,
                    genpy.DeserializationError, zlib.error)


def unreadable_bag(path: str, exc: Exception) -> BagError:
    """The one-line error for a file rosbag cannot read (one of BAG_READ_ERRORS)."""
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return BagError(f"cannot read bag {path}: not a bag or corrupt ({detail})")


@dataclass(frozen=True)
class Stream:
    """Joint states of one robot: times t (N,) [s]; q [rad], qd [rad/s], tau [N m], each (N, dof)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @property
    def state(self) -> np.ndarray:
        """The samples as rows [q, qd, tau] of shape (N, 3 dof) (paper 000 §IV: 21 columns)."""
        return np.concatenate([self.q, self.qd, self.tau], axis=1)

    def window(self, start: float, end: float) -> "Stream":
        """The samples with ``start <= t <= end`` (``t`` must be sorted)."""
        lo = int(np.searchsorted(self.t, start, side="left"))
        hi = int(np.searchsorted(self.t, end, side="right"))
        return Stream(self.t[lo:hi], self.q[lo:hi], self.qd[lo:hi], self.tau[lo:hi])

    @classmethod
    def empty(cls, dof: int) -> "Stream":
        return cls(np.zeros(0), np.zeros((0, dof)), np.zeros((0, dof)), np.zeros((0, dof)))


@dataclass(frozen=True)
class TrajectoryPair:
    """One planned trajectory as executed by the simulation and by the (stand-in) real robot."""

    trajectory_id: int
    kind: str
    start: float
    end: float
    sim: Stream
    real: Stream

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class PairRecording:
    """All complete pairs of one bag, in order of their start, and what had to be left out."""

    path: str
    joint_names: tuple[str, ...]
    pairs: list[TrajectoryPair] = field(default_factory=list)
    skipped_messages: int = 0
    unpaired_events: int = 0
    label: str = DEFAULT_LABEL

    def kinds(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for pair in self.pairs:
            counts[pair.kind] = counts.get(pair.kind, 0) + 1
        return counts


class _StreamBuilder:
    """Collects JointState messages of one robot; malformed ones are counted, not kept."""

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names = list(joint_names)
        self.rows: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]] = []
        self.skipped = 0

    def add(self, msg) -> None:
        try:
            m = measurement_from_msg(msg, self.joint_names)
        except (KeyError, IndexError, ValueError, TypeError):
            self.skipped += 1  # a joint is missing or an array is too short
            return
        if not (np.isfinite(m.stamp) and np.all(np.isfinite(m.position))
                and np.all(np.isfinite(m.velocity)) and np.all(np.isfinite(m.effort))):
            self.skipped += 1
            return
        self.rows.append((m.stamp, m.position, m.velocity, m.effort))

    def build(self) -> Stream:
        dof = len(self.joint_names)
        if not self.rows:
            return Stream.empty(dof)
        t = np.fromiter((r[0] for r in self.rows), dtype=float, count=len(self.rows))
        q, qd, tau = (np.stack([r[i] for r in self.rows]) for i in (1, 2, 3))
        order = np.argsort(t, kind="stable")
        t, q, qd, tau = t[order], q[order], qd[order], tau[order]
        keep = np.ones(len(t), dtype=bool)
        keep[1:] = np.diff(t) > 0.0  # a repeated stamp is a duplicate message
        self.skipped += int(np.count_nonzero(~keep))
        return Stream(t[keep], q[keep], qd[keep], tau[keep])


def _pair_events(events: dict[int, dict[int, tuple[float, str]]]) -> tuple[list, int]:
    """(id, kind, start, end) of every id with one START before its END; the rest is counted."""
    complete, unpaired = [], 0
    for trajectory_id, by_kind in events.items():
        if (EVENT_START in by_kind and EVENT_END in by_kind
                and by_kind[EVENT_END][0] > by_kind[EVENT_START][0]):
            start, kind = by_kind[EVENT_START]
            complete.append((trajectory_id, kind, start, by_kind[EVENT_END][0]))
        else:
            unpaired += 1
    complete.sort(key=lambda item: (item[2], item[0]))
    return complete, unpaired


def read_pairs(path: str, joint_names: Sequence[str], label: Optional[str] = None,
               sim_topic: str = SIM_JOINT_STATES) -> PairRecording:
    """Read the trajectory pairs of a pair bag in one pass (paper 000 §IV-B data set).

    ``sim_topic`` is the simulation side of the pairs: ``/sim/joint_states`` or, to measure
    what the residual publisher achieved live, ``/sim/joint_states_realistic``.

    JointState messages missing a joint or containing NaN are skipped and counted
    (``skipped_messages``). ``label`` names the "real" robot; a ``/real/label`` message in the bag
    takes precedence, and without either it is "reality stand-in".
    Raises :class:`BagError` (one line naming the file) for a missing, corrupt or truncated bag,
    missing topics, or a bag without any complete START/END pair.
    """
    if not os.path.exists(path):
        raise BagError(f"bag not found: {path}")
    names = tuple(joint_names)
    sim, real = _StreamBuilder(names), _StreamBuilder(names)
    events: dict[int, dict[int, tuple[float, str]]] = {}
    bag_label: Optional[str] = None
    try:
        with rosbag.Bag(path, "r") as bag:
            topics = bag.get_type_and_topic_info().topics
            required = (sim_topic, REAL_JOINT_STATES, EVENTS)
            missing = [t for t in required if t not in topics]
            if missing:
                raise BagError(f"bag {path} lacks the topic(s) {', '.join(missing)}; "
                               f"is it a pair recording?")
            wanted = list(required) + ([LABEL] if LABEL in topics else [])
            for name, msg, _ in bag.read_messages(topics=wanted):
                if name == sim_topic:
                    sim.add(msg)
                elif name == REAL_JOINT_STATES:
                    real.add(msg)
                elif name == EVENTS:
                    events.setdefault(int(msg.trajectory_id), {}).setdefault(
                        int(msg.event), (msg.header.stamp.to_sec(), str(msg.kind)))
                elif name == LABEL and bag_label is None:
                    bag_label = str(msg.data).strip() or None
    except rosbag.ROSBagUnindexedException as exc:
        raise BagError(f"bag {path} has no index, it looks truncated (recording interrupted?); "
                       f"try 'rosbag reindex {path}'") from exc
    except BAG_READ_ERRORS as exc:
        raise unreadable_bag(path, exc) from exc
    complete, unpaired = _pair_events(events)
    if not complete:
        raise BagError(f"bag {path} has no complete START/END pair on {EVENTS}")
    sim_stream, real_stream = sim.build(), real.build()
    pairs = [TrajectoryPair(tid, kind, start, end, sim_stream.window(start, end),
                            real_stream.window(start, end))
             for tid, kind, start, end in complete]
    return PairRecording(path=path, joint_names=names, pairs=pairs,
                         skipped_messages=sim.skipped + real.skipped, unpaired_events=unpaired,
                         label=bag_label or label or DEFAULT_LABEL)
