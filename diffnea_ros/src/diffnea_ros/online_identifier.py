"""Online identification from a stream of joint states (paper 002 §4.1.2, online mode).

:class:`OnlineIdentifier` joins the data side (:mod:`~diffnea_ros.online_buffer`), Adam on L_ID
(eq. 2, :mod:`~diffnea_ros.online_trainer`: new data first in sequential batches of 256, then
replay of the buffer) and the prediction copy (:mod:`~diffnea_ros.online_predictor`), and trains
in :meth:`~OnlineIdentifier.step` or a background thread (:meth:`~OnlineIdentifier.start`).
README, "Online identification", for the details. :meth:`~OnlineIdentifier.add`,
:meth:`~OnlineIdentifier.step`, :meth:`~OnlineIdentifier.drain_predictions`,
:meth:`~OnlineIdentifier.snapshot` and :meth:`~OnlineIdentifier.write` may be called from
different threads.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import torch

from diffnea_ros.export import write_identified
from diffnea_ros.identification import Samples
from diffnea_ros.learnable import LearnableDynamics
from diffnea_ros.joint_stream import JointStateMapper
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.online_buffer import OnlineBuffer
from diffnea_ros.online_config import OnlineConfig
from diffnea_ros.online_predictor import Estimate, LinkEstimate, OnlinePredictor
from diffnea_ros.online_trainer import OnlineTrainer
from diffnea_ros.urdf import RobotDescription
from sim2real_checks import JointBounds

__all__ = ["COUNTERS", "LinkEstimate", "OnlineConfig", "OnlineIdentifier", "Snapshot"]

# the counters of :meth:`OnlineIdentifier.counts`, in their order
COUNTERS = ("received", "rejected", "updates", "new_updates", "replay_updates", "skipped_updates",
            "unused_samples", "dropped_predictions", "non_uniform_samples", "segments",
            "thread_errors")


def _to_samples(rows: np.ndarray, dtype: torch.dtype) -> Samples:
    return Samples(*(torch.as_tensor(rows[:, k], dtype=dtype) for k in range(4)))


@dataclass(frozen=True)
class Snapshot(Estimate):
    """A consistent copy of the current estimate and the identifier's counters."""

    parametrisation: str
    joint_names: tuple[str, ...]
    samples: int                           # finished samples that entered the buffer
    updates: int
    counters: dict[str, int] = field(default_factory=dict)


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
        dynamics = LearnableDynamics(model, config.parametrisation, config.learnable_links,
                                     friction=config.friction).to(dtype)
        self._trainer = OnlineTrainer(dynamics, config.learning_rate)
        self._predictor = OnlinePredictor(dynamics, dtype)
        self._buffer = OnlineBuffer(model.joint_names, config, bounds)
        self._lock = threading.Lock()            # the training counters
        self._training = {"updates": 0, "new_updates": 0, "replay_updates": 0,
                          "skipped_updates": 0, "thread_errors": 0}
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self.last_error: Optional[str] = None

    @property
    def dynamics(self) -> LearnableDynamics:
        """The model being trained (the predictions use a copy)."""
        return self._trainer.dynamics

    @property
    def mapper(self) -> JointStateMapper:
        return self._buffer.mapper

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.dynamics.model.joint_names

    @property
    def dof(self) -> int:
        return self.dynamics.model.dof

    # -- input -------------------------------------------------------------------------------
    def add(self, t: float, q: Sequence[float], qd: Optional[Sequence[float]],
            tau: Sequence[float], tag: Any = None) -> None:
        """One sample at stamp ``t`` [s] in the model's joint order (``qd`` None: not measured).

        Raises :class:`~diffnea_ros.joint_stream.InvalidSample` (and counts it) for a
        non-finite or zero stamp, wrong lengths, NaN/Inf values or a repeated stamp. ``tag``
        (e.g. the message header) is handed back with the sample's prediction by
        :meth:`drain_predictions`.
        """
        self._buffer.add(t, q, qd, tau, tag)

    def add_joint_state(self, t: float, names: Sequence[str], position: Sequence[float],
                        velocity: Sequence[float], effort: Sequence[float], tag: Any = None) -> None:
        """:meth:`add` for a joint state given by names (a sensor_msgs/JointState's fields)."""
        self._buffer.add_joint_state(t, names, position, velocity, effort, tag)

    # -- training ----------------------------------------------------------------------------
    def step(self, replay: Optional[bool] = None) -> str:
        """One Adam step on L_ID (paper 002 eq. 2): on the next 256 new samples in order, else
        (``replay``, default ``config.replay``) on a random batch of the buffer. Returns
        ``"new"``, ``"replay"``, ``"skipped"`` (non-finite loss or gradient: parameters
        unchanged) or ``"idle"`` (not enough data)."""
        rows, kind = self._buffer.next_batch(self.config.replay if replay is None else replay)
        if rows is None:
            return kind
        state = self._trainer.update(_to_samples(rows, self.dtype))
        if state is None:
            self._count("skipped_updates")
            return "skipped"
        updates = self._count("updates", f"{kind}_updates")
        self._predictor.load(state)
        if updates % self.config.nmse_every == 0 or updates == 1:
            self.evaluate_recent()
        return kind

    def _count(self, *names: str) -> int:
        """Add one to each of the training counters ``names``; the first one's new value."""
        with self._lock:
            for name in names:
                self._training[name] += 1
            return self._training[names[0]]

    def evaluate_recent(self) -> np.ndarray:
        """NMSE per joint of the current estimate on the newest ``nmse_samples`` buffered
        samples (stored for :meth:`snapshot`); empty before there are any. A joint whose torque
        barely varies over that window has a large NMSE (the variance normalises it)."""
        rows = self._buffer.recent()
        if rows is None:
            return np.zeros(0)
        return self._predictor.evaluate(_to_samples(rows, self.dtype))

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
        """End the training thread, waiting at most ``timeout`` [s] for its current step."""
        self._stop.set()
        self._buffer.wake()
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
                self._count("thread_errors")
                self._stop.wait(1.0)
                continue
            if kind == "replay":
                next_replay = now + period
            elif kind != "new":
                self._buffer.wait(min(0.1, max(next_replay - time.monotonic(), 0.001)))

    # -- output ------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """A copy of the counters: received, rejected (bad samples), updates (new_updates +
        replay_updates), skipped_updates (non-finite loss or gradient), unused_samples (left
        the buffer before a new-data step reached them), dropped_predictions,
        non_uniform_samples (not trained on: irregular stamps), segments, thread_errors."""
        values = self._buffer.counts()
        with self._lock:
            values.update(self._training)
        return {name: values[name] for name in COUNTERS}

    @property
    def counters(self) -> dict[str, int]:
        """:meth:`counts`."""
        return self.counts()

    def predict(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Torques (B, dof) of the current estimate for states (B, dof) (or (dof,))."""
        return self._predictor.predict(q, qd, qdd)

    def drain_predictions(self) -> list[tuple[Any, np.ndarray]]:
        """(tag, predicted torque (dof,)) for every sample added since the last call, in order:
        the current estimate at the sample's q, qd and causal qdd. Non-finite predictions (none
        expected) are left out and counted."""
        pending = self._buffer.drain()
        if not pending:
            return []
        tags, q, qd, qdd = zip(*pending)
        tau = self.predict(np.stack(q), np.stack(qd), np.stack(qdd))
        finite = np.all(np.isfinite(tau), axis=1)
        if not np.all(finite):
            self._buffer.count_dropped(int(np.count_nonzero(~finite)))
        return [(tag, row) for tag, row, ok in zip(tags, tau, finite) if ok]

    def snapshot(self) -> Snapshot:
        """The current estimate (from the prediction copy: never half-updated)."""
        estimate = self._predictor.estimate()
        counters = self.counts()
        return Snapshot(**vars(estimate), parametrisation=self.config.parametrisation,
                        joint_names=self.joint_names, samples=self._buffer.samples,
                        updates=counters["updates"], counters=counters)

    def write(self, path: str) -> tuple[str, str]:
        """The current estimate as a URDF at ``path`` (must end in .urdf; relative to the working
        directory) and a YAML beside it (.yaml), each atomically
        (:func:`~diffnea_ros.export.write_identified`). Returns the two absolute paths;
        :class:`~diffnea_ros.errors.DiffneaError` (one line) if nothing could be written."""
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
        return write_identified(str(path).strip(), None, self.description.urdf_text, links,
                                damping, friction, metadata)
