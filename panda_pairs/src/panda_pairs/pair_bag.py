"""Reading a recorded pair bag back into trajectory pairs (paper 000 §IV-B, "a data set of
simulated and real trajectory pairs with position, velocity and effort data for each of the robot
joints").

The bag layout is the one :mod:`panda_pairs.pairs` writes:

* ``/sim/joint_states``, ``/real/joint_states``: sensor_msgs/JointState, stamp = robot time;
* ``/pairs/event``: panda_sim2real/PairEvent, one START (planned start ``s``) and one END
  (``s + duration``) per trajectory id;
* ``/real/label`` (optional): std_msgs/String naming what the "real" robot was;
* ``/sim/joint_trajectory_controller/command``: the JointTrajectory each pair ran, stamped with
  its planned start (read with ``with_commands=True``).

The samples of each robot with stamps in ``[s, s + duration]`` belong to that trajectory.
A recording is one bag or the split files of one (:mod:`panda_pairs.bag_set`); only complete
pairs are returned, the others are listed with the reason (:mod:`panda_pairs.pair_completeness`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from panda_sim2real import (COMMAND, DEFAULT_LABEL, EVENTS, EVENT_END, EVENT_START, JOINT_STATES, LABEL,
                            REAL_NS, SIM_NS, JointLimits, PandaError, PlannedTrajectory, topic,
                            trajectory_from_msg)
from panda_pairs.errors import BagError
from panda_pairs.joint_state_bag import BagFile, JointStateCollector, JointStates
from panda_pairs.pair_completeness import IncompletePair, coverage_problem, gap_tolerance

SIM_JOINT_STATES = topic(SIM_NS, JOINT_STATES)
REAL_JOINT_STATES = topic(REAL_NS, JOINT_STATES)
SIM_COMMAND = topic(SIM_NS, COMMAND)
COMMAND_MATCH = 1e-3   # s: a command's planned start vs its pair's START


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
    def of(cls, states: JointStates) -> "Stream":
        """The samples of :class:`JointStates` read with velocities required."""
        return cls(states.t, states.q, states.qd, states.tau)


@dataclass(frozen=True)
class TrajectoryPair:
    """One planned trajectory as executed by the simulation and by the (stand-in) real robot;
    ``command`` is the trajectory both ran (absolute start), when read ``with_commands``."""

    trajectory_id: int
    kind: str
    start: float
    end: float
    sim: Stream
    real: Stream
    command: Optional[PlannedTrajectory] = None

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class PairRecording:
    """All complete pairs of one recording, in order of their start, and what had to be left
    out: ``incomplete`` pairs (``unpaired_events`` of them lack their START or END), and the
    recording's ``unclosed`` files (``.bag.active``: its recorder was killed), of which
    ``unreadable`` ones (no index) were not read."""

    path: str
    joint_names: tuple[str, ...]
    pairs: list[TrajectoryPair] = field(default_factory=list)
    skipped_messages: int = 0
    unpaired_events: int = 0
    label: str = DEFAULT_LABEL
    incomplete: list[IncompletePair] = field(default_factory=list)
    unclosed: tuple[str, ...] = ()
    unreadable: dict[str, str] = field(default_factory=dict)

    def kinds(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for pair in self.pairs:
            counts[pair.kind] = counts.get(pair.kind, 0) + 1
        return counts

    @property
    def seconds(self) -> float:
        """Planned duration of the complete pairs together [s]."""
        return float(sum(pair.duration for pair in self.pairs))

    def warnings(self) -> list[str]:
        """One line per unclosed file and per incomplete pair."""
        lines = []
        for name in self.unclosed:
            if name in self.unreadable:
                lines.append(f"{name} was not closed by its recorder (killed?) and has no index: "
                             f"left out; 'rosbag reindex {name}' recovers what it can")
            else:
                lines.append(f"{name} was not closed by its recorder (killed?); read as it is")
        return lines + [pair.line() for pair in self.incomplete]


def _pair_events(events: dict[int, dict[int, tuple[float, str]]]
                 ) -> tuple[list, list[IncompletePair]]:
    """(id, kind, start, end) of every id with one START before its END, and the other ids."""
    complete, unpaired = [], []
    for trajectory_id, by_kind in events.items():
        start, kind = by_kind.get(EVENT_START, (None, ""))
        end = by_kind[EVENT_END][0] if EVENT_END in by_kind else None
        if start is None or end is None or end <= start:
            reason = ("START without END (the recording stopped during it?)" if end is None else
                      "END without START" if start is None else "END not after START")
            kind = kind or (by_kind[EVENT_END][1] if EVENT_END in by_kind else "")
            unpaired.append(IncompletePair(trajectory_id, kind, start, end, reason))
        else:
            complete.append((trajectory_id, kind, start, end))
    complete.sort(key=lambda item: (item[2], item[0]))
    return complete, unpaired


def _covered(tid: int, kind: str, start: float, end: float, streams: dict[str, Stream],
             tolerances: dict[str, float]) -> Optional[IncompletePair]:
    """The pair as incomplete if a stream does not cover its window, else None."""
    for name, stream in streams.items():
        problem = coverage_problem(stream.t, start, end, tolerances[name])
        if problem is not None:
            return IncompletePair(tid, kind, start, end, f"{name} {problem}")
    return None


def _commands(path: str, messages: Sequence[Any], limits: JointLimits) -> list[PlannedTrajectory]:
    plans = []
    for msg in messages:
        try:
            plans.append(trajectory_from_msg(msg, limits))
        except PandaError as exc:
            raise BagError(f"bag {path}: a command on {SIM_COMMAND} is invalid: {exc}") from exc
    return plans


def _command_of(path: str, tid: int, start: float, plans: Sequence[PlannedTrajectory],
                starts: np.ndarray) -> PlannedTrajectory:
    """The command planned to start at ``start`` (``starts``: the plans' starts); BagError if
    there is none."""
    k = int(np.argmin(np.abs(starts - start))) if starts.size else -1
    if k < 0 or abs(starts[k] - start) > COMMAND_MATCH:
        raise BagError(f"bag {path}: trajectory {tid} (start {start:.3f} s) has no command on {SIM_COMMAND}")
    return plans[k]


def read_pairs(path: str, joint_names: Sequence[str], label: Optional[str] = None,
               sim_topic: str = SIM_JOINT_STATES, with_commands: bool = False,
               limits: Optional[JointLimits] = None) -> PairRecording:
    """Read the trajectory pairs of a pair bag in one pass (paper 000 §IV-B data set); ``path``
    is a bag file or a recording split into several (:func:`~panda_pairs.bag_set.resolve_bags`).

    ``sim_topic`` is the simulation side of the pairs: ``/sim/joint_states`` or, to measure
    what the residual publisher achieved live, ``/sim/joint_states_realistic``.

    JointState messages that are malformed, miss a joint, contain NaN/Inf or repeat a stamp are
    skipped and counted (``skipped_messages``; :mod:`panda_pairs.joint_state_bag`).
    ``label`` names the "real" robot; a ``/real/label`` message in the bag takes precedence,
    and without either it is "reality stand-in".
    Pairs whose START has no END (or the other way round) or whose sim or real samples do not
    cover [start, end] are left out and listed in ``incomplete``.
    ``with_commands``: each pair also gets the command it ran (validated against ``limits``,
    default the Panda's), and a pair without one or an invalid command is a BagError.
    Raises :class:`BagError` (one line naming the file) for a missing, corrupt or truncated bag,
    missing topics, or a bag without any complete START/END pair.
    """
    names = tuple(joint_names)
    sim, real = JointStateCollector(), JointStateCollector()
    events: dict[int, dict[int, tuple[float, str]]] = {}
    bag_label: Optional[str] = None
    commands: list[Any] = []
    with BagFile(path) as bag:
        unclosed, unreadable = bag.unclosed, dict(bag.unreadable)
        required = (sim_topic, REAL_JOINT_STATES, EVENTS) + ((SIM_COMMAND,) if with_commands else ())
        missing = [t for t in required if t not in bag.topics]
        if missing:
            raise BagError(f"bag {path} lacks the topic(s) {', '.join(missing)}; "
                           f"is it a pair recording?")
        wanted = list(required) + ([LABEL] if LABEL in bag.topics else [])
        for name, msg in bag.messages(wanted):
            if name == sim_topic:
                sim.add(msg)
            elif name == REAL_JOINT_STATES:
                real.add(msg)
            elif name == EVENTS:
                events.setdefault(int(msg.trajectory_id), {}).setdefault(
                    int(msg.event), (msg.header.stamp.to_sec(), str(msg.kind)))
            elif name == LABEL and bag_label is None:
                bag_label = str(msg.data).strip() or None
            elif name == SIM_COMMAND:
                commands.append(msg)
    plans = _commands(path, commands, limits or JointLimits.from_yaml()) if with_commands else []
    starts = np.array([p.start if p.start is not None else -1.0 for p in plans])
    complete, unpaired = _pair_events(events)
    if not complete:
        raise BagError(f"bag {path} has no complete START/END pair on {EVENTS}")
    sim_states, real_states = sim.build(names), real.build(names)
    streams = {sim_topic: Stream.of(sim_states), REAL_JOINT_STATES: Stream.of(real_states)}
    tolerances = {name: gap_tolerance(stream.t) for name, stream in streams.items()}
    pairs, incomplete = [], list(unpaired)
    for tid, kind, start, end in complete:
        windows = {name: stream.window(start, end) for name, stream in streams.items()}
        problem = _covered(tid, kind, start, end, windows, tolerances)
        if problem is not None:
            incomplete.append(problem)
            continue
        pairs.append(TrajectoryPair(tid, kind, start, end, windows[sim_topic], windows[REAL_JOINT_STATES],
                                    _command_of(path, tid, start, plans, starts) if with_commands else None))
    if not pairs:
        raise BagError(f"bag {path} has no complete pair: all {len(complete)} with START and END "
                       f"are incomplete, e.g. {incomplete[len(unpaired)].line()}")
    return PairRecording(path=path, joint_names=names, pairs=pairs,
                         skipped_messages=sim_states.skipped + real_states.skipped,
                         unpaired_events=len(unpaired),
                         label=bag_label or label or DEFAULT_LABEL,
                         incomplete=sorted(incomplete, key=lambda p: p.trajectory_id),
                         unclosed=unclosed, unreadable=unreadable)
