"""The ROS face of a :class:`SimulatedRobot`: ``panda_sim`` and ``panda_reality`` are this node
with different configurations.

Topics (relative to the node's namespace, e.g. ``/sim`` or ``/real``):
  publishes ``joint_states`` (sensor_msgs/JointState) at the config's publish rate, and right
  after each of them ``joint_trajectory_controller/reference`` (sensor_msgs/JointState: the
  position and velocity the controller follows at that time, the per-step action of the kernel
  manager), ``label`` (std_msgs/String, latched), and ``/clock`` when it is the clock source;
  subscribes ``joint_trajectory_controller/command`` (trajectory_msgs/JointTrajectory) and
  ``set_joint_state`` (sensor_msgs/JointState by joint name: the configuration interface of
  paper 001 §3.2; positions and velocities are set at once, time and the running trajectory go
  on; an empty velocity sets the joints at rest; a bad message is dropped with a throttled error).

Time: the robot's time is ROS time. As clock source (``~publish_clock``, the simulator) it
publishes ``/clock`` and paces itself by ``~real_time_factor`` (0 = as fast as possible). As a
follower under ``/use_sim_time`` (the stand-in next to the simulator) it advances its physics to
the latest ``/clock``. Without simulated time it runs in step with the wall clock, as a robot does.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import rospy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from panda_sim2real.errors import Sim2RealError
from panda_sim2real.node_runner import run_node
from panda_sim2real.limits import JointLimits
from panda_sim2real.bag_layout import COMMAND, JOINT_STATES
from panda_sim2real.robot import JointMeasurement
from panda_sim2real.robot import SimulatedRobot
from panda_sim2real.robot_config import RobotConfig
from panda_sim2real.ros_conversions import joint_state_msg, to_time, trajectory_from_msg

REFERENCE = "joint_trajectory_controller/reference"
SET_JOINT_STATE = "set_joint_state"


def joint_state_target(msg: JointState, limits: JointLimits) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities of a set-state request in the robot's joint order; ValueError
    naming the problem for unknown, missing or repeated joints, wrong lengths or NaN/Inf (the
    limits are checked by :meth:`SimulatedRobot.set_state`)."""
    names, expected = list(msg.name), list(limits.joint_names)
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate joint names in {names}")
    if sorted(names) != sorted(expected):
        raise ValueError(f"joint names {names} are not the robot's joints {expected}")
    if len(msg.position) != len(names):
        raise ValueError(f"{len(msg.position)} positions for {len(names)} joint names")
    if len(msg.velocity) not in (0, len(names)):
        raise ValueError(f"{len(msg.velocity)} velocities for {len(names)} joint names "
                         f"(give one per joint, or none to set the joints at rest)")
    order = [names.index(n) for n in expected]
    q = np.asarray(msg.position, dtype=float)[order]
    qd = np.asarray(msg.velocity, dtype=float)[order] if len(msg.velocity) else np.zeros(len(q))
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise ValueError("NaN/Inf in the positions or velocities")
    return q, qd


