"""Identification data for the inverse-dynamics loss L_ID of paper 002 (eq. 2): samples
(q, qd, qdd, tau) of every movable joint, loaded from a recorded bag or an .npz file.

Velocities are the measured ones when the data carry them, otherwise Savitzky-Golay derivatives
of q; accelerations are always Savitzky-Golay derivatives of q (:mod:`diffnea_ros.acceleration`),
because inverse dynamics needs qdd and robots do not measure it. Positions stay as measured.

Samples are grouped into *segments*: contiguous, uniformly sampled runs (a gap of more than
``GAP_PERIODS`` sample periods, or a change of the ``segment`` key of an .npz, starts a new one).
Derivatives never straddle a segment boundary, and :meth:`IdentificationData.split` holds out
whole contiguous blocks so that held-out samples never interleave with training samples.
"""
from __future__ import annotations

import dataclasses
import math
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from diffnea_ros.acceleration import (DEFAULT_GAP_PERIODS, DEFAULT_POLYORDER,
                                      DEFAULT_WINDOW_SECONDS, sample_period, savgol_derivatives,
                                      segment_starts, window_length)
from diffnea_ros.csv_log import read_csv
from diffnea_ros.errors import DataError

DEFAULT_TOPIC = "/real/joint_states"   # the "real" side of panda_pairs' pair bags
#: The JointState topics a bag is searched for when no topic is given, in this order: a pair
#: bag's robot side, franka_ros' franka_state_controller (panda_joint1..7, effort = tau_J), and
#: the merged /joint_states of robot_state_publisher set-ups (fingers included, locked if absent).
JOINT_STATE_TOPICS = (DEFAULT_TOPIC, "/franka_state_controller/joint_states", "/joint_states")
GAP_PERIODS = DEFAULT_GAP_PERIODS      # a stamp gap of more than 5 periods ends a segment
# Identifiability (check_identifiable): at least MIN_SAMPLES samples (2 s at 100 Hz; each sample
# gives one equation per joint, a 7-link arm has 7 x 10 inertial parameters + 7 dampings), and
# every joint must move through at least MIN_RANGE [rad or m] or its parameters are unobservable.
MIN_SAMPLES = 200
MIN_RANGE = 0.05

DROP_REASONS = ("malformed", "missing_joint", "non_finite", "unstamped", "duplicate_stamp",
                "short_segment")


@dataclass(frozen=True)
class Batch:
    """Rows ``index`` of the data: q, qd, qdd, tau (B, dof) float64."""

    index: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray


