"""The ``compliant_manager`` node: the Plugin Manager of paper 003 §3.2 (Fig. 7) on ROS
(nodes/compliant_manager is its start-up); the logic is ROS-free in
compliant_actuator_gazebo.manager (fan-out, aggregation) and .schedule (when to publish).

Parameters (:class:`ManagerParams`): ~config (the manager YAML, loaded by the launch file with
<rosparam command="load" file=... ns="config"/>; a file path there is still read, with a warning,
for one release) or ~robot + ~joints (the same content); ~publish_rate [Hz] of the whole-robot
arrays (default 100); ~robot_description (default: the parameter robot_description), the URDF
whose plugin blocks give each joint's physical bounds (without one, only sizes and finiteness are
checked). A bad one is a CompliantError: one [FATAL] line, exit 1.
Subscribes /<robot>/reference_1 and /<robot>/reference_2 (std_msgs/Float64MultiArray): each array
is forwarded on arrival, independently of the other (the per-joint plugin keeps the last value of
each input, so pairing the arrays would only delay commands), to the per-joint std_msgs/Float64
inputs chosen by each joint's mode. A bad array (length other than the joint count, NaN, inf, a
value beyond the range of the input it goes to) is dropped whole.
Subscribes every joint's link_state, motor_1_state, motor_2_state (a message with NaN/Inf or
beyond the joint's bounds is dropped: checks.check_state) and publishes /<robot>/robot_state,
/<robot>/motor_1_state, /<robot>/motor_2_state (sensor_msgs/JointState) and
/<robot>/robot_stiffness (RobotStiffness) once every joint has reported, stamped with the newest
per-joint stamp, only when new data arrived: each frame as it completes, at most ~publish_rate
on average (schedule.py). Dropped messages: one error line per topic, reason and second; the
counters on /diagnostics at 1 Hz.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional

import rospy
from sensor_msgs.msg import JointState
from sim2real_checks import GuardDiagnostics, mapping_param, node_guard, number_param
from std_msgs.msg import Float64, Float64MultiArray

from compliant_actuator_gazebo.bounds import JointBounds, robot_bounds
from compliant_actuator_gazebo.checks import check_state
from compliant_actuator_gazebo.description import parse_description
from compliant_actuator_gazebo.errors import ParameterError
from compliant_actuator_gazebo.manager import (ARRAYS, OUTPUTS, STREAMS, LayoutError, RobotArrays,
                                               RobotLayout, StateAggregator, fan_out)
from compliant_actuator_gazebo.msg import LinkState, MotorState, RobotStiffness
from compliant_actuator_gazebo.schedule import StreamSchedule


def load_layout() -> RobotLayout:
    """The layout from ~config (the mapping the launch file loaded; a file path: the old way),
    or from ~robot and ~joints; LayoutError (one line) otherwise."""
    if rospy.get_param("~config", None) not in (None, "") \
            and (rospy.has_param("~joints") or rospy.has_param("~robot")):
        raise LayoutError("give either ~config or ~robot and ~joints, not both")
    return mapping_param("~config", RobotLayout.from_dict, _layout_from_file)


def _layout_from_file(path: Optional[str]) -> RobotLayout:
    """The layout of the manager YAML ``path`` (RobotLayout.from_yaml: read, then the mapping's
    validation); without a path, of ~robot and ~joints."""
    if path:
        return RobotLayout.from_yaml(path)
    data = {key: rospy.get_param(f"~{key}") for key in ("robot", "joints")
            if rospy.has_param(f"~{key}")}
    private = rospy.resolve_name("~")
    return RobotLayout.from_dict(data, source=f"parameters {private}robot, {private}joints")


def load_bounds(layout: RobotLayout) -> dict[str, JointBounds]:
    """Each joint's bounds from the robot description ({} without one); LayoutError when a joint
    of the layout has no plugin block of the layout's robot there."""
    text = rospy.get_param("~robot_description", "") or rospy.get_param("robot_description", "")
    if not text:
        rospy.loginfo("compliant_manager: no robot description: arrays and joint states are "
                      "checked for size and finiteness only")
        return {}
    if not isinstance(text, str):
        raise ParameterError(f"the robot description must be URDF text, got {type(text).__name__}")
    description = parse_description(text)
    bounds = robot_bounds(description)
    foreign = [j for j in layout.names if j not in bounds
               or description.spec(j).namespace != layout.robot]
    if foreign:
        raise LayoutError(f"joints {foreign} of robot '{layout.robot}' have no compliant "
                          f"actuator of that robot in the robot description")
    return bounds


