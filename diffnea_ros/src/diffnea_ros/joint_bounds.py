"""The physical bounds of the identifier's joint states: a measured state's bounds from the
robot's joint limits (panda_sim2real's ``JointLimits.bounds(measured=True)``; the Panda's by
default), for the joints the limits name. A joint they do not name (another robot's) keeps the
name, size and NaN/Inf checks only."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from panda_sim2real import JointLimits
from sim2real_checks import JointBounds


def measured_bounds(names: Sequence[str], limits: JointLimits
                    ) -> tuple[JointBounds, tuple[str, ...]]:
    """The bounds in ``names`` order, and the names without limits (unbounded)."""
    measured = limits.bounds(measured=True)
    index = {name: k for k, name in enumerate(limits.joint_names)}

    def pick(values: np.ndarray, missing: float) -> np.ndarray:
        return np.array([values[index[n]] if n in index else missing for n in names],
                        dtype=np.float64)

    bounds = JointBounds(pick(measured.position_min, -np.inf), pick(measured.position_max, np.inf),
                         pick(measured.velocity_max, np.inf), pick(measured.effort_max, np.inf))
    return bounds, tuple(n for n in names if n not in index)
