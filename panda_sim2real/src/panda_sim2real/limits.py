"""Joint limits of the Franka Emika Panda, loaded from ``config/panda_limits.yaml``."""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any, Optional

import numpy as np
from sim2real_checks import JointBounds, read_yaml

from panda_sim2real.errors import ConfigError

MEASURED_POSITION_MARGIN = 0.1   # rad a measured joint may be past its limit (overshoot, sensing)
MEASURED_RATE_FACTOR = 2.0       # a measured velocity or torque (a collision) may pass its limit

PACKAGE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIG_DIR = os.path.join(PACKAGE_DIR, "config")
DEFAULT_LIMITS_FILE = os.path.join(CONFIG_DIR, "panda_limits.yaml")


@dataclass(frozen=True)
class JointLimits:
    """Position, velocity, effort, acceleration and jerk limits of a serial arm, in joint order."""

    joint_names: tuple[str, ...]
    position_min: np.ndarray
    position_max: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray
    home: np.ndarray

    def __eq__(self, other: object) -> bool:
        """Equal names and equal limits (the generated comparison fails on numpy arrays)."""
        if not isinstance(other, JointLimits):
            return NotImplemented
        return self.joint_names == other.joint_names and all(
            np.array_equal(getattr(self, f.name), getattr(other, f.name))
            for f in fields(self) if f.name != "joint_names")

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @classmethod
    def from_yaml(cls, path: Optional[str] = None) -> "JointLimits":
        """The limits in the YAML file ``path`` (None: config/panda_limits.yaml)."""
        path = path or DEFAULT_LIMITS_FILE
        return cls.from_dict(read_yaml(path, "joint limits", ConfigError), path)

    @classmethod
    def from_dict(cls, raw: Any, source: str = "<memory>") -> "JointLimits":
        """The limits in a mapping of config/panda_limits.yaml's schema (a node's ``~limits``
        parameter); ConfigError naming ``source`` and the entry."""
        if not isinstance(raw, dict):
            raise ConfigError(f"joint limits {source}: expected a mapping, got {type(raw).__name__}")
        try:
            names = tuple(str(n) for n in raw["joint_names"])
            arrays = {k: np.asarray(raw[k], dtype=float) for k in
                      ("position_min", "position_max", "velocity", "effort", "acceleration",
                       "jerk", "home")}
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"joint limits {source}: missing or malformed entry {exc}") from exc
        for key, arr in arrays.items():
            if arr.shape != (len(names),) or not np.all(np.isfinite(arr)):
                raise ConfigError(f"joint limits {source}: '{key}' needs {len(names)} finite numbers")
        if np.any(arrays["position_min"] >= arrays["position_max"]):
            raise ConfigError(f"joint limits {source}: position_min must be below position_max")
        return cls(joint_names=names, **arrays)

    def within_position(self, q: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """Element-wise: is ``q`` inside the position limits shrunk by ``margin`` [rad]?"""
        return (q >= self.position_min + margin) & (q <= self.position_max - margin)

    def bounds(self, measured: bool) -> JointBounds:
        """The physical bounds of a JointState: a command's are the limits themselves; a
        measured state's are widened by MEASURED_POSITION_MARGIN and MEASURED_RATE_FACTOR (a
        real joint overshoots and a collision torque passes the rated one), still far below
        anything a working robot or simulator reports."""
        if measured:
            return JointBounds.from_limits(self.position_min, self.position_max, self.velocity,
                                           self.effort, MEASURED_POSITION_MARGIN,
                                           MEASURED_RATE_FACTOR)
        return JointBounds.from_limits(self.position_min, self.position_max, self.velocity,
                                       self.effort)
