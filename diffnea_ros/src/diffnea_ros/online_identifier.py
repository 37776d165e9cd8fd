"""Online identification from a stream of joint states (paper 002 §4.1.2, online mode).

Samples (t, q, qd, tau) arrive one by one; :mod:`diffnea_ros.joint_stream` derives zero-phase
Savitzky-Golay accelerations of the samples whose whole centred window has arrived (a delay of
half a window, 75 ms at the default 0.15 s window, plus up to 0.25 s) and the finished samples go
into a bounded ring (``buffer_seconds`` of data at the first segment's rate, at most
``max_rate``).

:class:`OnlineIdentifier` trains :class:`~diffnea_ros.learnable.LearnableDynamics` with Adam on
the loss L_ID (paper 002 eq. 2): new data first, in sequential batches of ``ONLINE_BATCH`` = 256
without shuffling, as in the paper's online experiment; when no new batch is waiting and
``replay`` is on, on a random batch of the buffer (beyond the paper: it uses the idle time of a
live robot). A step whose loss or gradient is not finite is skipped and counted, so parameters
never become NaN. Training runs in :meth:`OnlineIdentifier.step` (call it yourself) or in a
background thread (:meth:`OnlineIdentifier.start`).

Predictions for the incoming samples use a *causal* Savitzky-Golay estimate of qdd (the same
polynomial fit, evaluated at the newest sample of the window; zero until a segment has a full
window) and a copy of the model that the trainer refreshes after every update, so predicting
never waits for training. They are computed in batches (:meth:`drain_predictions`): one batched
RNEA costs about as much as a single-sample one in PyTorch.

Thread safety: :meth:`add`, :meth:`step`, :meth:`drain_predictions`, :meth:`snapshot` and
:meth:`write` may be called from different threads.
"""
from __future__ import annotations

import collections
import copy
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import torch

from diffnea_ros.acceleration import DEFAULT_GAP_PERIODS, DEFAULT_POLYORDER, DEFAULT_WINDOW_SECONDS
from diffnea_ros.errors import DiffneaError
from diffnea_ros.export import export_urdf, export_yaml, write_text_atomic
from diffnea_ros.joint_stream import (STAMP, Block, InvalidSample, JointStateMapper, SampleRing,
                                      StreamingDerivatives)
from diffnea_ros.identification import ONLINE_BATCH, Samples, consistency_of, evaluate_nmse
from diffnea_ros.learnable import FrictionParameters, LearnableDynamics
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.parametrisation import PARAMETRISATIONS
from diffnea_ros.urdf import RobotDescription
from sim2real_checks.joint_state import MALFORMED, NON_FINITE, JointBounds

MIN_RING = 1024             # smallest training buffer [samples]


@dataclass(frozen=True)
class OnlineConfig:
    """Settings of :class:`OnlineIdentifier` (defaults: paper 002 §4.1.2 with Cov)."""

    parametrisation: str = "cov"
    learning_rate: float = 1e-2
    batch_size: int = ONLINE_BATCH
    buffer_seconds: float = 60.0          # training buffer length at the stream's rate
    max_rate: float = 2000.0              # [Hz] caps the buffer size whatever the stream's rate
    friction: bool = False                # learn the sigmoid Coulomb friction too
    replay: bool = True                   # train on buffer batches when no new batch waits
    window_seconds: float = DEFAULT_WINDOW_SECONDS
    polyorder: int = DEFAULT_POLYORDER
    gap_periods: float = DEFAULT_GAP_PERIODS
    nmse_samples: int = 2048              # recent window of the reported NMSE
    nmse_every: int = 10                  # updates between two NMSE evaluations
    prediction_queue: int = 10000         # samples awaiting a prediction (oldest dropped)
    learnable_links: Optional[tuple[str, ...]] = None
    seed: int = 0

    def validate(self) -> "OnlineConfig":
        """Return self; raise :class:`DiffneaError` (one line) for a value out of range."""
        if self.parametrisation not in PARAMETRISATIONS:
            raise DiffneaError(f"unknown parametrisation {self.parametrisation!r}; valid: "
                               f"{', '.join(PARAMETRISATIONS)}")
        positive = {"learning_rate": self.learning_rate, "buffer_seconds": self.buffer_seconds,
                    "max_rate": self.max_rate, "window_seconds": self.window_seconds,
                    "gap_periods": self.gap_periods}
        for name, value in positive.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value <= 0:
                raise DiffneaError(f"{name} must be a positive number, got {value!r}")
        counts = {"batch_size": self.batch_size, "nmse_samples": self.nmse_samples,
                  "nmse_every": self.nmse_every, "prediction_queue": self.prediction_queue}
        for name, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise DiffneaError(f"{name} must be a positive integer, got {value!r}")
        if self.buffer_seconds * self.max_rate < self.batch_size:
            raise DiffneaError(f"buffer_seconds x max_rate = {self.buffer_seconds * self.max_rate:g}"
                               f" samples cannot hold one batch of {self.batch_size}")
        return self


