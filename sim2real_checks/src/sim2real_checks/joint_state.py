"""The one check of a sensor_msgs/JointState, shared by every node and bag reader: a message
mapped by joint name onto a model's joint order, or the first problem found (repeated, missing
or unknown joints, wrong lengths, NaN/Inf, values beyond the robot's physical bounds).
:class:`JointStateLayout` maps fields both ways (the 21-dimensional [q, qd, tau] state of paper
000 §IV); :class:`JointStateSpec` with :func:`check_joint_state` is the per-message form."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Optional, Sequence

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from sim2real_checks.errors import Rejected

# InvalidJointState.reason: what is wrong, for the throttled logs and the dropped-message counts
MALFORMED = "malformed"            # names and arrays do not match (lengths, repeated names)
MISSING_JOINT = "missing_joint"    # a joint of the layout is not in the message
UNKNOWN_JOINT = "unknown_joint"    # a joint the layout does not know (where extras are refused)
NON_FINITE = "non_finite"          # NaN/Inf in a value of the layout's joints
OUT_OF_BOUNDS = "bounds"           # beyond a position, velocity or effort bound
FIELDS = ("position", "velocity", "effort")


class InvalidJointState(Rejected):
    """A joint state that cannot be used; the message says why (one line)."""

    def __init__(self, message: str, reason: str = MALFORMED) -> None:
        super().__init__(reason, message)


@dataclass(frozen=True)
class JointBounds:
    """Physical bounds in a layout's joint order: positions in [position_min, position_max],
    |velocity| <= velocity_max, |effort| <= effort_max."""

    position_min: np.ndarray
    position_max: np.ndarray
    velocity_max: np.ndarray
    effort_max: np.ndarray

    @classmethod
    def from_limits(cls, position_min: Sequence[float], position_max: Sequence[float],
                    velocity: Sequence[float], effort: Sequence[float],
                    position_margin: float = 0.0, rate_factor: float = 1.0) -> "JointBounds":
        """Bounds from a robot's limits. A measured state may pass a limit a little: widen the
        positions by ``position_margin`` (rad) and the velocity and effort limits by
        ``rate_factor``; a command takes the limits as they are (0 and 1)."""
        as_array = lambda v: np.asarray(v, dtype=np.float64)  # noqa: E731
        return cls(as_array(position_min) - position_margin,
                   as_array(position_max) + position_margin,
                   as_array(velocity) * rate_factor, as_array(effort) * rate_factor)

    def check(self, names: Sequence[str], q: Optional[np.ndarray], qd: Optional[np.ndarray],
              tau: Optional[np.ndarray]) -> None:
        """InvalidJointState (OUT_OF_BOUNDS) for the first value beyond its bound (None: absent)."""
        outside = np.zeros(0, dtype=bool) if q is None else \
            (q < self.position_min) | (q > self.position_max)
        if outside.any():
            j = int(np.flatnonzero(outside)[0])
            raise InvalidJointState(f"{names[j]} position {q[j]:.4g} rad outside "
                                    f"[{self.position_min[j]:.4g}, {self.position_max[j]:.4g}]",
                                    OUT_OF_BOUNDS)
        for field_name, values, limit in (("velocity", qd, self.velocity_max),
                                          ("effort", tau, self.effort_max)):
            if values is not None and (np.abs(values) > limit).any():
                j = int(np.flatnonzero(np.abs(values) > limit)[0])
                raise InvalidJointState(f"{names[j]} {field_name} {values[j]:.4g} beyond "
                                        f"±{limit[j]:.4g}", OUT_OF_BOUNDS)


def check_fields(names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
                 effort: Sequence[float], require_velocity: bool = True,
                 require_effort: bool = True, require_position: bool = True) -> None:
    """InvalidJointState (MALFORMED) unless the names are distinct and each field has one value
    per name; a field not required may also be empty (not measured)."""
    n = len(names)
    required = {"position": require_position, "velocity": require_velocity,
                "effort": require_effort}
    for field_name, values in zip(FIELDS, (position, velocity, effort)):
        if len(values) != n and not (not required[field_name] and len(values) == 0):
            raise InvalidJointState(f"{field_name} has {len(values)} values for {n} joint names")
    if len(set(names)) != n:
        repeated = sorted({name for name in names if list(names).count(name) > 1})
        raise InvalidJointState(f"duplicate joint names in {list(names)} "
                                f"({', '.join(repeated)} repeated)")


class JointStateLayout:
    """The model's joint order; maps a JointState's fields onto it by name. Extra joints (a
    gripper's) are ignored unless ``allow_extra`` is False; ``bounds`` (optional) are checked."""

    def __init__(self, joint_names: Sequence[str], bounds: Optional[JointBounds] = None,
                 allow_extra: bool = True) -> None:
        self.joint_names = tuple(joint_names)
        self.dof = len(self.joint_names)
        self.bounds = bounds
        self.allow_extra = allow_extra
        self._cached: tuple[Optional[tuple[str, ...]], Optional[list[int]]] = (None, None)

    def _order_for(self, names: Sequence[str]) -> Optional[list[int]]:
        """Index of each model joint in ``names`` (distinct); None when ``names`` is the model's
        order."""
        names = tuple(names)
        cached_names, cached_order = self._cached     # one tuple: safe across callback threads
        if names == cached_names:
            return cached_order
        index = {n: i for i, n in enumerate(names)}
        missing = [n for n in self.joint_names if n not in index]
        if missing:
            raise InvalidJointState(f"missing joint(s) {', '.join(missing)} "
                                    f"(got {list(names)})", MISSING_JOINT)
        if not self.allow_extra and len(names) != self.dof:
            unknown = [n for n in names if n not in self.joint_names]
            raise InvalidJointState(f"unknown joint(s) {', '.join(unknown)}; expected "
                                    f"{list(self.joint_names)}", UNKNOWN_JOINT)
        order = [index[n] for n in self.joint_names]
        mapped = None if order == list(range(self.dof)) and len(names) == self.dof else order
        self._cached = (names, mapped)
        return mapped

    def arrays(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
               effort: Sequence[float], require_velocity: bool = True, require_effort: bool = True,
               require_position: bool = True
               ) -> tuple[Optional[np.ndarray], Optional[np.ndarray], Optional[np.ndarray]]:
        """(q, qd, tau), each (dof,) float64 in the layout's order; a field that is not required
        and empty is None. InvalidJointState if a joint is missing,
        repeated or unknown, a field does not have one value per name, a value is NaN/Inf or
        beyond the bounds."""
        check_fields(names, position, velocity, effort, require_velocity, require_effort,
                     require_position)
        order = self._order_for(names)

        def pick(values: Sequence[float]) -> Optional[np.ndarray]:
            if len(values) != len(names):
                return None
            array = np.asarray(values, dtype=np.float64)
            return array if order is None else array[order]

        q, qd, tau = pick(position), pick(velocity), pick(effort)
        if not all(v is None or np.isfinite(v).all() for v in (q, qd, tau)):
            bad = [f"{field_name} of {self.joint_names[i]}"
                   for field_name, values in zip(FIELDS, (q, qd, tau)) if values is not None
                   for i in np.flatnonzero(~np.isfinite(values))]
            raise InvalidJointState(f"NaN/Inf in {', '.join(bad[:3])}", NON_FINITE)
        if self.bounds is not None:
            self.bounds.check(self.joint_names, q, qd, tau)
        return q, qd, tau

    @cached_property
    def _state_bounds(self) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """(lower, upper) of the (3 dof,) [q, qd, tau] state, or None without bounds."""
        b = self.bounds
        if b is None:
            return None
        return (np.concatenate([b.position_min, -b.velocity_max, -b.effort_max]),
                np.concatenate([b.position_max, b.velocity_max, b.effort_max]))

    def fill(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
             effort: Sequence[float], out: np.ndarray) -> None:
        """Write [q, qd, tau] into ``out`` (3 dof,); InvalidJointState as :meth:`arrays` (every
        field required), ``out`` is then untouched.

        The hot path of a 1 kHz stream: once a layout of names has been checked (cached), a
        message with those names is checked as one (3, n) array, finiteness and bounds in two
        vector operations; only a message that fails, or new names, takes :meth:`arrays`, which
        names the first problem. Both paths accept and reject the same messages."""
        cached_names, order = self._cached
        n = len(names)
        if (cached_names is not None and n == len(cached_names) and len(position) == n
                and len(velocity) == n and len(effort) == n and tuple(names) == cached_names):
            try:
                values = np.array((position, velocity, effort), dtype=np.float64)
            except (TypeError, ValueError):      # not numbers: the detailed path says so
                values = None
            if values is not None:
                state = (values if order is None else values[:, order]).reshape(-1)
                bounds = self._state_bounds
                if np.isfinite(state).all() and (
                        bounds is None or ((state >= bounds[0]) & (state <= bounds[1])).all()):
                    out[:] = state
                    return
        q, qd, tau = self.arrays(names, position, velocity, effort)
        dof = self.dof
        out[:dof], out[dof:2 * dof], out[2 * dof:] = q, qd, tau

    def message(self, header: Header, state: np.ndarray) -> JointState:
        """A JointState with ``header`` and the (3 dof,) ``state`` as position, velocity and
        effort of the layout's joints, in its order."""
        dof = self.dof
        msg = JointState()
        msg.header = header
        msg.name = list(self.joint_names)
        msg.position = state[:dof].tolist()
        msg.velocity = state[dof:2 * dof].tolist()
        msg.effort = state[2 * dof:].tolist()
        return msg


@dataclass(frozen=True)
class JointStateSpec:
    """What a node accepts: ``names`` in its order (others refused unless ``allow_extra``), the
    ``required`` fields (the others may be empty: e.g. an effort-only torque command), optional
    ``bounds``."""

    names: tuple[str, ...]
    required: tuple[str, ...] = ("position",)
    bounds: Optional[JointBounds] = None
    allow_extra: bool = False

    @cached_property
    def layout(self) -> JointStateLayout:
        return JointStateLayout(self.names, self.bounds, self.allow_extra)


@dataclass(frozen=True)
class JointValues:
    """A checked JointState in the spec's joint order; an absent optional field is empty."""

    stamp: float
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


def check_joint_state(msg: Any, spec: JointStateSpec) -> JointValues:
    """The values of ``msg`` in ``spec.names`` order, or :class:`InvalidJointState`."""
    q, qd, tau = spec.layout.arrays(msg.name, msg.position, msg.velocity, msg.effort,
                                    "velocity" in spec.required, "effort" in spec.required,
                                    "position" in spec.required)
    empty = np.zeros(0)
    return JointValues(msg.header.stamp.to_sec(), *(empty if v is None else v for v in (q, qd, tau)))
