"""The per-joint ROS interface of a compliant joint (paper 003 §3.1, Fig. 4; reference sheet).

For NS = /<robot>/<joint>: subscribes the nine inputs NS/<input> (std_msgs/Float64; torque_command,
link_command, reference_1, reference_2, equilibrium_position, stiffness_preset, motor_1_command,
motor_2_command, external_torque; every joint takes every input, the mode decides which are used)
and publishes NS/link_state (LinkState), NS/motor_1_state, NS/motor_2_state (MotorState),
NS/torque_el1_state, NS/torque_el2_state (Float64Stamped), all stamped by the caller's clock.
All outputs are published in every mode (unused motors/springs read 0), so aggregators never wait.

Simulator-agnostic: the simulator only needs the small :class:`Simulator` protocol
(``EmbeddedSimulation`` has it). Subscriber callbacks run in rospy's threads and only queue
values; the simulation thread applies them between steps with :meth:`RobotTopics.apply_inputs`,
so the core is only ever touched by one thread. A value that is not finite or beyond the
joint's bounds for that input (bounds.py) is rejected in the callback by the node's guard (one
error line naming the topic per topic, reason and second; counted); a stiffness preset within
the accepted range but outside the model's domain is clamped by the core and warned about (at
most once per joint and 5 s). Every output goes through the guard's publish-side check.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Callable, Iterable, Optional, Protocol

import rospy
from sim2real_checks import Guard
from std_msgs.msg import Float64

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo.bounds import JointBounds, robot_bounds
from compliant_actuator_gazebo.checks import check_input
from compliant_actuator_gazebo.msg import Float64Stamped, LinkState, MotorState

INPUT_NAMES: tuple[str, ...] = tuple(cag.input_name(i) for i in cag.Input.__members__.values())
PRESET = "stiffness_preset"


class Snapshot(Protocol):
    q: float
    qd: float
    output: "cag.JointOutput"


class Simulator(Protocol):
    """What the topics need from a simulator with compliant joints."""

    def set_input(self, joint: str, name: str, value: float) -> bool: ...

    def input(self, joint: str, name: str) -> float: ...

    def clamped_preset(self, joint: str) -> bool: ...

    def state(self, joint: str) -> Snapshot: ...


class Throttle:
    """At most one message per ``period`` seconds (wall time) for each key."""

    def __init__(self, period: float = 5.0) -> None:
        self.period = period
        self._last: dict[object, float] = {}
        self._lock = threading.Lock()

    def __call__(self, key: object) -> bool:
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(key, -math.inf) < self.period:
                return False
            self._last[key] = now
            return True


class JointTopics:
    """Subscribers and publishers of one compliant joint; inputs are queued, not applied."""

    def __init__(self, namespace: str, joint: str, guard: Guard,
                 bounds: Optional[JointBounds] = None) -> None:
        self.joint = joint
        self.namespace = f"/{namespace.strip('/')}/{joint}"
        self._guard = guard
        self._bounds = bounds
        self._lock = threading.Lock()
        self._pending: dict[str, float] = {}
        self._subscribers = [
            rospy.Subscriber(f"{self.namespace}/{name}", Float64, self._callback,
                             callback_args=name, queue_size=10) for name in INPUT_NAMES]
        self._link = rospy.Publisher(f"{self.namespace}/link_state", LinkState, queue_size=10)
        self._motors = [rospy.Publisher(f"{self.namespace}/motor_{i}_state", MotorState,
                                        queue_size=10) for i in (1, 2)]
        self._springs = [rospy.Publisher(f"{self.namespace}/torque_el{i}_state", Float64Stamped,
                                         queue_size=10) for i in (1, 2)]

    def _callback(self, msg: Float64, name: str) -> None:
        value = self._guard.check(f"{self.namespace}/{name}",
                                  lambda m: check_input(m.data, self._bounds, self.joint, name),
                                  msg)
        if value is None:        # the previous value is kept
            return
        with self._lock:
            self._pending[name] = value

    def take_inputs(self) -> dict[str, float]:
        """The inputs received since the last call (latest value per input)."""
        if not self._pending:        # cheap check without the lock; a racing value waits a step
            return {}
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending

    def publish(self, snapshot: Snapshot, stamp: rospy.Time) -> None:
        out = snapshot.output
        link = LinkState()
        link.header.stamp = stamp
        link.position, link.velocity, link.effort = snapshot.q, snapshot.qd, out.link_torque
        link.stiffness, link.deflection = out.stiffness, out.deflection
        link.reference_1, link.reference_2 = out.reference_1, out.reference_2
        self._guard.publish(self._link, link)
        for publisher, motor in zip(self._motors, (out.motor1, out.motor2)):
            msg = MotorState()
            msg.header.stamp = stamp
            msg.position, msg.velocity, msg.effort = motor.position, motor.velocity, motor.torque
            self._guard.publish(publisher, msg)
        for publisher, torque in zip(self._springs, (out.spring.t1, out.spring.t2)):
            msg = Float64Stamped()
            msg.header.stamp = stamp
            msg.data = torque
            self._guard.publish(publisher, msg)

    def close(self) -> None:
        for handle in [*self._subscribers, self._link, *self._motors, *self._springs]:
            handle.unregister()


class RobotTopics:
    """The per-joint interfaces of all compliant joints of a robot."""

    def __init__(self, joints: Iterable[tuple[str, str, Optional[JointBounds]]], guard: Guard,
                 throttle_period: float = 5.0,
                 log_warn: Callable[[str], None] = rospy.logwarn) -> None:
        """``joints``: (robot namespace, joint name, its bounds or None) triples, e.g. from a
        RobotDescription (:meth:`for_description`)."""
        self._throttle = Throttle(throttle_period)
        self._log_warn = log_warn
        self.joints = [JointTopics(ns, joint, guard, bounds) for ns, joint, bounds in joints]

    @classmethod
    def for_description(cls, description, guard: Guard, **kwargs) -> "RobotTopics":
        bounds = robot_bounds(description)
        return cls(((s.namespace, s.joint, bounds[s.joint]) for s in description.compliant),
                   guard, **kwargs)

    def apply_inputs(self, sim: Simulator) -> bool:
        """Apply the queued inputs to ``sim`` (call from the simulation thread between steps).
        Returns True when a stiffness preset was applied (the stiffness may have changed)."""
        preset = False
        for topics in self.joints:
            for name, value in topics.take_inputs().items():
                sim.set_input(topics.joint, name, value)
                if name != PRESET:
                    continue
                preset = True
                if sim.clamped_preset(topics.joint) and self._throttle((topics.joint, "clamped")):
                    self._log_warn(f"compliant joint {topics.joint}: {topics.namespace}/{PRESET} "
                                   f"{value} is outside the model's domain; clamped to "
                                   f"{sim.input(topics.joint, PRESET)}")
        return preset

    def publish(self, sim: Simulator, stamp: rospy.Time) -> None:
        for topics in self.joints:
            topics.publish(sim.state(topics.joint), stamp)

    def close(self) -> None:
        for topics in self.joints:
            topics.close()