@dataclass(frozen=True, eq=False)
class IdentificationData:
    """Samples for identification: stamps t (N,) [s]; q, qd, qdd, tau (N, dof) float64 in the
    order of ``joint_names``; ``segment`` (N,) int64 ids of contiguous runs; ``source`` says where
    the data came from; ``dropped`` counts what the loader left out, by reason."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    joint_names: tuple[str, ...]
    segment: np.ndarray
    source: str = ""
    dropped: Mapping[str, int] = field(default_factory=dict)
    trajectories: tuple[int, ...] = ()   # the pair bag's trajectory ids they hold (load_pairs)
    label: str = ""                      # what the robot was (a pair bag's /real/label)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "joint_names", tuple(str(n) for n in self.joint_names))
        set_(self, "t", np.asarray(self.t, dtype=np.float64))
        set_(self, "segment", np.asarray(self.segment, dtype=np.int64))
        n, dof = self.t.shape[0], len(self.joint_names)
        if self.t.ndim != 1 or self.segment.shape != (n,):
            raise DataError(f"t and segment must have shape (N,), got {self.t.shape} and "
                            f"{self.segment.shape}")
        for name in ("q", "qd", "qdd", "tau"):
            value = np.asarray(getattr(self, name), dtype=np.float64)
            if value.shape != (n, dof):
                raise DataError(f"{name} has shape {value.shape}, expected ({n}, {dof})")
            set_(self, name, value)
        set_(self, "dropped", dict(self.dropped))

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def n_segments(self) -> int:
        return int(segment_runs(self.segment).shape[0] - 1)

    def take(self, index: np.ndarray) -> "IdentificationData":
        """The rows ``index`` (integer indices or a boolean mask), same metadata."""
        return dataclasses.replace(self, t=self.t[index], q=self.q[index], qd=self.qd[index],
                                   qdd=self.qdd[index], tau=self.tau[index], segment=self.segment[index])

    def split(self, fraction_heldout: float = 0.2, seed: int = 0,
              n_blocks: int = 10) -> tuple["IdentificationData", "IdentificationData"]:
        """(training, held-out) by whole contiguous blocks.

        Each segment is cut into blocks of about ``len(self) / n_blocks`` samples (a short segment
        is one block); randomly chosen blocks (``seed``) are held out while that brings the held-out
        share closer to ``fraction_heldout``. Both parts keep at least one block. In the returned
        data every block is its own segment, since a block's neighbours may be in the other part.
        """
        if not 0.0 < fraction_heldout < 1.0:
            raise DataError(f"fraction_heldout must be in (0, 1), got {fraction_heldout}")
        if n_blocks < 2:
            raise DataError(f"n_blocks must be at least 2, got {n_blocks}")
        block = np.empty(len(self), dtype=np.int64)
        block_len = max(1, math.ceil(len(self) / n_blocks))
        runs = segment_runs(self.segment)
        count = 0
        for a, b in zip(runs[:-1], runs[1:]):
            k = max(1, int(round((b - a) / block_len)))
            edges = a + np.rint(np.linspace(0, b - a, k + 1)).astype(np.int64)
            for lo, hi in zip(edges[:-1], edges[1:]):
                block[lo:hi] = count
                count += 1
        if count < 2:
            raise DataError(f"cannot hold out data: only {len(self)} samples in one block; "
                            f"record more data")
        sizes = np.bincount(block, minlength=count)
        held, total, target = [], 0, fraction_heldout * len(self)
        for i in np.random.default_rng(seed).permutation(count):
            if held and (total + sizes[i] / 2 > target or len(held) == count - 1):
                break  # the next block would take the held-out share further from the target
            held.append(int(i))
            total += int(sizes[i])
        mask = np.isin(block, held)
        relabelled = dataclasses.replace(self, segment=block)
        return relabelled.take(~mask), relabelled.take(mask)

    def batches(self, batch_size: int, shuffle: bool = False,
                rng: Union[None, int, np.random.Generator] = None,
                drop_last: bool = False) -> Iterator[Batch]:
        """Batches of ``batch_size`` rows: in recorded order (``shuffle=False``, the online mode of
        paper 002 Fig. 1) or in a random order drawn from ``rng`` (a seed or a Generator; pass
        the same Generator every epoch to get a new order each epoch)."""
        if batch_size < 1:
            raise DataError(f"batch_size must be positive, got {batch_size}")
        order = (np.random.default_rng(rng).permutation(len(self)) if shuffle
                 else np.arange(len(self)))
        stop = len(self) - (len(self) % batch_size if drop_last else 0)
        for lo in range(0, stop, batch_size):
            i = order[lo:lo + batch_size]
            yield Batch(i, self.q[i], self.qd[i], self.qdd[i], self.tau[i])

def segment_runs(segment: np.ndarray) -> np.ndarray:
    """Boundaries [0, ..., N] of the runs of equal ids in ``segment`` (N,)."""
    segment = np.asarray(segment)
    cuts = np.flatnonzero(segment[1:] != segment[:-1]) + 1
    return np.concatenate([[0], cuts, [segment.shape[0]]]).astype(np.int64)


def _column_order(found: Sequence[str], wanted: Sequence[str], what: str) -> list[int]:
    """Column of each wanted joint in ``found``; DataError naming the joints that are missing."""
    index = {name: i for i, name in enumerate(found)}
    missing = [name for name in wanted if name not in index]
    if missing:
        raise DataError(f"{what} has no data for joint(s) {', '.join(missing)} of the URDF "
                        f"(it has {', '.join(found) or 'none'}); use data recorded from this "
                        f"robot or the matching URDF")
    return [index[name] for name in wanted]


def _finite_rows(*arrays: Optional[np.ndarray]) -> np.ndarray:
    ok = np.ones(arrays[0].shape[0], dtype=bool)
    for a in arrays:
        if a is not None:
            ok &= np.all(np.isfinite(a.reshape(a.shape[0], -1)), axis=1)
    return ok


def _assemble(t: np.ndarray, q: np.ndarray, qd: Optional[np.ndarray], tau: np.ndarray,
              qdd: Optional[np.ndarray], segment: Optional[np.ndarray],
              joint_names: Sequence[str], source: str, dropped: dict[str, int],
              window_seconds: float, polyorder: int) -> IdentificationData:
    """Common last step of the loaders: drop non-finite rows and segments too short for the
    Savitzky-Golay window, then fill in qd (if not measured) and qdd."""
    dropped = {reason: dropped.get(reason, 0) for reason in DROP_REASONS}
    if t.shape[0] == 0:
        raise DataError(f"{source}: no samples; record joint states of the moving robot")
    ok = _finite_rows(t, q, qd, tau, qdd)
    dropped["non_finite"] += int(np.count_nonzero(~ok))
    t, q, tau = t[ok], q[ok], tau[ok]
    qd = None if qd is None else qd[ok]
    qdd = None if qdd is None else qdd[ok]
    segment = None if segment is None else segment[ok]
    if t.shape[0] < 2:
        raise DataError(f"{source}: only {t.shape[0]} valid sample(s); record joint states of "
                        f"the moving robot")
    dt = sample_period(t, segment)
    n_win = window_length(dt, window_seconds, polyorder)
    starts = segment_starts(t, dt, segment, GAP_PERIODS)
    stops = np.append(starts[1:], t.shape[0])
    ids = np.full(t.shape[0], -1, dtype=np.int64)
    for k, (a, b) in enumerate(zip(starts, stops)):
        if b - a >= n_win:
            ids[a:b] = k
    keep = ids >= 0
    dropped["short_segment"] += int(np.count_nonzero(~keep))
    if not np.any(keep):
        raise DataError(f"{source}: no contiguous segment has the {n_win} samples "
                        f"({n_win * dt:.3g} s) the Savitzky-Golay filter needs; record longer "
                        f"continuous motions")
    t, q, tau, ids = t[keep], q[keep], tau[keep], ids[keep]
    qd = None if qd is None else qd[keep]
    qdd = None if qdd is None else qdd[keep]
    if qd is None or qdd is None:
        d = savgol_derivatives(t, q, window_seconds, polyorder, segment_ids=ids,
                               gap_periods=GAP_PERIODS)
        qd = d.qd if qd is None else qd
        qdd = d.qdd if qdd is None else qdd
    _, ids = np.unique(ids, return_inverse=True)
    return IdentificationData(t, q, qd, qdd, tau, tuple(joint_names), ids, source, dropped)


def load_npz(path: str, joint_names_expected: Optional[Sequence[str]] = None,
             window_seconds: float = DEFAULT_WINDOW_SECONDS,
             polyorder: int = DEFAULT_POLYORDER) -> IdentificationData:
    """Identification data from an .npz file (read without pickle).

    Keys: ``q``, ``tau`` (N, dof); ``t`` (N,) stamps [s] or ``rate`` [Hz] (uniform from 0);
    optional ``qd``, ``qdd`` (N, dof), ``joint_names`` (dof,) strings, ``segment`` (N,) ids of
    separately recorded runs. With ``joint_names_expected`` the columns are reordered to it
    (extra joints in the file are ignored); without ``joint_names`` in the file the columns are
    taken to be in the expected order.
    """
    if not os.path.isfile(path):
        raise DataError(f"data file not found: {path}")
    try:
        archive = np.load(path, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise ValueError("a single array, not an archive of named arrays")
        with archive:
            arrays = {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"cannot read {path}: not a valid .npz of numeric arrays ({detail}); "
                        f"save it with numpy.savez(path, t=..., q=..., qd=..., tau=...)") from None
    return _from_arrays(arrays, path, f"npz {path}", joint_names_expected, window_seconds, polyorder)


def load_csv(path: str, joint_names_expected: Optional[Sequence[str]] = None,
             window_seconds: float = DEFAULT_WINDOW_SECONDS,
             polyorder: int = DEFAULT_POLYORDER) -> IdentificationData:
    """Identification data from a CSV log with per-sample stamps (:mod:`diffnea_ros.csv_log`:
    plain ``t, q_<joint>, [qd_<joint>,] tau_<joint>`` columns, or ``rostopic echo -p`` of a
    JointState topic), columns mapped by joint name as :func:`load_npz` does."""
    if not os.path.isfile(path):
        raise DataError(f"data file not found: {path}")
    return _from_arrays(read_csv(path), path, f"csv {path}", joint_names_expected,
                        window_seconds, polyorder)


def _from_arrays(arrays: Mapping[str, np.ndarray], path: str, source: str,
                 joint_names_expected: Optional[Sequence[str]], window_seconds: float,
                 polyorder: int) -> IdentificationData:
    """The checks and column mapping of :func:`load_npz` on arrays read from ``path``."""
    missing = [k for k in ("q", "tau") if k not in arrays]
    if "t" not in arrays and "rate" not in arrays:
        missing.append("t or rate")
    if missing:
        raise DataError(f"{path} lacks the array(s) {', '.join(missing)} (it has "
                        f"{', '.join(sorted(arrays)) or 'none'}); save q, tau and t (or rate)")
    try:
        q = np.asarray(arrays["q"], dtype=np.float64)
        tau = np.asarray(arrays["tau"], dtype=np.float64)
        qd = np.asarray(arrays["qd"], dtype=np.float64) if "qd" in arrays else None
        qdd = np.asarray(arrays["qdd"], dtype=np.float64) if "qdd" in arrays else None
        n = q.shape[0] if q.ndim else 0
        t = (np.asarray(arrays["t"], dtype=np.float64) if "t" in arrays
             else np.arange(n) / float(arrays["rate"]))
    except (TypeError, ValueError) as exc:
        raise DataError(f"{path}: arrays must be numeric ({exc})") from None
    if q.ndim != 2:
        raise DataError(f"{path}: q must have shape (N, dof), got {q.shape}")
    for name, value in (("tau", tau), ("qd", qd), ("qdd", qdd)):
        if value is not None and value.shape != q.shape:
            raise DataError(f"{path}: {name} has shape {value.shape}, q has {q.shape}")
    if t.shape != (q.shape[0],):
        raise DataError(f"{path}: t has shape {t.shape}, expected ({q.shape[0]},)")
    segment = np.asarray(arrays["segment"]) if "segment" in arrays else None
    if segment is not None and segment.shape != t.shape:
        raise DataError(f"{path}: segment has shape {segment.shape}, expected {t.shape}")
    names = ([str(n) for n in np.asarray(arrays["joint_names"]).reshape(-1)]
             if "joint_names" in arrays else None)
    if names is not None and len(names) != q.shape[1]:
        raise DataError(f"{path}: {len(names)} joint_names for {q.shape[1]} columns")
    if joint_names_expected is not None:
        wanted = [str(n) for n in joint_names_expected]
        if names is None:
            if q.shape[1] != len(wanted):
                raise DataError(f"{path} has {q.shape[1]} joint columns and no joint_names, the "
                                f"URDF has {len(wanted)} joints; save joint_names with the data")
            names = wanted
        cols = _column_order(names, wanted, path)
        q, tau = q[:, cols], tau[:, cols]
        qd = None if qd is None else qd[:, cols]
        qdd = None if qdd is None else qdd[:, cols]
        names = wanted
    if names is None:
        names = [f"joint{i + 1}" for i in range(q.shape[1])]
    return _assemble(t, q, qd, tau, qdd, segment, names, source, {}, window_seconds, polyorder)


def bag_topic(path: str, topic: Optional[str] = None) -> str:
    """``topic``, or the first of :data:`JOINT_STATE_TOPICS` the bag holds as JointState."""
    if topic:
        return topic
    from panda_pairs import BagError, BagFile
    try:
        with BagFile(path) as bag:
            held = {name for name, kind in bag.topics.items() if kind == "sensor_msgs/JointState"}
    except BagError as exc:
        raise DataError(str(exc)) from None
    for candidate in JOINT_STATE_TOPICS:
        if candidate in held:
            return candidate
    raise DataError(f"bag {path} has none of the JointState topics {', '.join(JOINT_STATE_TOPICS)} "
                    f"(it has {', '.join(sorted(held)) or 'none'}); give --topic")


def load_bag(path: str, topic: Optional[str] = None, joint_names: Optional[Sequence[str]] = None,
             window_seconds: float = DEFAULT_WINDOW_SECONDS,
             polyorder: int = DEFAULT_POLYORDER) -> IdentificationData:
    """Identification data from the sensor_msgs/JointState messages of ``topic`` in a bag
    (default: :func:`bag_topic`), read by panda_pairs' reader
    (:func:`panda_pairs.joint_state_bag.read_joint_states`).

    Joints are mapped by name to ``joint_names`` (default: the joints present in every message,
    in the order of the first); stamps are the header stamps; an empty velocity field means
    "not measured". Messages whose arrays do not match their names, that lack a wanted joint,
    are unstamped, contain NaN/Inf or repeat a stamp are dropped and counted in ``dropped``.
    A stamp gap of more than ``GAP_PERIODS`` periods starts a segment.
    """
    from panda_pairs import BagError
    from panda_pairs import read_joint_states
    topic = bag_topic(path, topic)
    try:
        states = read_joint_states(path, topic, None if joint_names is None
                                   else [str(n) for n in joint_names], require_velocity=False)
    except BagError as exc:
        raise DataError(str(exc)) from None
    source = f"{states.label + ': ' if states.label else ''}bag {path} [{topic}]"
    stamped = states.t > 0.0
    dropped = {**states.dropped, "unstamped": int(np.count_nonzero(~stamped))}
    qd = None if states.qd is None else states.qd[stamped]
    return _assemble(states.t[stamped], states.q[stamped], qd, states.tau[stamped], None, None,
                     states.joint_names, source, dropped, window_seconds, polyorder)


def load_pairs(path: str, trajectory_ids: Optional[Sequence[int]] = None,
               joint_names: Optional[Sequence[str]] = None,
               window_seconds: float = DEFAULT_WINDOW_SECONDS,
               polyorder: int = DEFAULT_POLYORDER) -> IdentificationData:
    """Identification data from the robot's side (``/real``) of a pair bag, read by panda_pairs'
    reader: the complete pairs among ``trajectory_ids`` (default all), one segment each, so that
    derivatives never straddle two trajectories; measured velocities are kept. Held-out
    trajectories of a data set's split never enter it when their ids are left out."""
    from panda_pairs import read_pairs
    from panda_sim2real import JointLimits, PandaError
    try:
        names = [str(n) for n in joint_names] if joint_names is not None else list(JointLimits.from_yaml().joint_names)
        recording = read_pairs(path, names)
    except PandaError as exc:
        raise DataError(str(exc)) from None
    wanted = None if trajectory_ids is None else {int(i) for i in trajectory_ids}
    pairs = [p for p in recording.pairs
             if (wanted is None or p.trajectory_id in wanted) and len(p.real) > 1]
    if not pairs:
        raise DataError(f"pair bag {path} holds none of the {len(wanted) if wanted else 'recorded'} "
                        f"trajectories on /real/joint_states")
    segment = np.concatenate([np.full(len(p.real), k, dtype=np.int64) for k, p in enumerate(pairs)])
    source = f"{recording.label}: pair bag {path} ({len(pairs)} trajectories, /real)"
    data = _assemble(np.concatenate([p.real.t for p in pairs]), np.concatenate([p.real.q for p in pairs]),
                     np.concatenate([p.real.qd for p in pairs]), np.concatenate([p.real.tau for p in pairs]),
                     None, segment, names, source, {}, window_seconds, polyorder)
    return dataclasses.replace(data, trajectories=tuple(p.trajectory_id for p in pairs), label=recording.label)


