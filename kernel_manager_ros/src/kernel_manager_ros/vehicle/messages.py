"""ROS messages of the vehicle experiment and their conversions (no ROS master needed).

Topics (defaults; the nodes remap them, config/vehicle_topics.yaml names them for the kernels):
  /vehicle/gps        geometry_msgs/PointStamped   GPS position (m, field frame; z = altitude)
  /vehicle/gps_vel    geometry_msgs/TwistStamped   GPS velocity (m/s, field frame), same stamp
  /vehicle/pitch      geometry_msgs/Vector3Stamped vector.y = body pitch (rad, nose up positive),
                                                   vector.x = roll (left side up), vector.z = 0
  /vehicle/cmd        kernel_manager_ros/VehicleCommand  the program's speed and steering
  /mission/perf       std_msgs/Float64             perf(t) of §4 at each control step
  /vehicle/set_state  kernel_manager_ros/VehicleState    the simulation's configuration interface
Every sensor message carries the time of its sensor update in its header (eq. 9 time stamps).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import genpy
import numpy as np
from geometry_msgs.msg import PointStamped, TwistStamped, Vector3Stamped
from std_msgs.msg import Float64

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.vehicle.mission import Command, Observation
from kernel_manager_ros.msg import VehicleCommand, VehicleState
from kernel_manager_ros.state_spec import FieldPath, StateSpec
from kernel_manager_ros.vehicle.model import AttitudeReading, GpsFix, SensorReadings

GPS_TOPIC = "/vehicle/gps"
GPS_VEL_TOPIC = "/vehicle/gps_vel"
PITCH_TOPIC = "/vehicle/pitch"
CMD_TOPIC = "/vehicle/cmd"
PERF_TOPIC = "/mission/perf"
SET_STATE_TOPIC = "/vehicle/set_state"
SENSOR_TOPICS = (GPS_TOPIC, GPS_VEL_TOPIC, PITCH_TOPIC)
FRAME = "field"


def to_time(t: float) -> genpy.Time:
    return genpy.Time.from_sec(max(0.0, float(t)))


def sensor_messages(readings: SensorReadings) -> dict[str, Any]:
    """The sensor messages of one set of readings, keyed by default topic."""
    position, velocity = gps_messages(readings.gps)
    return {GPS_TOPIC: position, GPS_VEL_TOPIC: velocity,
            PITCH_TOPIC: attitude_message(readings.attitude)}


def gps_messages(gps: GpsFix) -> tuple[PointStamped, TwistStamped]:
    """The position and velocity messages of one GPS fix (both stamped with the fix time)."""
    position = PointStamped()
    position.header.stamp, position.header.frame_id = to_time(gps.stamp), FRAME
    position.point.x, position.point.y, position.point.z = gps.x, gps.y, gps.z
    velocity = TwistStamped()
    velocity.header.stamp, velocity.header.frame_id = to_time(gps.stamp), FRAME
    velocity.twist.linear.x, velocity.twist.linear.y = gps.vx, gps.vy
    return position, velocity


def attitude_message(att: AttitudeReading) -> Vector3Stamped:
    """The pitch sensor's message: vector.y pitch, vector.x roll."""
    attitude = Vector3Stamped()
    attitude.header.stamp, attitude.header.frame_id = to_time(att.stamp), "base_link"
    attitude.vector.x, attitude.vector.y = att.roll, att.pitch
    return attitude


def observation(gps: PointStamped, gps_vel: TwistStamped, pitch: Vector3Stamped) -> Observation:
    """What the mission program reads from the three sensor messages."""
    return Observation(gps.point.x, gps.point.y, gps_vel.twist.linear.x, gps_vel.twist.linear.y,
                       gps.header.stamp.to_sec(), pitch.vector.y, pitch.header.stamp.to_sec())


def command_message(command: Command, t: float) -> VehicleCommand:
    msg = VehicleCommand()
    msg.header.stamp = to_time(t)
    msg.speed, msg.steering_angle = command.speed, command.steering
    return msg


def perf_message(perf: float) -> Float64:
    return Float64(data=float(perf))


def vehicle_state_message(t: float, x: Optional[float] = None, y: Optional[float] = None,
                          yaw: Optional[float] = None, speed: Optional[float] = None,
                          pitch: Optional[float] = None) -> VehicleState:
    """A set-state request for the given subset of the state (None = leave unchanged)."""
    if (x is None) != (y is None):
        raise KernelError("set-state: x and y go together")
    msg = VehicleState()
    msg.header.stamp = to_time(t)
    msg.set_position = x is not None
    msg.x, msg.y = (float(x), float(y)) if x is not None else (0.0, 0.0)
    msg.set_yaw, msg.yaw = yaw is not None, float(yaw or 0.0)
    msg.set_speed, msg.speed = speed is not None, float(speed or 0.0)
    msg.set_pitch, msg.pitch = pitch is not None, float(pitch or 0.0)
    return msg


