"""Conversions from this package's types (types.py) to ROS messages, topic names and the lock-step
handshake (no ROS master needed).

Topics (relative names; the launch files run the nodes in the namespace ``/trifinger``):
  ``joint_states``      sensor_msgs/JointState: position, velocity and measured torque (effort)
                        of the 9 joints, stamped with the simulated time of step t (t / 1000 s)
  ``object_pose``       trifinger_controllers/ObjectPose (msg/ObjectPose.msg; header, pose,
                        confidence, like the robot's trifinger_object_tracking): the object
                        tracker's report of each camera image (10 Hz, delayed as
                        trifinger_simulation models it), stamped with the capture time; confidence
                        in [0, 1], 0 = not detected (the previous pose repeated)
  ``goal_pose``         geometry_msgs/PoseStamped (latched)
  ``torque_command``    sensor_msgs/JointState: effort = joint torques [N m], joints by name
  ``position_command``  sensor_msgs/JointState: position = joint targets [rad], joints by name

Lock-step handshake (``trifinger_sim`` with ``~lock_step``; see sim_node.py): a joint state the
simulator waits on carries ``header.frame_id = "lock_step:<ns>"``, ``<ns>`` being the capture
stamp [ns] of the newest object pose published so far (-1: none). The answer is a command whose
``header.stamp`` equals that joint state's stamp; before answering, a controller waits until it
holds that object pose (topics are separate connections; this keeps the run deterministic).

The checks of received messages (and their conversion to this package's types) are in
message_checks.py.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

import genpy
import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from sim2real_checks import Rejected
from trifinger_controllers.msg import ObjectPose

from trifinger_controllers.types import PHYSICS_RATE, CubePose, RobotState
from trifinger_controllers.errors import TrifingerError

#: The TriFinger Pro joints as named in robot_properties_fingers' URDF (trifingerpro.urdf), the
#: model trifinger_simulation loads: finger 0 (joints 0-2), finger 120 (3-5), finger 240 (6-8);
#: upper (base-to-upper), middle, lower joint of each finger.
JOINT_NAMES: tuple[str, ...] = tuple(
    f"finger_{joint}_joint_{finger}"
    for finger in (0, 120, 240)
    for joint in ("base_to_upper", "upper_to_middle", "middle_to_lower"))

WORLD_FRAME = "world"           # trifinger_simulation's world: arena centre on the table, z up

JOINT_STATES = "joint_states"
OBJECT_POSE = "object_pose"
GOAL_POSE = "goal_pose"
TORQUE_COMMAND = "torque_command"
POSITION_COMMAND = "position_command"
EPISODE_RESULT = "episode_result"

LOCK_STEP_PREFIX = "lock_step:"
NO_POSE = -1


class ThrottledLog:
    """At most one log line per ``period`` wall seconds per key (e.g. per topic), with the
    number of occurrences suppressed since the last line; wall time, so that it also reports
    while a lock-stepped simulation (and with it ROS time) stands still."""

    def __init__(self, log: Callable[[str], None], period: float = 1.0) -> None:
        self.log, self.period = log, period
        self._last: dict = {}
        self._suppressed: dict = {}
        self._lock = threading.Lock()

    def __call__(self, key: str, text: str, log: Optional[Callable[[str], None]] = None) -> None:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.period:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return
            self._last[key] = now
            suppressed = self._suppressed.pop(key, 0)
        if suppressed:
            text += f" ({suppressed} more since the last report)"
        (log or self.log)(text)


# --- time ---------------------------------------------------------------------------------

def to_time(seconds: float) -> genpy.Time:
    """``seconds`` (>= 0) rounded to the nearest ns (genpy's from_sec truncates: 1.001 s would
    become 1.000999999 s)."""
    ns = int(round(max(0.0, float(seconds)) * 1e9))
    return genpy.Time(ns // 1_000_000_000, ns % 1_000_000_000)


def step_of(stamp: genpy.Time) -> int:
    """The 1 kHz step index of a simulated-time stamp."""
    return int(round(stamp.to_nsec() * PHYSICS_RATE / 1e9))


def stamp_seconds(stamp: genpy.Time) -> float:
    """A stamp in seconds; a whole number k of milliseconds gives exactly ``k / 1000``, the
    simulator's float for step k (``to_sec`` can differ in the last bit), so that a controller
    sees the same numbers over ROS as in the in-process evaluation."""
    ns = stamp.to_nsec()
    return ns // 1_000_000 / 1000.0 if ns % 1_000_000 == 0 else ns / 1e9


def lock_step_tag(pose_stamp: Optional[float]) -> str:
    """``header.frame_id`` of a joint state the lock-stepped simulator waits on."""
    ns = NO_POSE if pose_stamp is None else to_time(pose_stamp).to_nsec()
    return f"{LOCK_STEP_PREFIX}{ns}"


def parse_lock_step_tag(frame_id: str) -> Optional[int]:
    """The object-pose stamp [ns] a lock-step joint state announces (``NO_POSE`` = none yet);
    None if the joint state does not come from a lock-stepped simulator."""
    if not frame_id.startswith(LOCK_STEP_PREFIX):
        return None
    try:
        return int(frame_id[len(LOCK_STEP_PREFIX):])
    except ValueError:
        raise Rejected("frame", f"joint state frame_id {frame_id!r}: lock-step tag without an "
                                f"integer stamp") from None


# --- joints -------------------------------------------------------------------------------

def joint_state_msg(state: RobotState, frame_id: str = "") -> JointState:
    msg = JointState()
    msg.header.stamp = to_time(state.time)
    msg.header.frame_id = frame_id
    msg.name = list(JOINT_NAMES)
    msg.position = np.asarray(state.position, dtype=float).tolist()
    msg.velocity = np.asarray(state.velocity, dtype=float).tolist()
    msg.effort = np.asarray(state.torque, dtype=float).tolist()
    return msg


def _command_msg(field: str, values: np.ndarray, stamp: genpy.Time) -> JointState:
    """A JointState over JOINT_NAMES with only ``field`` (position or effort) filled."""
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(JOINT_NAMES)
    setattr(msg, field, np.asarray(values, dtype=float).tolist())
    return msg


def torque_command_msg(torque: np.ndarray, stamp: genpy.Time) -> JointState:
    return _command_msg("effort", torque, stamp)


def position_command_msg(position: np.ndarray, stamp: genpy.Time) -> JointState:
    return _command_msg("position", position, stamp)


# --- poses --------------------------------------------------------------------------------

def _fill_pose(msg: Any, pose: CubePose, frame_id: str) -> Any:
    """Set ``header`` (stamp, frame) and ``pose`` of a PoseStamped or an ObjectPose."""
    msg.header.stamp = to_time(pose.stamp)
    msg.header.frame_id = frame_id
    p, q = np.asarray(pose.position, dtype=float), np.asarray(pose.orientation, dtype=float)
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = p.tolist()
    (msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z,
     msg.pose.orientation.w) = q.tolist()
    return msg


def pose_msg(pose: CubePose, frame_id: str = WORLD_FRAME) -> PoseStamped:
    """A PoseStamped (``goal_pose``)."""
    return _fill_pose(PoseStamped(), pose, frame_id)


def object_pose_msg(pose: CubePose, frame_id: str = WORLD_FRAME) -> ObjectPose:
    """The tracker's report ``pose`` with its confidence (``object_pose``)."""
    msg = _fill_pose(ObjectPose(), pose, frame_id)
    msg.confidence = float(pose.confidence)
    return msg


