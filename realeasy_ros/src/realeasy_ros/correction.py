"""Offline bag correction: a recorded bag plus the simulator's joint states corrected by a trained
Realeasy model, X + NN(X) (paper 000 eq. 9), on ``/sim/joint_states_realistic``.

* precise model (bidirectional, Algorithm 1): it needs whole sequences, so the
  ``/sim/joint_states`` stream is cut at the START events of ``/pairs/event`` (each segment runs
  from one START to the next; samples before the first START belong to the first segment) and the
  network runs over each segment as one sequence. Without events the stream is one sequence.
* realtime model (Algorithms 2-3): the whole stream in time order, as the live node would run it;
  the first ``warmup_steps`` samples are published unchanged while the hidden state fills.

Every message of the input bag is copied with its topic, bag time and connection header (rosbag
keeps one connection per topic: the header of the topic's first connection). Each valid
``/sim/joint_states`` message gets one corrected message with the same header and bag time, in the
model's joint order; messages with missing joints, wrong array lengths or NaN/Inf are skipped and
counted. The output is written to a temporary file and renamed; the input is never modified.
"""
from __future__ import annotations

import errno
import os
from dataclasses import asdict, dataclass, field
from typing import Iterable, Iterator, Optional, Sequence

import numpy as np
import rosbag
from sensor_msgs.msg import JointState

from panda_pairs import BAG_READ_ERRORS, BagError, Progress, unreadable_bag
from panda_sim2real import EVENTS, EVENT_START, JOINT_STATES, REALISTIC, SIM_NS, topic
from sim2real_checks import InvalidJointState, JointStateLayout, atomic_path
from realeasy_ros.model import RealeasyModel
from realeasy_ros.networks import PRECISE

SIM_TOPIC = topic(SIM_NS, JOINT_STATES)
REALISTIC_TOPIC = topic(SIM_NS, REALISTIC)
RATE_TOLERANCE = 0.05          # relative difference of the sim stream's rate from the model's
CALLER_ID = "/realeasy_correct"
_WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG)


InvalidSample = InvalidJointState   # a JointState that cannot be corrected


def state_from_msg(msg: JointState, joint_names: Sequence[str]) -> np.ndarray:
    """[q, qd, tau] (3 dof,) of ``msg`` in the order ``joint_names`` (mapped by name);
    InvalidSample if a joint is missing or repeated, an array does not have one value per name,
    or a value or the stamp is not finite."""
    return _state(msg, JointStateLayout(joint_names))


def _state(msg: JointState, layout: JointStateLayout) -> np.ndarray:
    state = np.empty(3 * layout.dof)
    layout.fill(msg.name, msg.position, msg.velocity, msg.effort, state)
    if not np.isfinite(msg.header.stamp.to_sec()):
        raise InvalidSample("NaN/Inf stamp")
    return state


@dataclass
class SimStream:
    """The valid ``/sim/joint_states`` samples of a bag in time order, and the START stamps."""

    keys: list = field(default_factory=list)       # bag position of each message (unique)
    headers: list = field(default_factory=list)    # std_msgs/Header of each message
    stamps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    states: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    messages: int = 0                              # sim messages in the bag, valid or not
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.keys)

    def median_rate(self) -> float:
        """1 / median positive stamp difference [Hz]; 0 with fewer than two distinct stamps."""
        steps = np.diff(self.stamps)
        steps = steps[steps > 0.0]
        return float(1.0 / np.median(steps)) if steps.size else 0.0


def read_sim_stream(bag: rosbag.Bag, joint_names: Sequence[str]) -> SimStream:
    """The sim stream and the START events of an open bag (one pass, raw reading so that each
    message is identified by its position in the file)."""
    layout = JointStateLayout(joint_names)
    keys, headers, stamps, states, starts = [], [], [], [], []
    messages = skipped = 0
    for name, raw, _ in bag.read_messages(topics=[SIM_TOPIC, EVENTS], raw=True):
        msg = raw[4]()
        msg.deserialize(raw[1])
        if name == EVENTS:
            if int(msg.event) == EVENT_START:
                starts.append(msg.header.stamp.to_sec())
            continue
        messages += 1
        try:
            states.append(_state(msg, layout))
        except InvalidSample:
            skipped += 1
            continue
        keys.append(raw[3])
        headers.append(msg.header)
        stamps.append(msg.header.stamp.to_sec())
    order = np.argsort(np.asarray(stamps, dtype=float), kind="stable")
    width = 3 * len(joint_names)
    return SimStream(keys=[keys[i] for i in order], headers=[headers[i] for i in order],
                     stamps=np.asarray(stamps, dtype=float)[order],
                     states=np.asarray(states, dtype=float).reshape(-1, width)[order],
                     starts=np.unique(np.asarray(starts, dtype=float)),
                     messages=messages, skipped=skipped)


def segments(stamps: np.ndarray, starts: np.ndarray) -> list[tuple[int, int]]:
    """Index ranges [a, b) of sorted ``stamps`` cut at the ``starts`` (sorted START stamps): one
    per START with samples, from that START to the next; samples before the first START join
    the first segment. Without starts: the whole stream."""
    if len(stamps) == 0:
        return []
    segment = np.maximum(np.searchsorted(starts, stamps, side="right") - 1, 0)
    cuts = (np.flatnonzero(np.diff(segment)) + 1).tolist()
    bounds = [0] + cuts + [len(stamps)]
    return list(zip(bounds[:-1], bounds[1:]))


def correct_stream(model: RealeasyModel, stream: SimStream) -> tuple[np.ndarray, int]:
    """Corrected states (N, 3 dof) of the stream and the number of sequences the network ran
    on: per START segment for the precise model, the whole stream for the realtime one."""
    if model.architecture == PRECISE:
        ranges = segments(stream.stamps, stream.starts)
    else:
        ranges = [(0, len(stream))]
    corrected = np.empty_like(stream.states)
    for a, b in ranges:
        corrected[a:b] = model.correct(stream.states[a:b])
    return corrected, len(ranges)


