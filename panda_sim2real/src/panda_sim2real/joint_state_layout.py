"""A JointState and the [q, qd, tau] vector of a model's joints (paper 000 §IV: the 21-dimensional
state), both ways: :meth:`JointStateLayout.arrays` and :meth:`JointStateLayout.fill` map a
message by joint name into the model's order or say what is wrong with it (repeated or missing
joints, wrong lengths, NaN/Inf); :meth:`JointStateLayout.message` writes a vector back as a
JointState in the model's order. The one JointState validation of every package: the live
residual publisher, the offline bag correction, the online identifier and the bag reader
(:mod:`panda_sim2real.joint_state_bag`)."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

# InvalidJointState.reason: what is wrong, for readers that count dropped messages
MALFORMED = "malformed"            # names and arrays do not match (lengths, repeated names)
MISSING_JOINT = "missing_joint"    # a joint of the layout is not in the message
NON_FINITE = "non_finite"          # NaN/Inf in a value of the layout's joints
FIELDS = ("position", "velocity", "effort")


class InvalidJointState(ValueError):
    """A joint state that cannot be used; the message says why (one line), ``reason`` is one of
    MALFORMED, MISSING_JOINT, NON_FINITE."""

    def __init__(self, message: str, reason: str = MALFORMED) -> None:
        super().__init__(message)
        self.reason = reason


def check_fields(names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
                 effort: Sequence[float], require_velocity: bool = True) -> None:
    """InvalidJointState (MALFORMED) unless the names are distinct and each field has one value
    per name; without ``require_velocity`` an empty velocity (not measured) is fine too."""
    n = len(names)
    for field_name, values in zip(FIELDS, (position, velocity, effort)):
        if len(values) != n and not (field_name == "velocity" and not require_velocity
                                     and len(values) == 0):
            raise InvalidJointState(f"{field_name} has {len(values)} values for {n} joint names")
    if len(set(names)) != n:
        repeated = sorted({name for name in names if list(names).count(name) > 1})
        raise InvalidJointState(f"duplicate joint names in {list(names)} "
                                f"({', '.join(repeated)} repeated)")


class JointStateLayout:
    """The model's joint order; maps a JointState's fields onto it by name (extra joints are
    ignored)."""

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names = tuple(joint_names)
        self.dof = len(self.joint_names)
        self._cached_names: Optional[tuple[str, ...]] = None
        self._order: Optional[list[int]] = None

    def _order_for(self, names: Sequence[str]) -> Optional[list[int]]:
        """Index of each model joint in ``names`` (distinct); None when ``names`` is the model's
        order."""
        names = tuple(names)
        if names == self._cached_names:
            return self._order
        index = {n: i for i, n in enumerate(names)}
        missing = [n for n in self.joint_names if n not in index]
        if missing:
            raise InvalidJointState(f"missing joint(s) {', '.join(missing)} "
                                    f"(got {list(names)})", MISSING_JOINT)
        order = [index[n] for n in self.joint_names]
        self._cached_names = names
        self._order = None if order == list(range(self.dof)) and len(names) == self.dof else order
        return self._order

    def arrays(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
               effort: Sequence[float], require_velocity: bool = True
               ) -> tuple[np.ndarray, Optional[np.ndarray], np.ndarray]:
        """(q, qd, tau), each (dof,) float64 in the layout's order; qd is None for an empty
        velocity when not ``require_velocity``. InvalidJointState if a joint is missing or
        repeated, a field does not have one value per name, or a value is NaN/Inf."""
        check_fields(names, position, velocity, effort, require_velocity)
        order = self._order_for(names)

        def pick(values: Sequence[float]) -> np.ndarray:
            array = np.asarray(values, dtype=np.float64)
            return array if order is None else array[order]

        q, tau = pick(position), pick(effort)
        qd = pick(velocity) if len(velocity) == len(names) else None
        if not (np.isfinite(q).all() and np.isfinite(tau).all()
                and (qd is None or np.isfinite(qd).all())):
            bad = [f"{field_name} of {self.joint_names[i]}"
                   for field_name, values in zip(FIELDS, (q, qd, tau)) if values is not None
                   for i in np.flatnonzero(~np.isfinite(values))]
            raise InvalidJointState(f"NaN/Inf in {', '.join(bad[:3])}", NON_FINITE)
        return q, qd, tau

    def fill(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
             effort: Sequence[float], out: np.ndarray) -> None:
        """Write [q, qd, tau] into ``out`` (3 dof,); InvalidJointState as :meth:`arrays` (with
        velocities required), ``out`` is then untouched."""
        q, qd, tau = self.arrays(names, position, velocity, effort, require_velocity=True)
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
