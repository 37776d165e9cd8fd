"""Realeasy on a live stream of joint states (paper 000 Algorithms 2-3), without ROS: the
``residual_publisher`` node is a thin layer over :class:`ResidualStream`.

* :class:`~sim2real_checks.joint_state.JointStateLayout` maps each JointState into the
  model's [q, qd, tau] order by joint name, or says what is wrong with it (repeated or missing
  joints, wrong lengths, NaN/Inf, values beyond the robot's bounds), before the hidden state is
  touched.
* :class:`ResidualStream` runs one realtime step per valid sample (warm-up first, Algorithm 2) and
  resets the hidden state on a time jump backwards (a restarted simulator or a replayed bag).
* :class:`LatencyStats` keeps the last processing latencies for the node's statistics.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from sim2real_checks import InvalidJointState, JointBounds, JointStateLayout
from realeasy_ros.model import RealeasyModel
from realeasy_ros.realtime import RealtimeResidual

__all__ = ["InvalidJointState", "JointStateLayout", "LatencyStats", "ResidualStream",
           "StreamCounters"]


@dataclass
class StreamCounters:
    messages: int = 0        # every sample offered
    corrected: int = 0       # published with the residual applied
    warmup: int = 0          # published unchanged during warm-up (Algorithm 2)
    rejected: int = 0        # dropped as invalid
    resets: int = 0          # hidden-state resets (time jumps backwards, ~reset)


class ResidualStream:
    """One realtime Realeasy step per valid joint state (Algorithm 3), after warm-up (Algorithm 2).

    After :meth:`process` the corrected state is in ``corrected`` and the residual in
    ``residual`` (physical units, the model's joint order); both arrays are reused. With
    ``bounds`` (in the model's joint order) a sample beyond them is rejected like a malformed one.
    """

    def __init__(self, model: RealeasyModel, bounds: Optional[JointBounds] = None) -> None:
        self.model = model
        self.layout = JointStateLayout(model.joint_names, bounds)
        self.core = RealtimeResidual(model)
        width = 3 * self.layout.dof
        self.x = np.zeros(width)
        self.corrected = np.zeros(width)
        self.residual = np.zeros(width)
        self.last_stamp: Optional[float] = None
        self.counters = StreamCounters()

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.layout.joint_names

    def reset(self) -> None:
        """Forget the hidden state; the next samples warm it up again."""
        self.core.reset()
        self.last_stamp = None
        self.counters.resets += 1

    def process(self, stamp: float, names: Sequence[str], position: Sequence[float],
                velocity: Sequence[float], effort: Sequence[float]) -> bool:
        """Correct one sample; True if the residual was applied, False during warm-up.
        Raises InvalidJointState for a bad sample, leaving the hidden state as it was."""
        self.counters.messages += 1
        try:
            self.layout.fill(names, position, velocity, effort, self.x)
        except InvalidJointState:
            self.counters.rejected += 1
            raise
        if self.last_stamp is not None and stamp < self.last_stamp:
            self.reset()
        self.last_stamp = stamp
        applied = self.core.update(self.x, self.corrected, self.residual)
        if applied:
            self.counters.corrected += 1
        else:
            self.counters.warmup += 1
        return applied


@dataclass
class LatencyStats:
    """The last ``capacity`` latencies [s] in a ring buffer (no allocation per sample)."""

    capacity: int = 10000
    _buffer: np.ndarray = field(init=False, repr=False)
    _count: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError("capacity must be positive")
        self._buffer = np.zeros(self.capacity)

    def add(self, seconds: float) -> None:
        self._buffer[self._count % self.capacity] = seconds
        self._count += 1

    @property
    def count(self) -> int:
        return self._count

    def summary(self) -> dict[str, float]:
        """median, p99 and max of the buffered latencies in microseconds (zeros when empty)."""
        n = min(self._count, self.capacity)
        if n == 0:
            return {"median_us": 0.0, "p99_us": 0.0, "max_us": 0.0, "samples": 0}
        values = self._buffer[:n] * 1e6
        return {"median_us": float(np.median(values)), "p99_us": float(np.percentile(values, 99)),
                "max_us": float(values.max()), "samples": n}