def reset_message(t: float, x: float, y: float, yaw: float) -> VehicleState:
    """A request to start a new mission at rest at (x, y, yaw)."""
    msg = vehicle_state_message(t, x=x, y=y, yaw=yaw, speed=0.0)
    msg.reset = True
    return msg


MIN_COURSE_SPEED = 0.05   # m/s: below this a velocity does not define a heading


def yaw_and_speed(vx: float, vy: float, min_course_speed: float = MIN_COURSE_SPEED
                  ) -> dict[str, float]:
    """Speed |v| and, when it is at least ``min_course_speed``, yaw atan2(vy, vx): how a
    velocity over ground (the GPS velocity's terms) sets the vehicle's state."""
    speed = math.hypot(vx, vy)
    return {"speed": speed, "yaw": math.atan2(vy, vx)} if speed >= min_course_speed \
        else {"speed": speed}


# ------------------------------------------------------------- the state vector of a StateSpec
def state_vector(spec: StateSpec, messages: Mapping[str, Any]) -> np.ndarray:
    """s (eq. 2): the spec's sensor fields read from the latest message of each sensor topic."""
    return np.concatenate([c.values(_message(messages, c.topic)) for c in spec.sensors])


def sensor_stamps(spec: StateSpec, messages: Mapping[str, Any],
                  received: Mapping[str, float]) -> np.ndarray:
    """The time stamp of every sensor (eq. 9): its header stamp or its receive time."""
    stamps = []
    for c in spec.sensors:
        msg = _message(messages, c.topic)
        stamps.append(msg.header.stamp.to_sec() if c.stamp == "header" else received[c.topic])
    return np.array(stamps, dtype=float)


def with_state(spec: StateSpec, messages: Mapping[str, Any], state: np.ndarray,
               stamps: Optional[np.ndarray] = None) -> dict[str, Any]:
    """Copies of the sensor messages carrying ``state`` (a sensor kernel's output, §6.2); header
    stamps are kept unless ``stamps`` gives new ones (eq. 9: a sensor kernel keeps them)."""
    state = np.asarray(state, dtype=float)
    if state.shape != (len(spec.state_names),) or not np.all(np.isfinite(state)):
        raise KernelError(f"sensor override must be {len(spec.state_names)} finite values, got "
                          f"shape {state.shape}")
    out = dict(messages)
    for channel, sl in zip(spec.sensors, spec.sensor_slices.values()):
        msg = copy.deepcopy(_message(messages, channel.topic))
        for path, value in zip(channel.paths, state[sl]):
            path.set(msg, float(value))
        out[channel.topic] = msg
    if stamps is not None:
        for k, channel in enumerate(spec.sensors):
            if channel.stamp == "header":
                out[channel.topic].header.stamp = to_time(float(stamps[k]))
    return out


def _message(messages: Mapping[str, Any], topic: str) -> Any:
    try:
        return messages[topic]
    except KeyError:
        raise KernelError(f"the vehicle publishes no topic {topic} (it has "
                          f"{sorted(messages)})") from None


@dataclass(frozen=True)
class SensorFields:
    """Where the vehicle's configuration quantities sit in a spec's state vector: the state
    indices of GPS x, y, velocity x, y and pitch (None when the spec lacks one)."""

    x: Optional[int]
    y: Optional[int]
    vx: Optional[int]
    vy: Optional[int]
    pitch: Optional[int]

    @classmethod
    def of(cls, spec: StateSpec) -> "SensorFields":
        index = {}
        k = 0
        for channel in spec.sensors:
            for text in channel.fields:
                index[(channel.topic, FieldPath.parse(text).text)] = k
                k += 1
        return cls(index.get((GPS_TOPIC, "point.x")), index.get((GPS_TOPIC, "point.y")),
                   index.get((GPS_VEL_TOPIC, "twist.linear.x")),
                   index.get((GPS_VEL_TOPIC, "twist.linear.y")),
                   index.get((PITCH_TOPIC, "vector.y")))

    def set_state_arguments(self, state: np.ndarray,
                            min_course_speed: float = MIN_COURSE_SPEED) -> dict[str, float]:
        """The ``VehicleModel.set_state`` arguments that make the simulation report ``state``
        (a motor kernel's f_k(s, a)): position, yaw and speed from the GPS velocity (yaw only
        when the speed defines it), pitch."""
        args: dict[str, float] = {}
        if self.x is not None and self.y is not None:
            args["x"], args["y"] = float(state[self.x]), float(state[self.y])
        if self.vx is not None and self.vy is not None:
            args.update(yaw_and_speed(float(state[self.vx]), float(state[self.vy]),
                                      min_course_speed))
        if self.pitch is not None:
            args["pitch"] = float(state[self.pitch])
        return args
