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
so the core is only ever touched by one thread. Non-finite values are rejected in the callback
with an error naming joint and topic (throttled per joint and topic); a clamped stiffness preset
is applied and warned about (throttled likewise).
"""
from __future__ import annotations

import math
import threading
import time
from typing import Callable, Iterable, Protocol

import rospy
from std_msgs.msg import Float64

import compliant_actuator_gazebo as cag
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

    def __init__(self, namespace: str, joint: str, throttle: Throttle,
                 log_error: Callable[[str], None] = rospy.logerr) -> None:
        self.joint = joint
        self.namespace = f"/{namespace.strip('/')}/{joint}"
        self._throttle = throttle
        self._log_error = log_error
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
        value = msg.data
        if not math.isfinite(value):
            if self._throttle((self.joint, name)):
                self._log_error(f"compliant joint {self.joint}: rejected {value} on "
                                f"{self.namespace}/{name} (inputs must be finite); "
                                f"keeping the previous value")
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
        self._link.publish(link)
        for publisher, motor in zip(self._motors, (out.motor1, out.motor2)):
            msg = MotorState()
            msg.header.stamp = stamp
            msg.position, msg.velocity, msg.effort = motor.position, motor.velocity, motor.torque
            publisher.publish(msg)
        for publisher, torque in zip(self._springs, (out.spring.t1, out.spring.t2)):
            msg = Float64Stamped()
            msg.header.stamp = stamp
            msg.data = torque
            publisher.publish(msg)

    def close(self) -> None:
        for handle in [*self._subscribers, self._link, *self._motors, *self._springs]:
            handle.unregister()


class RobotTopics:
    """The per-joint interfaces of all compliant joints of a robot."""

    def __init__(self, joints: Iterable[tuple[str, str]], throttle_period: float = 5.0,
                 log_error: Callable[[str], None] = rospy.logerr,
                 log_warn: Callable[[str], None] = rospy.logwarn) -> None:
        """``joints``: (robot namespace, joint name) pairs, e.g. from a RobotDescription."""
        self._throttle = Throttle(throttle_period)
        self._log_warn = log_warn
        self.joints = [JointTopics(ns, joint, self._throttle, log_error) for ns, joint in joints]

    @classmethod
    def for_description(cls, description, **kwargs) -> "RobotTopics":
        return cls(((s.namespace, s.joint) for s in description.compliant), **kwargs)

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
