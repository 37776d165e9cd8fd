"""The online identifier's data side: checked samples, streaming derivatives, the training ring
and the samples awaiting a prediction (paper 002 §4.1.2; README, "Online identification")."""
from __future__ import annotations

import collections
import math
import threading
from typing import Any, Optional, Sequence

import numpy as np

from diffnea_ros.joint_stream import (STAMP, Block, InvalidSample, JointStateMapper, SampleRing,
                                      StreamingDerivatives)
from diffnea_ros.online_config import OnlineConfig
from sim2real_checks import JointBounds, MALFORMED, NON_FINITE

MIN_RING = 1024             # smallest training buffer [samples]

# (tag, q, qd, causal qdd) of a sample awaiting its prediction
Pending = tuple[Any, np.ndarray, np.ndarray, np.ndarray]


class OnlineBuffer:
    """Samples (t, q, qd, tau) in, batches out. Zero-phase Savitzky-Golay derivatives of the
    finished samples go into a ring of ``buffer_seconds`` at the first segment's rate (at most
    ``max_rate``); every sample queues (tag, q, qd, causal qdd) for a prediction. Thread-safe."""

    def __init__(self, joint_names: Sequence[str], config: OnlineConfig,
                 bounds: Optional[JointBounds] = None) -> None:
        self.config = config
        self.mapper = JointStateMapper(joint_names, bounds)
        self.dof = len(joint_names)
        self._stream = StreamingDerivatives(self.dof, config.window_seconds, config.polyorder,
                                            config.gap_periods)
        self._ring: Optional[SampleRing] = None
        self._pending: collections.deque[Pending] = collections.deque()
        self._generator = np.random.default_rng(config.seed)
        self._lock = threading.Lock()            # stream, ring, pending, cursor, counters
        self._ready = threading.Event()          # a new batch waits (or wake())
        self._cursor = 0                         # global index of the next sample not trained on
        self.counters: dict[str, int] = {
            "received": 0, "rejected": 0, "unused_samples": 0, "dropped_predictions": 0,
            "non_uniform_samples": 0, "segments": 0}

    def add(self, t: float, q: Sequence[float], qd: Optional[Sequence[float]],
            tau: Sequence[float], tag: Any = None) -> None:
        """One sample at stamp ``t`` [s] in the model's joint order (``qd`` None: not measured).
        :class:`InvalidSample` (counted) for a non-finite or zero stamp, wrong lengths, NaN/Inf
        or a repeated stamp."""
        with self._lock:
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
            with self._lock:
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
            self._ready.set()

    def next_batch(self, replay: bool) -> tuple[Optional[np.ndarray], str]:
        """Rows (batch_size, 4, dof) of (q, qd, qdd, tau) and their kind: ``"new"`` (the next
        samples not trained on, in order; those that left the ring first are counted unused),
        else ``"replay"`` (``replay``: a random batch of the ring), else (None, ``"idle"``)."""
        with self._lock:
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
                    self._ready.clear()
                return rows, "new"
            if replay and ring.count >= batch:
                index = ring.oldest() + self._generator.choice(ring.count, batch, replace=False)
                return ring.take(index), "replay"
            return None, "idle"

    def recent(self) -> Optional[np.ndarray]:
        """The newest ``nmse_samples`` rows of the ring; None before there are two."""
        with self._lock:
            ring = self._ring
            if ring is None or ring.count < 2:
                return None
            n = min(ring.count, self.config.nmse_samples)
            return ring.take(np.arange(ring.total - n, ring.total))

    def drain(self) -> collections.deque[Pending]:
        """The samples awaiting a prediction, in order; the queue starts empty again."""
        with self._lock:
            pending, self._pending = self._pending, collections.deque()
        return pending

    def count_dropped(self, n: int) -> None:
        """Count ``n`` predictions withheld after :meth:`drain`."""
        with self._lock:
            self.counters["dropped_predictions"] += n

    def counts(self) -> dict[str, int]:
        """A copy of the data counters."""
        with self._lock:
            return dict(self.counters)

    @property
    def samples(self) -> int:
        """Finished samples that entered the ring."""
        with self._lock:
            return self._ring.total if self._ring is not None else 0

    def wait(self, timeout: float) -> None:
        """Wait at most ``timeout`` [s] for a new batch (or :meth:`wake`)."""
        self._ready.wait(timeout)

    def wake(self) -> None:
        """Release :meth:`wait` (a stopping training thread)."""
        self._ready.set()
