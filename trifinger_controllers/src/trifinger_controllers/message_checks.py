"""The checks of every message the TriFinger nodes receive, through sim2real_checks (one check per
message type, shared with the other packages), and their conversion to this package's types (no
ROS master needed). Each function returns the checked values or raises
:class:`sim2real_checks.errors.Rejected` with a reason code (``malformed``, ``missing_joint``,
``unknown_joint``, ``non_finite``, ``bounds``, ``quaternion``, ``frame``, ``confidence``, ``stamp``)
and a one-line message naming the problem.

Bounds (the TriFinger Pro's, types.py):
  torque command    |effort| <= 100 x 0.397 N m = 39.7 N m. Between the limit and that bound a
                    command is a saturating control law (trifinger_simulation's default position
                    PD asks for up to 9 N m/rad x 2.7 rad = 24 N m within the joint ranges): the
                    simulator clips it to +-0.397 N m as the robot does. Beyond it the number is
                    a unit error or garbage (1e6, 1e308): refused, the previous command is held.
  position command  each target within its joint range widened by 0.2 rad (a controller aiming at
                    a limit overshoots it a little; 1e308 overflowed the PD torque)
  joint state       (measured) positions within the ranges widened by 0.2 rad (the simulator
                    overshoots them by < 0.01 rad), |velocity| <= 2 x 10 rad/s and |effort| <=
                    2 x 0.397 N m (the simulator saturates at 10 rad/s and 0.397 N m; a real
                    robot's measurement may exceed both a little)
  pose              position within 0.52 m of the arena centre (trifinger_simulation's object
                    box), unit quaternion (within 0.1; normalised), frame ``world`` (or empty)
  object pose       a pose as above and the tracker's confidence finite (``non_finite``) and in
                    [0, 1] (``confidence``; trifinger_object_tracking's ObjectPose: "ranges from
                    0 to 1")
  stamps            a joint state or object pose stamped more than 60 s ahead of the node's
                    clock is refused (a far-future stamp would make a controller take every later
                    state for a restart of the simulation)
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import genpy
import numpy as np
from sim2real_checks import JointBounds, JointStateSpec, Rejected, check_joint_state, check_pose
from sim2real_checks import check_not_ahead as check_stamp_not_ahead

from trifinger_controllers.ros_conversions import JOINT_NAMES, WORLD_FRAME, stamp_seconds, step_of
from trifinger_controllers.types import (JOINT_LOWER, JOINT_UPPER, N_JOINTS, TORQUE_LIMIT,
                                         VELOCITY_LIMIT, WORKSPACE_RADIUS, CubePose, RobotState)

#: A torque command beyond this [N m] is refused; below it, it is clipped to TORQUE_LIMIT.
MAX_COMMAND_TORQUE = 100.0 * TORQUE_LIMIT
#: How far [rad] a position target may lie outside a joint's range; beyond it, it is refused.
POSITION_TARGET_MARGIN = 0.2
#: Widening of the joint limits for measured joint states: positions [rad], rates (factor).
MEASURED_POSITION_MARGIN = 0.2
MEASURED_RATE_FACTOR = 2.0
#: A stamp further ahead of the node's clock [s] is refused.
MAX_STAMP_AHEAD = 60.0
#: Within this of 1, a quaternion is kept bit for bit (lock-step runs equal in-process ones).
UNIT_NORM = 1e-9

_INF = np.full(N_JOINTS, np.inf)
TORQUE_COMMAND = JointStateSpec(
    JOINT_NAMES, ("effort",),
    JointBounds(-_INF, _INF, _INF, np.full(N_JOINTS, MAX_COMMAND_TORQUE)))
POSITION_COMMAND = JointStateSpec(
    JOINT_NAMES, ("position",),
    JointBounds(JOINT_LOWER - POSITION_TARGET_MARGIN, JOINT_UPPER + POSITION_TARGET_MARGIN,
                _INF, _INF))
MEASURED_STATE = JointStateSpec(
    JOINT_NAMES, ("position", "velocity", "effort"),
    JointBounds.from_limits(JOINT_LOWER, JOINT_UPPER, np.full(N_JOINTS, VELOCITY_LIMIT),
                            np.full(N_JOINTS, TORQUE_LIMIT), MEASURED_POSITION_MARGIN,
                            MEASURED_RATE_FACTOR))


def torque_from_msg(msg: Any) -> np.ndarray:
    """The (9,) torque [N m] of a torque command in JOINT_NAMES order (positions and velocities,
    if given, must be finite and are ignored)."""
    return check_joint_state(msg, TORQUE_COMMAND).effort


def position_from_msg(msg: Any) -> np.ndarray:
    """The (9,) joint targets [rad] of a position command in JOINT_NAMES order."""
    return check_joint_state(msg, POSITION_COMMAND).position


def robot_state_from_msg(msg: Any) -> RobotState:
    """A measured joint state (joints in any order) as a RobotState in JOINT_NAMES order; the
    step is the stamp's 1 kHz step index (the simulator stamps step t with t / 1000 s)."""
    values = check_joint_state(msg, MEASURED_STATE)
    stamp = msg.header.stamp
    return RobotState(step=step_of(stamp), time=stamp_seconds(stamp), position=values.position,
                      velocity=values.velocity, torque=values.effort)


def cube_pose_from_msg(msg: Any) -> CubePose:
    """A PoseStamped (or the header and pose of an ObjectPose) in the world frame as a CubePose
    (stamp = header stamp)."""
    frame = msg.header.frame_id
    if frame not in ("", WORLD_FRAME, "/" + WORLD_FRAME):
        raise Rejected("frame", f"pose in frame {frame!r}; expected {WORLD_FRAME!r}")
    checked = check_pose(msg, WORKSPACE_RADIUS)
    o = msg.pose.orientation
    raw = np.array([o.x, o.y, o.z, o.w], dtype=float)
    unit = abs(float(np.linalg.norm(raw)) - 1.0) <= UNIT_NORM
    return CubePose(position=checked.position, orientation=raw if unit else checked.quaternion_xyzw,
                    stamp=stamp_seconds(msg.header.stamp))


def object_pose_from_msg(msg: Any) -> CubePose:
    """An ObjectPose (the tracker's report) as a CubePose with its confidence: the pose checks
    of :func:`cube_pose_from_msg`, and the confidence finite and in [0, 1]."""
    pose = cube_pose_from_msg(msg)
    confidence = float(msg.confidence)
    if not math.isfinite(confidence):
        raise Rejected("non_finite", f"NaN/Inf in confidence ({confidence})")
    if not 0.0 <= confidence <= 1.0:
        raise Rejected("confidence", f"confidence {confidence:.4g} outside [0, 1]")
    return replace(pose, confidence=confidence)


def check_not_ahead(stamp: genpy.Time, now: genpy.Time, what: str) -> None:
    """Rejected (``stamp``) if ``stamp`` is more than MAX_STAMP_AHEAD after ``now``."""
    check_stamp_not_ahead(stamp.to_sec(), now.to_sec(), MAX_STAMP_AHEAD, what)