class RobotNode:
    def __init__(self, config_param: str, default_config: str) -> None:
        path = rospy.get_param(f"~{config_param}", default_config)
        self.limits = JointLimits.from_yaml(rospy.get_param("~limits", None))
        config = RobotConfig.from_yaml(path).with_overrides(
            publish_rate=rospy.get_param("~publish_rate", None),
            seed=rospy.get_param("~seed", None),
            urdf=rospy.get_param("~urdf", None) or None)
        self.robot = SimulatedRobot(config, self.limits)
        self.publish_clock = bool(rospy.get_param("~publish_clock", False))
        self.real_time_factor = float(rospy.get_param("~real_time_factor", 1.0))
        self.clock_rate = float(rospy.get_param("~clock_rate", config.publish_rate))
        if self.real_time_factor < 0 or self.clock_rate <= 0:
            raise Sim2RealError("~real_time_factor must be >= 0 and ~clock_rate > 0")
        self._lock = threading.Lock()
        self._states = rospy.Publisher(JOINT_STATES, JointState, queue_size=50)
        self._reference = rospy.Publisher(REFERENCE, JointState, queue_size=50)
        self._clock = rospy.Publisher("/clock", Clock, queue_size=10) if self.publish_clock else None
        label = rospy.Publisher("label", String, queue_size=1, latch=True)
        label.publish(String(data=config.label))
        self._commands = rospy.Subscriber(COMMAND, JointTrajectory, self._on_command, queue_size=10)
        self._set_state = rospy.Subscriber(SET_JOINT_STATE, JointState, self._on_set_state,
                                           queue_size=10)
        rospy.loginfo("%s: %s on %s, physics %.0f Hz, joint_states %.0f Hz, config %s",
                      rospy.get_name(), config.label, config.engine, config.physics_rate,
                      config.publish_rate, path)

    def _on_command(self, msg: JointTrajectory) -> None:
        try:
            trajectory = trajectory_from_msg(msg, self.limits)
        except Sim2RealError as exc:
            rospy.logerr_throttle(1.0, f"{rospy.get_name()}: trajectory rejected, holding position: {exc}")
            with self._lock:
                self.robot.stop()
            return
        with self._lock:
            self.robot.command(trajectory)

    def _on_set_state(self, msg: JointState) -> None:
        try:
            q, qd = joint_state_target(msg, self.limits)
            with self._lock:
                self.robot.set_state(q, qd)
        except (ValueError, TypeError) as exc:
            rospy.logerr_throttle(1.0, f"{rospy.get_name()}: set_joint_state dropped: {exc}")

    def _advance(self, until: float) -> None:
        """Step the physics to ``until``, publishing the joint state whenever it is due."""
        robot = self.robot
        names = self.limits.joint_names
        while robot.t < until - 0.5 * robot.dt and not rospy.is_shutdown():
            with self._lock:
                robot.step()
                measurement = robot.measure() if robot.publish_due else None
                reference = robot.reference() if measurement is not None else None
            if measurement is None:
                continue
            if not measurement.is_finite():
                rospy.logerr_throttle(1.0, f"{rospy.get_name()}: the physics produced NaN/Inf; "
                                           "joint state not published")
                continue
            self._states.publish(joint_state_msg(measurement, names))
            q_ref, qd_ref = reference
            self._reference.publish(joint_state_msg(
                JointMeasurement(measurement.stamp, q_ref, qd_ref, np.zeros(0)), names))

    def spin(self) -> None:
        if self.publish_clock:
            self._spin_clock_source()
        elif rospy.get_param("/use_sim_time", False):
            self._spin_follower()
        else:
            self._spin_wall()

    def _spin_clock_source(self) -> None:
        robot = self.robot
        robot.reset(self.limits.home, t=0.0)
        period = 1.0 / self.clock_rate
        wall_start = time.monotonic()
        while not rospy.is_shutdown():
            self._advance(robot.t + period)
            self._clock.publish(Clock(clock=to_time(robot.t)))
            if self.real_time_factor > 0:
                lag = wall_start + robot.t / self.real_time_factor - time.monotonic()
                if lag > 0:
                    time.sleep(lag)

    def _spin_follower(self) -> None:
        while rospy.get_time() == 0.0 and not rospy.is_shutdown():
            time.sleep(0.001)
        self.robot.reset(self.limits.home, t=rospy.get_time())
        while not rospy.is_shutdown():
            target = rospy.get_time()
            if target > self.robot.t:
                self._advance(target)
            else:
                time.sleep(0.0005)

    def _spin_wall(self) -> None:
        self.robot.reset(self.limits.home, t=rospy.get_time())
        while not rospy.is_shutdown():
            self._advance(rospy.get_time())
            time.sleep(0.0005)

    def close(self) -> None:
        self.robot.close()


def main(node_name: str, config_param: str, default_config: str) -> None:
    """Entry point of the robot nodes: one clear line and exit 1 on a bad config or URDF."""
    run_node(node_name, lambda: RobotNode(config_param, default_config), RobotNode.spin,
             RobotNode.close)