def load_data(path: str, joint_names: Optional[Sequence[str]] = None,
              topic: Optional[str] = None, window_seconds: float = DEFAULT_WINDOW_SECONDS,
              polyorder: int = DEFAULT_POLYORDER) -> IdentificationData:
    """Load ``path`` by its extension: .bag (:func:`load_bag`, ``topic``), .npz
    (:func:`load_npz`) or .csv (:func:`load_csv`), with columns in the order of ``joint_names``
    (the URDF's movable joints)."""
    loaders = {".bag": lambda: load_bag(path, topic, joint_names, window_seconds, polyorder),
               ".npz": lambda: load_npz(path, joint_names, window_seconds, polyorder),
               ".csv": lambda: load_csv(path, joint_names, window_seconds, polyorder)}
    extension = os.path.splitext(path)[1].lower()
    if extension not in loaders:
        raise DataError(f"unsupported data file {path}: give a .bag (rosbag of JointState), an "
                        f".npz (arrays t, q, qd, tau) or a .csv (columns t, q_<joint>, tau_<joint>)")
    if not os.path.isfile(path):
        raise DataError(f"data file not found: {path}")
    return loaders[extension]()


def check_identifiable(data: IdentificationData, min_samples: int = MIN_SAMPLES,
                       min_range: float = MIN_RANGE) -> None:
    """DataError unless ``data`` has at least ``min_samples`` samples and every joint's position
    spans at least ``min_range`` (rad or m): a joint that never moves leaves the parameters that
    only it excites unobservable."""
    if len(data) < min_samples:
        raise DataError(f"only {len(data)} samples from {data.source} (need at least "
                        f"{min_samples}); record longer exciting motions")
    span = data.q.max(axis=0) - data.q.min(axis=0)
    still = [f"{name} ({s:.3g})" for name, s in zip(data.joint_names, span) if s < min_range]
    if still:
        raise DataError(f"joint(s) {', '.join(still)} never move (position range below "
                        f"{min_range:g}) in {data.source}; record exciting motions of every joint, "
                        f"e.g. sine waves")