def _to_samples(rows: np.ndarray, dtype: torch.dtype) -> Samples:
    return Samples(*(torch.as_tensor(rows[:, k], dtype=dtype) for k in range(4)))


@dataclass(frozen=True)
class LinkEstimate:
    """One learnable link: mass [kg], com (3,) [m] link frame, inertia (3, 3) [kg m²] about the
    com in link axes, and its consistency flags."""

    name: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    mass_positive: bool
    inertia_positive_definite: bool
    triangle_inequality: bool


@dataclass(frozen=True)
class Snapshot:
    """A consistent copy of the current estimate and the identifier's counters."""

    parametrisation: str
    joint_names: tuple[str, ...]
    links: tuple[LinkEstimate, ...]
    damping: np.ndarray                    # (dof,) [N m s/rad]
    friction: Optional[FrictionParameters]
    nmse: np.ndarray                       # (dof,) on the recent window, or (0,) before any
    consistent: bool
    consistency_text: str
    samples: int                           # finished samples that entered the buffer
    updates: int
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def finite(self) -> bool:
        """No NaN/Inf anywhere (a NoStr mass driven to zero makes the CoM infinite)."""
        arrays = [self.damping, self.nmse] + [np.asarray([l.mass, *l.com, *l.inertia.ravel()])
                                              for l in self.links]
        if self.friction is not None:
            arrays += [self.friction.phi1, self.friction.phi2, self.friction.phi3]
        return all(bool(np.all(np.isfinite(a))) for a in arrays)


