"""The check of a sensor_msgs/JointState: names, sizes, NaN/Inf and physical bounds, with the
values returned in the checker's joint order."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from sim2real_checks.errors import Rejected

FIELDS = ("position", "velocity", "effort")


@dataclass(frozen=True)
class JointStateSpec:
    """What a node accepts. ``names``: the joints it needs, in its order (others in the message
    are refused unless ``allow_extra``). ``required``: the fields that need one value per joint;
    the others may be empty (absent) or full. Bounds are optional arrays in ``names`` order:
    ``position_min/max`` and the magnitude limits ``velocity_max`` and ``effort_max``."""

    names: tuple[str, ...]
    required: tuple[str, ...] = ("position",)
    position_min: Optional[np.ndarray] = None
    position_max: Optional[np.ndarray] = None
    velocity_max: Optional[np.ndarray] = None
    effort_max: Optional[np.ndarray] = None
    allow_extra: bool = False

    @classmethod
    def from_limits(cls, names: Sequence[str], position_min: Sequence[float],
                    position_max: Sequence[float], velocity: Sequence[float],
                    effort: Sequence[float], position_margin: float = 0.0, rate_factor: float = 1.0,
                    required: tuple[str, ...] = ("position",),
                    allow_extra: bool = False) -> "JointStateSpec":
        """Bounds from a robot's limits. A measured state may pass a limit a little: widen the
        positions by ``position_margin`` (rad) and the velocity and effort limits by
        ``rate_factor``; a command takes the limits as they are (0 and 1)."""
        return cls(tuple(names), required,
                   np.asarray(position_min, dtype=float) - position_margin,
                   np.asarray(position_max, dtype=float) + position_margin,
                   np.asarray(velocity, dtype=float) * rate_factor,
                   np.asarray(effort, dtype=float) * rate_factor, allow_extra)


@dataclass(frozen=True)
class JointValues:
    """A checked JointState in the spec's joint order; an absent optional field is empty."""

    stamp: float
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


def check_joint_state(msg: Any, spec: JointStateSpec) -> JointValues:
    """The values of ``msg`` in ``spec.names`` order, or :class:`Rejected` with the first problem
    found: ``names`` (unknown, missing, repeated), ``size``, ``non-finite``, ``bounds``."""
    names = list(msg.name)
    if len(set(names)) != len(names):
        raise Rejected("names", f"repeated joint names in {names}")
    missing = [n for n in spec.names if n not in names]
    if missing:
        raise Rejected("names", f"joints {missing} missing (got {names})")
    extra = [n for n in names if n not in spec.names]
    if extra and not spec.allow_extra:
        raise Rejected("names", f"unknown joints {extra}; expected {list(spec.names)}")
    order = [names.index(n) for n in spec.names]
    values = {}
    for field in FIELDS:
        raw = getattr(msg, field)
        if len(raw) == 0 and field not in spec.required:
            values[field] = np.zeros(0)
            continue
        if len(raw) != len(names):
            raise Rejected("size", f"{len(raw)} {field} values for {len(names)} joint names")
        array = np.asarray(raw, dtype=float)[order]
        if not np.all(np.isfinite(array)):
            raise Rejected("non-finite", f"NaN/Inf in {field}")
        values[field] = array
    _check_bounds(spec, values)
    return JointValues(msg.header.stamp.to_sec(), values["position"], values["velocity"],
                       values["effort"])


def _check_bounds(spec: JointStateSpec, values: dict[str, np.ndarray]) -> None:
    q = values["position"]
    if len(q) and spec.position_min is not None and spec.position_max is not None:
        outside = np.flatnonzero((q < spec.position_min) | (q > spec.position_max))
        if outside.size:
            j = int(outside[0])
            raise Rejected("bounds", f"{spec.names[j]} position {q[j]:.4g} rad outside "
                                     f"[{spec.position_min[j]:.4g}, {spec.position_max[j]:.4g}]")
    for field, limit in (("velocity", spec.velocity_max), ("effort", spec.effort_max)):
        v = values[field]
        if len(v) and limit is not None:
            beyond = np.flatnonzero(np.abs(v) > limit)
            if beyond.size:
                j = int(beyond[0])
                raise Rejected("bounds", f"{spec.names[j]} {field} {v[j]:.4g} beyond ±{limit[j]:.4g}")