def goal_from_param(value: Any) -> CubePose:
    """A goal given as a ROS parameter: [x, y, z] (identity orientation), [x, y, z, qx, qy, qz,
    qw] or {position: [...], orientation: [...]}; ValueError (one line) if it is not a pose or
    lies outside the workspace (task.check_goal)."""
    from trifinger_controllers import task   # imports trifinger_simulation: only when needed
    identity = np.array([0.0, 0.0, 0.0, 1.0])
    try:
        if isinstance(value, dict):
            unknown = sorted(set(value) - {"position", "orientation"})
            if unknown:
                raise TrifingerError(f"unknown keys {unknown}")
            position = np.asarray(value["position"], dtype=float).ravel()
            orientation = np.asarray(value.get("orientation", identity), dtype=float).ravel()
        else:
            numbers = np.asarray(value, dtype=float).ravel()
            if numbers.size not in (3, 7):
                raise TrifingerError(f"{numbers.size} numbers, expected 3 or 7")
            position, orientation = numbers[:3], (numbers[3:] if numbers.size == 7 else identity)
    except (TypeError, ValueError, KeyError) as exc:
        raise TrifingerError(f"~goal {value!r} is not a pose ([x, y, z], [x, y, z, qx, qy, qz, qw] "
                         f"or {{position, orientation}}): {exc}") from None
    try:
        return task.check_goal(CubePose(position, orientation))
    except ValueError as exc:
        raise TrifingerError(f"~goal: {exc}") from None
