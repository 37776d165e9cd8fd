"""The identifier node's joint-state input, without ROS: every message goes through
sim2real_checks' joint-state check (repeated, missing or unknown joints, sizes, NaN/Inf, the
robot's bounds of a measured state) and the stream's stamp check into the
:class:`~diffnea_ros.online_identifier.OnlineIdentifier`; every rejection goes to the node's
:class:`~sim2real_checks.guard.Guard`, which counts it per topic and reason and logs one line per
reason and second, whatever the detail text.

Without ``locked`` joints, the identifier is built at the first message that passes the check:
the URDF's movable joints it does not carry (a gripper's) are locked at zero. A malformed first
message (one joint short, names without values) never decides the joints."""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Sequence

from panda_sim2real import JointLimits
from sim2real_checks import Guard, JointBounds, MISSING_JOINT, Rejected

from diffnea_ros.errors import DiffneaError
from diffnea_ros.joint_bounds import measured_bounds
from diffnea_ros.joint_stream import InvalidSample, JointStateMapper
from diffnea_ros.online_identifier import OnlineIdentifier
from diffnea_ros.urdf import RobotDescription, lock_joints

Build = Callable[[RobotDescription, JointBounds], OnlineIdentifier]


class StateInput:
    """Call it with each sensor_msgs/JointState of ``topic``; ``build`` makes (and starts) the
    identifier of a description whose joints are fixed, checking its joint states against the
    bounds it is given (:func:`~diffnea_ros.joint_bounds.measured_bounds` of ``limits``)."""

    def __init__(self, description: RobotDescription, limits: JointLimits, build: Build,
                 guard: Guard, topic: str, locked: Optional[Sequence[str]] = None) -> None:
        self.description = description
        self.limits = limits
        self.guard = guard
        self.topic = topic
        self._build = build
        self._lock = threading.Lock()
        self.identifier: Optional[OnlineIdentifier] = None
        if locked is not None:
            self.identifier = self._built(lock_joints(description, list(locked)) if locked
                                          else description)

    def __call__(self, msg: Any) -> bool:
        """Add ``msg`` to the identifier; False if it was rejected (counted and logged)."""
        return self.guard.check(self.topic, self._add, msg, errors=(Rejected, DiffneaError)) \
            is not None

    def _add(self, msg: Any) -> bool:
        identifier = self._identifier_for(msg)
        identifier.add_joint_state(msg.header.stamp.to_sec(), msg.name, msg.position,
                                   msg.velocity, msg.effort, tag=msg.header)
        return True

    def _identifier_for(self, msg: Any) -> OnlineIdentifier:
        if self.identifier is not None:
            return self.identifier
        with self._lock:
            if self.identifier is None:
                joints = self.description.joint_names
                present = [n for n in joints if n in msg.name]
                if not present:
                    raise InvalidSample(f"none of the URDF's movable joints {list(joints)} is in "
                                        f"the message (got {list(msg.name)})", MISSING_JOINT)
                bounds, _ = measured_bounds(present, self.limits)
                JointStateMapper(present, bounds).arrays(msg.name, msg.position, msg.velocity,
                                                         msg.effort)
                locked = [n for n in joints if n not in present]
                self.identifier = self._built(lock_joints(self.description, locked))
        return self.identifier

    def _built(self, description: RobotDescription) -> OnlineIdentifier:
        bounds, _ = measured_bounds(description.joint_names, self.limits)
        return self._build(description, bounds)
