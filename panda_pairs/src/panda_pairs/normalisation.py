"""Normalisation of the 21-dimensional robot state by the joint limits (paper 000 §IV-B: "the
trajectories are cut and normalized by using the specifications of the robot joint limits ...
Normalization of the data set to the interval [0, 1]"; §IV-C: residuals then lie in [-1, 1]).

Columns are [q (dof), qd (dof), tau (dof)]: positions map [position_min, position_max] to
[0, 1], velocities [-velocity, velocity] and torques [-effort, effort] likewise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panda_sim2real import ConfigError, JointLimits

_KEYS = ("lower", "upper", "joint_names")


@dataclass(frozen=True)
class JointLimitScaler:
    """Affine map x -> (x - lower) / (upper - lower) per column, from the joint limits."""

    lower: np.ndarray        # (3 dof,)
    upper: np.ndarray        # (3 dof,)
    joint_names: tuple[str, ...]

    @classmethod
    def from_limits(cls, limits: JointLimits) -> "JointLimitScaler":
        lower = np.concatenate([limits.position_min, -limits.velocity, -limits.effort])
        upper = np.concatenate([limits.position_max, limits.velocity, limits.effort])
        return cls(lower.astype(float), upper.astype(float), tuple(limits.joint_names))

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def scale(self) -> np.ndarray:
        """upper - lower per column: a normalised residual times this is a physical one."""
        return self.upper - self.lower

    def _check(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.shape[-1] != self.lower.shape[0]:
            raise ValueError(f"expected {self.lower.shape[0]} columns [q, qd, tau], "
                             f"got shape {x.shape}")
        return x

    def transform(self, x: np.ndarray) -> np.ndarray:
        """Physical (..., 3 dof) -> normalised; inside the limits this is in [0, 1]."""
        return (self._check(x) - self.lower) / self.scale

    def inverse_transform(self, y: np.ndarray) -> np.ndarray:
        """Normalised (..., 3 dof) -> physical units (rad, rad/s, N m)."""
        return self._check(y) * self.scale + self.lower

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays (no objects) for an npz that loads with ``allow_pickle=False``."""
        return {"lower": self.lower.copy(), "upper": self.upper.copy(),
                "joint_names": np.array(self.joint_names, dtype=str)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "JointLimitScaler":
        """Inverse of :meth:`to_arrays`; raises ConfigError for missing or inconsistent arrays."""
        missing = [k for k in _KEYS if k not in arrays]
        if missing:
            raise ConfigError(f"scaler arrays lack {', '.join(missing)}")
        lower = np.asarray(arrays["lower"], dtype=float)
        upper = np.asarray(arrays["upper"], dtype=float)
        names = tuple(str(n) for n in np.asarray(arrays["joint_names"]).reshape(-1))
        if (lower.shape != (3 * len(names),) or upper.shape != lower.shape
                or not np.all(np.isfinite(lower)) or not np.all(np.isfinite(upper))
                or np.any(upper <= lower)):
            raise ConfigError(f"scaler arrays are inconsistent: {len(names)} joints, "
                              f"lower {lower.shape}, upper {upper.shape}")
        return cls(lower, upper, names)
