"""Settings of the online identifier (paper 002 §4.1.2 with Cov), checked once at start-up."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from diffnea_ros.acceleration import DEFAULT_GAP_PERIODS, DEFAULT_POLYORDER, DEFAULT_WINDOW_SECONDS
from diffnea_ros.errors import DiffneaError
from diffnea_ros.identification import ONLINE_BATCH
from diffnea_ros.parametrisation import PARAMETRISATIONS


@dataclass(frozen=True)
class OnlineConfig:
    """Settings of :class:`~diffnea_ros.online_identifier.OnlineIdentifier` (defaults: paper 002
    §4.1.2 with Cov)."""

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