@dataclass(frozen=True)
class ManagerParams:
    """compliant_manager's parameters (module docstring), read once at start-up."""

    layout: RobotLayout
    publish_rate: float
    bounds: dict[str, JointBounds]

    @classmethod
    def from_ros(cls) -> "ManagerParams":
        """From the parameter server; LayoutError, ParameterError or DescriptionError (one
        line) otherwise."""
        layout = load_layout()
        rate = number_param("~publish_rate", 100.0, ParameterError, positive=True,
                            what="a positive number of Hz")
        return cls(layout, rate, load_bounds(layout))


class CompliantManager:
    """The manager's publishers, subscribers and timer for :class:`ManagerParams`."""

    def __init__(self, params: ManagerParams) -> None:
        layout, publish_rate = params.layout, params.publish_rate
        self.layout = layout
        self.bounds = params.bounds
        self.guard = node_guard()
        self.lock = threading.Lock()
        self.aggregator = StateAggregator(layout)
        self.schedules = {stream: StreamSchedule(layout.names, 1.0 / publish_rate)
                          for stream in STREAMS}
        topics = {t for array in ARRAYS for t in layout.input_topics(array) if t is not None}
        self.inputs = {t: rospy.Publisher(t, Float64, queue_size=10) for t in sorted(topics)}
        self.outputs = {name: rospy.Publisher(layout.robot_topic(name), RobotStiffness
                                              if name == "robot_stiffness" else JointState,
                                              queue_size=10) for name in OUTPUTS}
        self.subscribers = [rospy.Subscriber(layout.robot_topic(array), Float64MultiArray,
                                             self.on_array, callback_args=array, queue_size=10)
                            for array in ARRAYS]
        for joint in layout.names:
            for stream in STREAMS:
                self.subscribers.append(rospy.Subscriber(
                    layout.joint_topic(joint, stream),
                    LinkState if stream == "link_state" else MotorState,
                    self.on_state, callback_args=(stream, joint), queue_size=10,
                    tcp_nodelay=True))
        self.diagnostics = GuardDiagnostics(self.guard)
        self.timer = rospy.Timer(rospy.Duration(1.0 / publish_rate), self.on_timer)
        rospy.loginfo(f"compliant_manager: robot '{layout.robot}', joints "
                      + ", ".join(f"{j.name} (mode {j.mode})" for j in layout.joints))

    @classmethod
    def from_parameters(cls) -> "CompliantManager":
        return cls(ManagerParams.from_ros())

    def on_array(self, msg: Float64MultiArray, array: str) -> None:
        commands = self.guard.check(
            self.layout.robot_topic(array),
            lambda m: fan_out(self.layout, bounds=self.bounds, **{array: m.data}), msg)
        for topic, value in commands or ():
            self.guard.publish(self.inputs[topic], Float64(value))

    def on_state(self, msg, args) -> None:
        stream, joint = args
        sample = self.guard.check(
            self.layout.joint_topic(joint, stream),
            lambda m: check_state(m, stream, joint, self.bounds.get(joint)), msg)
        if sample is None:
            return
        now = rospy.get_time()
        with self.lock:
            self.aggregator.update(stream, joint, sample)
            self.schedules[stream].sample(joint, now)
            self.publish_due(stream, now)

    def on_timer(self, _event=None) -> None:
        """Frames that did not complete within a period (a joint stopped or reports slowly)."""
        now = rospy.get_time()
        with self.lock:
            for stream in STREAMS:
                self.publish_due(stream, now)

    def publish_due(self, stream: str, now: float) -> None:
        """Publish the arrays of ``stream`` if its schedule says so (called under the lock, so
        that frames go out in order)."""
        schedule = self.schedules[stream]
        if not schedule.due(now):
            return
        ready = [(name, self.aggregator.arrays(name)) for name, s in OUTPUTS.items()
                 if s == stream]
        if any(arrays is None for _, arrays in ready):
            return
        schedule.published(now)
        for name, arrays in ready:
            self.guard.publish(self.outputs[name], to_message(name, arrays))


def to_message(name: str, arrays: RobotArrays):
    """The ROS message of one whole-robot output."""
    if name == "robot_stiffness":
        msg = RobotStiffness(name=list(arrays.name), stiffness=list(arrays.stiffness),
                             deflection=list(arrays.deflection))
    else:
        msg = JointState(name=list(arrays.name), position=list(arrays.position),
                         velocity=list(arrays.velocity), effort=list(arrays.effort))
    msg.header.stamp = rospy.Time(nsecs=arrays.stamp)
    return msg
