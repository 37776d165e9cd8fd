"""The input checks of the compliant-actuator nodes (issue 18), one per message type: a joint's
std_msgs/Float64 input (compliant_sim) and a joint's LinkState/MotorState (compliant_manager;
its whole-robot arrays: manager.check_array). Each returns what the node uses or raises
sim2real_checks' :class:`Rejected` (``non_finite``, ``bounds``). Without bounds (no robot
description) only finiteness and STATE_LIMIT are checked."""
from __future__ import annotations

import math
from typing import Any, Optional

from sim2real_checks import Rejected, check_scalar, require_finite

from compliant_actuator_gazebo.bounds import STATE_LIMIT, JointBounds, Range
from compliant_actuator_gazebo.manager import JointSample

UNBOUNDED = Range(-math.inf, math.inf)
MOTOR_STREAMS = ("motor_1_state", "motor_2_state")


def check_input(value: float, bounds: Optional[JointBounds], joint: str, name: str) -> float:
    """The value of input ``name`` of ``joint``, finite and within the joint's bounds for it."""
    accepted = bounds.inputs[name] if bounds is not None else UNBOUNDED
    return check_scalar(value, accepted.low, accepted.high, f"{joint} {name}")


def check_state(msg: Any, stream: str, joint: str, bounds: Optional[JointBounds]) -> JointSample:
    """A joint's LinkState (``link_state``) or MotorState (``motor_1_state``, ``motor_2_state``)
    as a JointSample: every float finite and within STATE_LIMIT, position, velocity and effort
    within the joint's (or that motor's) measured bounds."""
    require_finite(msg, STATE_LIMIT)
    if bounds is not None:
        if stream in MOTOR_STREAMS:
            k = MOTOR_STREAMS.index(stream)
            limits = (bounds.motor_position[k], bounds.motor_velocity[k], bounds.motor_torque[k])
        else:
            limits = (bounds.position, bounds.velocity, bounds.effort)
        position, velocity, effort = limits
        where = f"{joint} {stream}"
        check_scalar(msg.position, position.low, position.high, f"{where} position")
        for name, limit in (("velocity", velocity), ("effort", effort)):
            if limit is not None and abs(getattr(msg, name)) > limit:
                raise Rejected("bounds", f"{where} {name} {getattr(msg, name):.4g} beyond "
                                         f"±{limit:.4g}")
    return JointSample(msg.header.stamp.to_nsec(), msg.position, msg.velocity, msg.effort,
                       getattr(msg, "stiffness", 0.0), getattr(msg, "deflection", 0.0))
