"""The interface every structured policy implements (paper 004 §IV), shared by the in-process
evaluation and the ROS controller nodes."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Optional

import numpy as np

from trifinger_controllers.types import TORQUE_LIMIT, Observation


class Controller(ABC):
    """A TriFinger cube policy: ``reset`` once per episode, then ``compute`` at ``rate_hz``
    (CPC 200 Hz, CIC 100 Hz, MP 500 Hz); the torque is held by the platform between calls.

    Subclasses set ``name`` and ``rate_hz`` and implement :meth:`reset` and :meth:`_torque`;
    :meth:`compute` clips to the robot's limit and checks the result (never NaN)."""

    name: ClassVar[str]
    rate_hz: ClassVar[float]

    @abstractmethod
    def reset(self, observation: Observation) -> None:
        """Start an episode from ``observation`` (plans, grasp selection)."""

    @abstractmethod
    def _torque(self, observation: Observation) -> np.ndarray:
        """The (9,) joint torque command before clipping."""

    def set_asynchronous_planning(self, enabled: bool) -> None:
        """Plans asked for during an episode (re-grasps, controllers/grasp_planner.py) are taken
        as soon as they arrive (True: free running, as on the robot) or a fixed simulated time
        after they were asked for (False, the default: deterministic evaluation and lock step).
        Controllers that plan only in ``reset`` ignore it."""

    def compute(self, observation: Observation) -> np.ndarray:
        """The (9,) torque command, clipped to +-TORQUE_LIMIT; a non-finite command is a bug
        and raises (the caller then holds a safe zero torque)."""
        torque = np.asarray(self._torque(observation), dtype=float)
        if torque.shape != (9,) or not np.all(np.isfinite(torque)):
            raise FloatingPointError(f"{self.name}: invalid torque command {torque!r}")
        return np.clip(torque, -TORQUE_LIMIT, TORQUE_LIMIT)


class CallInterval:
    """Simulated time [s] since the previous call (0 on the first): a controller's step ``dt``
    from the observations' times, robust to a call being skipped."""

    def __init__(self) -> None:
        self._last: Optional[float] = None

    def __call__(self, t: float) -> float:
        dt = 0.0 if self._last is None else max(0.0, t - self._last)
        self._last = t
        return dt
