"""Conversions between this library's types and ROS messages (no ROS master needed)."""
from __future__ import annotations

from typing import Sequence

import genpy
import numpy as np
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from panda_sim2real.limits import JointLimits
from panda_sim2real.robot import JointMeasurement
from panda_sim2real.trajectory import PlannedTrajectory, validate_trajectory


def to_time(seconds: float) -> genpy.Time:
    return genpy.Time.from_sec(max(0.0, float(seconds)))


def joint_state_msg(measurement: JointMeasurement, joint_names: Sequence[str]) -> JointState:
    msg = JointState()
    msg.header.stamp = to_time(measurement.stamp)
    msg.name = list(joint_names)
    msg.position = measurement.position.tolist()
    msg.velocity = measurement.velocity.tolist()
    msg.effort = measurement.effort.tolist()
    return msg


def joint_trajectory_msg(trajectory: PlannedTrajectory, joint_names: Sequence[str]) -> JointTrajectory:
    """A JointTrajectory whose header stamp is the trajectory's start (0 = start on receipt)."""
    msg = JointTrajectory()
    msg.header.stamp = to_time(trajectory.start or 0.0)
    msg.joint_names = list(joint_names)
    for t, q, qd in zip(trajectory.times, trajectory.positions, trajectory.velocities):
        point = JointTrajectoryPoint()
        point.positions = q.tolist()
        point.velocities = qd.tolist()
        point.time_from_start = genpy.Duration.from_sec(float(t))
        msg.points.append(point)
    return msg


def trajectory_from_msg(msg: JointTrajectory, limits: JointLimits) -> PlannedTrajectory:
    """Validate a JointTrajectory message (raises TrajectoryRejected with the reason)."""
    stamp = msg.header.stamp.to_sec()
    return validate_trajectory(
        msg.joint_names,
        [p.time_from_start.to_sec() for p in msg.points],
        [list(p.positions) for p in msg.points],
        [list(p.velocities) for p in msg.points],
        limits,
        start=stamp if stamp > 0.0 else None)


def measurement_from_msg(msg: JointState, joint_names: Sequence[str]) -> JointMeasurement:
    """Reorder a JointState into ``joint_names`` order (KeyError/ValueError if incomplete)."""
    index = {n: i for i, n in enumerate(msg.name)}
    order = [index[n] for n in joint_names]
    pick = lambda values: np.asarray(values, dtype=float)[order]  # noqa: E731
    return JointMeasurement(msg.header.stamp.to_sec(), pick(msg.position), pick(msg.velocity),
                            pick(msg.effort))
