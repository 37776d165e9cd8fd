"""Which float fields of a ROS message hold NaN or Inf: the publish-side check that keeps a node
from relaying a non-finite value it did not read itself (e.g. the effort of a JointState whose
positions and velocities are the state)."""
from __future__ import annotations

import math
from typing import Any


def non_finite_fields(msg: Any, prefix: str = "") -> list[str]:
    """Paths (``effort[2]``, ``pose.position.x``) of the non-finite floats of ``msg``."""
    found: list[str] = []
    for name in getattr(msg, "__slots__", ()):
        value = getattr(msg, name)
        path = f"{prefix}{name}"
        if isinstance(value, float):
            if not math.isfinite(value):
                found.append(path)
        elif isinstance(value, (list, tuple)):
            for k, item in enumerate(value):
                if isinstance(item, float):
                    if not math.isfinite(item):
                        found.append(f"{path}[{k}]")
                elif hasattr(item, "__slots__"):
                    found += non_finite_fields(item, f"{path}[{k}].")
        elif hasattr(value, "__slots__"):
            found += non_finite_fields(value, f"{path}.")
    return found