@dataclass
class CorrectionSummary:
    """What ``correct_bag`` did; ``to_dict`` for the JSON output."""

    input: str
    output: str
    architecture: str
    messages_copied: int
    sim_messages: int
    corrected: int           # messages written on the realistic topic
    skipped: int             # sim messages not corrected (invalid)
    sequences: int           # sequences the network ran on (precise: START segments)
    warmup_messages: int     # realtime: published unchanged during warm-up (Algorithm 2)
    sim_rate: float          # median rate of the sim stream [Hz]
    model_rate: float
    topic: str = REALISTIC_TOPIC

    def to_dict(self) -> dict:
        return asdict(self)


class _Counted:
    """An iterable with a length, so that a progress bar knows its total."""

    def __init__(self, items: Iterable, total: int) -> None:
        self.items, self.total = items, total

    def __len__(self) -> int:
        return self.total

    def __iter__(self) -> Iterator:
        return iter(self.items)


def _realistic_connection() -> dict:
    return {"topic": REALISTIC_TOPIC, "type": JointState._type, "md5sum": JointState._md5sum,
            "message_definition": JointState._full_text, "callerid": CALLER_ID, "latching": "0"}


def _same_file(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    return os.path.exists(b) and os.path.samefile(a, b)


def _write_corrected(bag: rosbag.Bag, path: str, stream: SimStream, corrected: np.ndarray,
                     layout: JointStateLayout, progress: Optional[Progress]) -> tuple[int, int]:
    """Copy every message of ``bag`` to a new bag ``path`` (same compression), each valid sim
    message followed by its corrected twin at the same bag time. Returns (copied, written)."""
    row_of = {key: i for i, key in enumerate(stream.keys)}
    connection = _realistic_connection()
    copied = written = 0
    entries = bag.read_messages(raw=True, return_connection_header=True)
    if progress is not None:
        entries = progress(_Counted(entries, bag.get_message_count()))
    with rosbag.Bag(path, "w", compression=bag.get_compression_info().compression) as out:
        for name, raw, stamp, header in entries:
            out.write(name, raw, stamp, raw=True, connection_header=header)
            copied += 1
            row = row_of.get(raw[3]) if name == SIM_TOPIC else None
            if row is not None:
                out.write(REALISTIC_TOPIC, layout.message(stream.headers[row], corrected[row]),
                          stamp, connection_header=connection)
                written += 1
    return copied, written


def correct_bag(in_path: str, model: RealeasyModel, out_path: str,
                progress: Optional[Progress] = None) -> CorrectionSummary:
    """Write ``out_path``: every message of ``in_path`` plus the corrected sim joint states on
    /sim/joint_states_realistic (see the module docstring). BagError (one line) for a missing,
    corrupt or truncated input, OUT == IN, an input that already has the realistic topic, no
    valid sim message, or a sim rate more than 5 % away from the model's."""
    if not os.path.exists(in_path):
        raise BagError(f"bag not found: {in_path}")
    if _same_file(in_path, out_path):
        raise BagError(f"the output bag {out_path} is the input bag; write to another file")
    try:
        with rosbag.Bag(in_path, "r") as bag:
            topics = bag.get_type_and_topic_info().topics
            if SIM_TOPIC not in topics:
                raise BagError(f"bag {in_path} has no {SIM_TOPIC} to correct")
            if REALISTIC_TOPIC in topics:
                raise BagError(f"bag {in_path} already has {REALISTIC_TOPIC}; drop it first "
                               f"(rosbag filter {in_path} OTHER.bag "
                               f"\"topic != '{REALISTIC_TOPIC}'\")")
            stream = read_sim_stream(bag, model.joint_names)
            rate = stream.median_rate()
            if len(stream) < 2 or rate <= 0.0:
                raise BagError(f"bag {in_path}: {len(stream)} valid {SIM_TOPIC} message(s) "
                               f"with distinct stamps, at least 2 are needed "
                               f"({stream.skipped} skipped)")
            if abs(rate - model.rate) > RATE_TOLERANCE * model.rate:
                raise BagError(f"bag {in_path}: {SIM_TOPIC} is sampled at {rate:.4g} Hz "
                               f"(median), the model at {model.rate:g} Hz")
            corrected, sequences = correct_stream(model, stream)
            with atomic_path(out_path) as tmp:   # its folder created; the old bag kept on failure
                copied, written = _write_corrected(
                    bag, tmp, stream, corrected, JointStateLayout(model.joint_names), progress)
    except rosbag.ROSBagUnindexedException as exc:
        raise BagError(f"bag {in_path} has no index, it looks truncated (recording "
                       f"interrupted?); try 'rosbag reindex {in_path}'") from exc
    except OSError as exc:
        if exc.filename not in (None, in_path):
            raise   # the output's folder or file (permissions, a directory): reported as it is
        if exc.errno in _WRITE_ERRNOS:
            raise BagError(f"cannot write {out_path}: {exc.strerror}") from exc
        raise unreadable_bag(in_path, exc) from exc
    except BAG_READ_ERRORS as exc:
        raise unreadable_bag(in_path, exc) from exc
    warmup = 0 if model.architecture == PRECISE else min(int(model.warmup_steps), len(stream))
    return CorrectionSummary(
        input=in_path, output=out_path, architecture=model.architecture,
        messages_copied=copied, sim_messages=stream.messages, corrected=written,
        skipped=stream.skipped, sequences=sequences, warmup_messages=warmup, sim_rate=rate,
        model_rate=float(model.rate))
