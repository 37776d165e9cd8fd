"""The input checks of the vehicle experiment's messages (one per message type, shared by the
nodes that take it): the command and set-state vehicle_sim takes, within the physical bounds of
its model, and the GPS and pitch messages the mission program reads. Each returns what the node
uses or raises sim2real_checks' :class:`Rejected` (``non-finite``, ``bounds``, ``stamp``)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from geometry_msgs.msg import PointStamped, TwistStamped, Vector3Stamped
from sim2real_checks import Rejected, check_not_ahead, require_finite

from kernel_manager_ros.vehicle.mission import Command
from kernel_manager_ros.msg import VehicleCommand, VehicleState
from kernel_manager_ros.vehicle.messages import yaw_and_speed
from kernel_manager_ros.vehicle.model import WORLD_HALF_SIZE, VehicleParams

YAW_LIMIT = 2.0 * math.pi
"""|yaw| a set-state may give [rad]: an angle in [-pi, pi) or [0, 2 pi) (the model wraps it)."""
SPEED_FACTOR = 1.5
"""A set-state's speed and velocity over ground may pass the top speed by this factor (the GPS
velocity of two noisy fixes does; f_k(s, a) is made of them); the model clips the speed."""
SENSOR_POSITION_LIMIT = 2.0 * WORLD_HALF_SIZE
"""|x|, |y|, |z| of a GPS fix [m]: the vehicle starts within the world and drives at most a few
metres per second."""
SENSOR_SPEED_LIMIT = 20.0
"""|v| of a GPS velocity [m/s]: far above what a 1/10 truck reaches (3 m/s) plus GPS noise."""
ATTITUDE_LIMIT = 0.5 * math.pi
"""|pitch|, |roll| of the attitude sensor [rad]."""
FUTURE_STAMP_LIMIT = 10.0
"""A sensor stamp this far [s] ahead of the reader's clock is broken (the program would take no
other fix until that time); the vehicle's own stamps lead the reader's clock only by the /clock
delivery lag (a few steps of 10 ms, times the real-time factor)."""


@dataclass(frozen=True)
class VehicleBounds:
    """The physical bounds of a vehicle model that its commands and set-states must respect."""

    max_speed: float
    max_steering: float
    world: float = WORLD_HALF_SIZE

    @classmethod
    def of(cls, params: VehicleParams) -> "VehicleBounds":
        return cls(params.max_speed, params.max_steering)


def check_command(msg: VehicleCommand, bounds: VehicleBounds) -> Command:
    """The command, finite and within the top speed and the steering limit."""
    require_finite(msg)
    _within("speed", msg.speed, bounds.max_speed, "m/s")
    _within("steering_angle", msg.steering_angle, bounds.max_steering, "rad")
    return Command(float(msg.speed), float(msg.steering_angle))


def check_set_state(msg: VehicleState, bounds: VehicleBounds) -> dict[str, float]:
    """The keyword arguments of ``VehicleModel.set_state`` the message asks for (x, y, yaw for a
    reset; the flagged subset otherwise), every value of the message, used or not, finite and
    within the model's bounds."""
    require_finite(msg)
    for name, limit, unit in (("x", bounds.world, "m"), ("y", bounds.world, "m"),
                              ("yaw", YAW_LIMIT, "rad"),
                              ("speed", SPEED_FACTOR * bounds.max_speed, "m/s"),
                              ("pitch", ATTITUDE_LIMIT, "rad")):
        _within(name, getattr(msg, name), limit, unit)
    _within("velocity", math.hypot(msg.vx, msg.vy), SPEED_FACTOR * bounds.max_speed, "m/s")
    if msg.reset:
        return {"x": msg.x, "y": msg.y, "yaw": msg.yaw}
    args: dict[str, float] = {}
    if msg.set_position:
        args["x"], args["y"] = msg.x, msg.y
    if msg.set_yaw:
        args["yaw"] = msg.yaw
    if msg.set_speed:
        args["speed"] = msg.speed
    if msg.set_pitch:
        args["pitch"] = msg.pitch
    if msg.set_velocity:
        args.update(yaw_and_speed(msg.vx, msg.vy))
    return args


def check_sensor(msg: Any, now: float) -> Any:
    """A GPS (PointStamped), GPS velocity (TwistStamped) or attitude (Vector3Stamped) message,
    finite, within the vehicle's physical range and not stamped far after ``now`` (s)."""
    require_finite(msg)
    if isinstance(msg, PointStamped):
        for name in ("x", "y", "z"):
            _within(f"point.{name}", getattr(msg.point, name), SENSOR_POSITION_LIMIT, "m")
    elif isinstance(msg, TwistStamped):
        v = msg.twist.linear
        _within("twist.linear", math.hypot(v.x, v.y, v.z), SENSOR_SPEED_LIMIT, "m/s")
    elif isinstance(msg, Vector3Stamped):
        for name in ("x", "y"):
            _within(f"vector.{name}", getattr(msg.vector, name), ATTITUDE_LIMIT, "rad")
    else:
        raise Rejected("type", f"not a vehicle sensor message: {type(msg).__name__}")
    check_not_ahead(msg.header.stamp.to_sec(), now, FUTURE_STAMP_LIMIT, type(msg).__name__)
    return msg


def _within(name: str, value: float, limit: float, unit: str) -> None:
    if abs(value) > limit:
        raise Rejected("bounds", f"{name} {value:.4g} {unit} beyond ±{limit:.4g} {unit}")