class OnlineIdentifier:
    """Learns the dynamics of ``description`` from a joint-state stream (module docstring).
    ``bounds`` (in the description's joint order): the physical bounds a joint state given by
    names (:meth:`add_joint_state`) must keep."""

    def __init__(self, description: RobotDescription, config: OnlineConfig = OnlineConfig(),
                 dtype: torch.dtype = torch.float64,
                 bounds: Optional[JointBounds] = None) -> None:
        self.config = config.validate()
        self.description = description
        self.dtype = dtype
        model = RigidBodyModel(description, dtype=dtype)
        self.dynamics = LearnableDynamics(model, config.parametrisation, config.learnable_links,
                                          friction=config.friction).to(dtype)
        self._parameters = [p for p in self.dynamics.parameters() if p.requires_grad]
        self._optimiser = torch.optim.Adam(self._parameters, lr=config.learning_rate)
        self._predictor = copy.deepcopy(self.dynamics).requires_grad_(False)
        # the predictor's copies of the trained parameters (the model's constants never change)
        predictor_parameters = dict(self._predictor.named_parameters())
        self._predictor_parameters = [predictor_parameters[name]
                                      for name, p in self.dynamics.named_parameters()
                                      if p.requires_grad]
        self.mapper = JointStateMapper(model.joint_names, bounds)
        self._stream = StreamingDerivatives(model.dof, config.window_seconds, config.polyorder,
                                            config.gap_periods)
        self._ring: Optional[SampleRing] = None
        self._pending: collections.deque = collections.deque()
        self._generator = np.random.default_rng(config.seed)
        self._data_lock = threading.Lock()       # stream, ring, pending, counters of add()
        self._model_lock = threading.Lock()      # dynamics + optimiser (training)
        self._predictor_lock = threading.Lock()  # the prediction copy, nmse
        self._data_ready = threading.Event()
        self._cursor = 0                         # global index of the next sample not trained on
        self._nmse = np.zeros(0)
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self.last_error: Optional[str] = None
        self.counters: dict[str, int] = {
            "received": 0, "rejected": 0, "updates": 0, "new_updates": 0, "replay_updates": 0,
            "skipped_updates": 0, "unused_samples": 0, "dropped_predictions": 0,
            "non_uniform_samples": 0, "segments": 0, "thread_errors": 0}

    # -- input -------------------------------------------------------------------------------
    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.dynamics.model.joint_names

    @property
    def dof(self) -> int:
        return self.dynamics.model.dof

    def add(self, t: float, q: Sequence[float], qd: Optional[Sequence[float]],
            tau: Sequence[float], tag: Any = None) -> None:
        """One sample at stamp ``t`` [s] in the model's joint order (``qd`` None: not measured).

        Raises :class:`InvalidSample` (and counts it) for a non-finite or zero stamp, wrong
        lengths, NaN/Inf values or a repeated stamp. ``tag`` (e.g. the message header) is handed
        back with the sample's prediction by :meth:`drain_predictions`.
        """
        with self._data_lock:
            self.counters["received"] += 1
            try:
                arrays = self._checked(t, q, qd, tau)
                qd_c, qdd_c, block = self._stream.push(float(t), *arrays)
            except InvalidSample:
                self.counters["rejected"] += 1
                raise
            self.counters["segments"] = self._stream.segments
            self.counters["non_uniform_samples"] = self._stream.dropped_blocks
            if len(self._pending) >= self.config.prediction_queue:
                self._pending.popleft()
                self.counters["dropped_predictions"] += 1
            self._pending.append((tag, arrays[0], qd_c, qdd_c))
            if block is not None:
                self._store(block)

    def add_joint_state(self, t: float, names: Sequence[str], position: Sequence[float],
                        velocity: Sequence[float], effort: Sequence[float], tag: Any = None) -> None:
        """:meth:`add` for a joint state given by names (a sensor_msgs/JointState's fields)."""
        try:
            q, qd, tau = self.mapper.arrays(names, position, velocity, effort)
        except InvalidSample:
            with self._data_lock:
                self.counters["received"] += 1
                self.counters["rejected"] += 1
            raise
        self.add(t, q, qd, tau, tag)

    def _checked(self, t: float, q: Sequence[float], qd: Optional[Sequence[float]],
                 tau: Sequence[float]) -> tuple[np.ndarray, Optional[np.ndarray], np.ndarray]:
        if not math.isfinite(t) or t == 0.0:
            raise InvalidSample(f"stamp {t} is not usable (zero or not finite): stamp the "
                                f"messages", STAMP)
        out = []
        for what, values in (("position", q), ("velocity", qd), ("effort", tau)):
            if values is None and what == "velocity":
                out.append(None)
                continue
            array = np.asarray(values, dtype=np.float64)
            if array.shape != (self.dof,):
                raise InvalidSample(f"{what} has shape {array.shape}, expected ({self.dof},)",
                                    MALFORMED)
            if not np.all(np.isfinite(array)):
                raise InvalidSample(f"NaN/Inf in {what}", NON_FINITE)
            out.append(array)
        return out[0], out[1], out[2]

    def _store(self, block: Block) -> None:
        if self._ring is None:
            rate = min(1.0 / self._stream.dt, self.config.max_rate)
            capacity = max(int(math.ceil(self.config.buffer_seconds * rate)), MIN_RING,
                           self.config.batch_size)
            self._ring = SampleRing(capacity, self.dof)
        self._ring.extend(block)
        if self._ring.total - self._cursor >= self.config.batch_size:
            self._data_ready.set()

    # -- training ----------------------------------------------------------------------------
    def _next_batch(self, replay: bool) -> tuple[Optional[np.ndarray], str]:
        with self._data_lock:
            ring = self._ring
            if ring is None:
                return None, "idle"
            batch = self.config.batch_size
            if self._cursor < ring.oldest():
                self.counters["unused_samples"] += ring.oldest() - self._cursor
                self._cursor = ring.oldest()
            if ring.total - self._cursor >= batch:
                rows = ring.take(np.arange(self._cursor, self._cursor + batch))
                self._cursor += batch
                if ring.total - self._cursor < batch:
                    self._data_ready.clear()
                return rows, "new"
            if replay and ring.count >= batch:
                index = ring.oldest() + self._generator.choice(ring.count, batch, replace=False)
                return ring.take(index), "replay"
            return None, "idle"

    def _recent(self) -> Optional[np.ndarray]:
        with self._data_lock:
            ring = self._ring
            if ring is None or ring.count < 2:
                return None
            n = min(ring.count, self.config.nmse_samples)
            return ring.take(np.arange(ring.total - n, ring.total))

    def step(self, replay: Optional[bool] = None) -> str:
        """One Adam step on L_ID (paper 002 eq. 2): on the next 256 new samples in order, else
        (``replay``, default ``config.replay``) on a random batch of the buffer. Returns
        ``"new"``, ``"replay"``, ``"skipped"`` (non-finite loss or gradient: parameters
        unchanged) or ``"idle"`` (not enough data)."""
        rows, kind = self._next_batch(self.config.replay if replay is None else replay)
        if rows is None:
            return kind
        batch = _to_samples(rows, self.dtype)
        with self._model_lock:
            self._optimiser.zero_grad(set_to_none=True)
            loss = ((self.dynamics(batch.q, batch.qd, batch.qdd) - batch.tau) ** 2).sum(dim=1).mean()
            finite = bool(torch.isfinite(loss))
            if finite:
                loss.backward()
                finite = all(p.grad is None or bool(torch.isfinite(p.grad).all())
                             for p in self._parameters)
            if not finite:
                self._optimiser.zero_grad(set_to_none=True)
                with self._data_lock:
                    self.counters["skipped_updates"] += 1
                return "skipped"
            before = [p.detach().clone() for p in self._parameters]
            self._optimiser.step()
            if not all(bool(torch.isfinite(p).all()) for p in self._parameters):
                with torch.no_grad():
                    for p, old in zip(self._parameters, before):
                        p.copy_(old)
                with self._data_lock:
                    self.counters["skipped_updates"] += 1
                return "skipped"
            state = [p.detach().clone() for p in self._parameters]
            with self._data_lock:
                self.counters["updates"] += 1
                self.counters[f"{kind}_updates"] += 1
                updates = self.counters["updates"]
        with self._predictor_lock, torch.no_grad():
            for copy_, value in zip(self._predictor_parameters, state):
                copy_.copy_(value)
        if updates % self.config.nmse_every == 0 or updates == 1:
            self.evaluate_recent()
        return kind

    def evaluate_recent(self) -> np.ndarray:
        """NMSE per joint of the current estimate on the newest ``nmse_samples`` buffered
        samples (stored for :meth:`snapshot`); empty before there are any. A joint whose torque
        barely varies over that window has a large NMSE (the variance normalises it)."""
        rows = self._recent()
        if rows is None:
            return np.zeros(0)
        samples = _to_samples(rows, self.dtype)
        with self._predictor_lock:
            value = evaluate_nmse(self._predictor, samples)
            if np.all(np.isfinite(value)):
                self._nmse = value
            return self._nmse.copy()

    def start(self, replay_rate: float = 20.0) -> None:
        """Train in a daemon thread: every new batch at once, replay batches at most
        ``replay_rate`` per second (0: none). :meth:`stop` ends it."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(replay_rate,),
                                        name="online_identifier", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._data_ready.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self, replay_rate: float) -> None:
        period = 1.0 / replay_rate if replay_rate > 0 else math.inf
        next_replay = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                kind = self.step(replay=self.config.replay and now >= next_replay)
            except Exception as exc:   # keep learning; the node reports it
                self.last_error = f"{type(exc).__name__}: {exc}"
                with self._data_lock:
                    self.counters["thread_errors"] += 1
                self._stop.wait(1.0)
                continue
            if kind == "replay":
                next_replay = now + period
            elif kind != "new":
                wait = min(0.1, max(next_replay - time.monotonic(), 0.001))
                self._data_ready.wait(wait)

    # -- output ------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """A copy of the counters: received, rejected (bad samples), updates (new_updates +
        replay_updates), skipped_updates (non-finite loss or gradient), unused_samples (left
        the buffer before a new-data step reached them), dropped_predictions,
        non_uniform_samples (not trained on: irregular stamps), segments, thread_errors."""
        with self._data_lock:
            return dict(self.counters)

    @torch.no_grad()
    def predict(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Torques (B, dof) of the current estimate for states (B, dof) (or (dof,))."""
        args = [torch.as_tensor(np.atleast_2d(np.asarray(x, dtype=np.float64)), dtype=self.dtype)
                for x in (q, qd, qdd)]
        with self._predictor_lock:
            tau = self._predictor(*args)
        return tau.cpu().double().numpy()

    def drain_predictions(self) -> list[tuple[Any, np.ndarray]]:
        """(tag, predicted torque (dof,)) for every sample added since the last call, in order:
        the current estimate at the sample's q, qd and causal qdd. Non-finite predictions (none
        expected) are left out and counted."""
        with self._data_lock:
            pending, self._pending = self._pending, collections.deque()
        if not pending:
            return []
        tags, q, qd, qdd = zip(*pending)
        tau = self.predict(np.stack(q), np.stack(qd), np.stack(qdd))
        finite = np.all(np.isfinite(tau), axis=1)
        if not np.all(finite):
            with self._data_lock:
                self.counters["dropped_predictions"] += int(np.count_nonzero(~finite))
        return [(tag, row) for tag, row, ok in zip(tags, tau, finite) if ok]

    def snapshot(self) -> Snapshot:
        """The current estimate (from the prediction copy: never half-updated)."""
        with self._predictor_lock:
            dynamics = self._predictor
            with torch.no_grad():
                inertials = dynamics.inertials()
                damping = dynamics.damping().cpu().double().numpy()
            friction = dynamics.friction_parameters()
            report = consistency_of(dynamics)
            nmse = self._nmse.copy()
        mass, com, inertia = inertials.numpy()
        links = tuple(
            LinkEstimate(name, float(mass[i]), com[i].copy(), inertia[i].copy(),
                         flags.mass_positive, flags.inertia_positive_definite,
                         flags.triangle_inequality)
            for name, i, flags in zip(self.dynamics.learnable_links,
                                      self.dynamics.link_index.tolist(), report.links))
        with self._data_lock:
            counters = dict(self.counters)
            samples = self._ring.total if self._ring is not None else 0
        return Snapshot(self.config.parametrisation, self.joint_names, links, damping, friction,
                        nmse, report.consistent, report.format(), samples,
                        counters["updates"], counters)

    def write(self, path: str) -> tuple[str, str]:
        """Write the current estimate as a URDF at ``path`` (must end in .urdf; relative paths
        are resolved against the current working directory) and a YAML beside it (same name,
        .yaml), each atomically. Returns the two absolute paths; :class:`DiffneaError` (one
        line) if nothing could be written."""
        path = str(path).strip()
        if not path.endswith(".urdf"):
            raise DiffneaError(f"URDF path {path!r} must end in .urdf (the YAML is written "
                               f"beside it with .yaml)")
        urdf_path = os.path.abspath(os.path.expanduser(path))
        if not os.path.isdir(os.path.dirname(urdf_path)):
            raise DiffneaError(f"cannot write {urdf_path}: directory "
                               f"{os.path.dirname(urdf_path)} does not exist")
        yaml_path = urdf_path[:-len(".urdf")] + ".yaml"
        snap = self.snapshot()
        links = {link.name: (link.mass, link.com, link.inertia) for link in snap.links}
        damping = dict(zip(snap.joint_names, snap.damping.tolist()))
        friction = (None if snap.friction is None else
                    {j: (snap.friction.phi1[k], snap.friction.phi2[k], snap.friction.phi3[k])
                     for k, j in enumerate(snap.joint_names)})
        metadata = {"parametrisation": snap.parametrisation, "samples": snap.samples,
                    "updates": snap.updates, "nmse_recent": snap.nmse.tolist(),
                    "consistent": snap.consistent, "robot": self.description.name,
                    "identified_joints": list(snap.joint_names), "source": "diffnea_ros online identifier"}
        urdf_text = export_urdf(self.description.urdf_text, links, damping)
        yaml_text = export_yaml(links, damping, friction, metadata)
        write_text_atomic(urdf_path, urdf_text)
        write_text_atomic(yaml_path, yaml_text)
        return urdf_path, yaml_path
