"""A JointState and the [q, qd, tau] vector of a model's joints (paper 000 §IV: the 21-dimensional
state), both ways: :meth:`JointStateLayout.fill` maps a message by joint name into a preallocated
vector or says what is wrong with it (missing or repeated joints, wrong lengths, NaN/Inf);
:meth:`JointStateLayout.message` writes a vector back as a JointState in the model's order.
Used by the live residual publisher and by the offline bag correction."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Header


class InvalidJointState(ValueError):
    """A joint state that cannot be corrected; the message says why (one line)."""


class JointStateLayout:
    """The model's joint order; fills a preallocated (3 dof,) vector from a JointState's fields."""

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names = tuple(joint_names)
        self.dof = len(self.joint_names)
        self._cached_names: Optional[tuple[str, ...]] = None
        self._order: Optional[list[int]] = None

    def _order_for(self, names: Sequence[str]) -> Optional[list[int]]:
        """Index of each model joint in ``names``; None when ``names`` is the model's order."""
        names = tuple(names)
        if names == self._cached_names:
            return self._order
        if len(set(names)) != len(names):
            raise InvalidJointState(f"duplicate joint names in {list(names)}")
        index = {n: i for i, n in enumerate(names)}
        missing = [n for n in self.joint_names if n not in index]
        if missing:
            raise InvalidJointState(f"missing joint(s) {', '.join(missing)} "
                                    f"(got {list(names)})")
        order = [index[n] for n in self.joint_names]
        self._cached_names = names
        self._order = None if order == list(range(self.dof)) and len(names) == self.dof else order
        return self._order

    def fill(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
             effort: Sequence[float], out: np.ndarray) -> None:
        """Write [q, qd, tau] into ``out``; InvalidJointState if a joint is missing, a field
        does not have one value per name, or a value is NaN/Inf (``out`` may be partly written
        then, the caller's state is not)."""
        n = len(names)
        for field_name, values in (("position", position), ("velocity", velocity),
                                   ("effort", effort)):
            if len(values) != n:
                raise InvalidJointState(f"{field_name} has {len(values)} values for {n} joint "
                                        f"names")
        order = self._order_for(names)
        dof = self.dof
        for k, values in enumerate((position, velocity, effort)):
            block = out[k * dof:(k + 1) * dof]
            if order is None:
                block[:] = values
            else:
                block[:] = [values[i] for i in order]
        if not np.isfinite(out).all():
            bad = np.flatnonzero(~np.isfinite(out))
            what = ", ".join(f"{('position', 'velocity', 'effort')[i // dof]} of "
                             f"{self.joint_names[i % dof]}" for i in bad[:3])
            raise InvalidJointState(f"NaN/Inf in {what}")

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
