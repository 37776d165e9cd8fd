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

from sim2real_checks import (GuardDiagnostics, JointStateSpec, Rejected, check_joint_state, flag_param,
                             integer_param, mapping_param, node_guard, number_param, optional_number_param,
                             run_node)

from panda_sim2real.errors import ConfigError, PandaError, TrajectoryRejected
from panda_sim2real.limits import JointLimits
from panda_sim2real.bag_layout import COMMAND, JOINT_STATES
from panda_sim2real.robot import JointMeasurement
from panda_sim2real.robot import SimulatedRobot
from panda_sim2real.robot_config import RobotConfig
from panda_sim2real.ros_conversions import joint_state_msg, to_time, trajectory_from_msg

REFERENCE = "joint_trajectory_controller/reference"
SET_JOINT_STATE = "set_joint_state"


def set_state_spec(limits: JointLimits) -> JointStateSpec:
    """What ``set_joint_state`` accepts: the robot's joints by name and nothing else, positions
    within the joint limits, velocities (optional: none sets the joints at rest) within the
    velocity limits."""
    return JointStateSpec(limits.joint_names, bounds=limits.bounds(measured=False))


def joint_state_target(msg: JointState, spec: JointStateSpec) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities of a set-state request in the robot's joint order, or
    InvalidJointState (sim2real_checks) naming the problem."""
    target = check_joint_state(msg, spec)
    velocity = target.velocity if target.velocity.size else np.zeros(len(spec.names))
    return target.position, velocity


def robot_params(config_param: str, default_config: str) -> tuple[JointLimits, RobotConfig]:
    """A robot node's ``~limits`` and ``~<config_param>`` (mappings loaded by the launch file,
    ``sim2real_checks.node.mapping_param``; a file path still works, with a warning) with the
    ``~publish_rate`` and ``~urdf`` overrides (panda_sim, panda_reality and panda_gazebo)."""
    limits = mapping_param("~limits", JointLimits.from_dict, JointLimits.from_yaml)
    config = mapping_param(f"~{config_param}", RobotConfig.from_dict,
                           lambda path: RobotConfig.from_yaml(path or default_config))
    try:   # a rate the physics rate is not a multiple of: named as the parameter it is
        config = config.with_overrides(publish_rate=optional_number_param("~publish_rate", PandaError))
    except ConfigError as exc:
        raise ConfigError(f"~publish_rate: {exc}") from None
    return limits, config.with_overrides(urdf=rospy.get_param("~urdf", None) or None)


class RobotNode:
    def __init__(self, config_param: str, default_config: str) -> None:
        """The robot of :func:`robot_params`, with its ``~seed`` override."""
        self.limits, config = robot_params(config_param, default_config)
        config = config.with_overrides(seed=integer_param("~seed", None, PandaError))
        self.robot = SimulatedRobot(config, self.limits)
        self.publish_clock = flag_param("~publish_clock", False, PandaError)
        self.real_time_factor = number_param("~real_time_factor", 1.0, PandaError, minimum=0.0)
        self.clock_rate = number_param("~clock_rate", config.publish_rate, PandaError, positive=True)
        self._lock = threading.Lock()
        self._closed = False      # set under the lock: no callback touches the physics after
        self.guard = node_guard()
        self._diagnostics = GuardDiagnostics(self.guard)
        self.set_state_spec = set_state_spec(self.limits)
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
                      config.publish_rate, config.source)

    def _on_command(self, msg: JointTrajectory) -> None:
        """A rejected trajectory stops the robot where it is (it holds position)."""
        trajectory = self.guard.check(COMMAND,
                                      lambda m: trajectory_from_msg(m, self.limits), msg,
                                      errors=(TrajectoryRejected,))
        with self._lock:
            if self._closed:
                return
            if trajectory is None:
                self.robot.stop()
            else:
                self.robot.command(trajectory)

    def _on_set_state(self, msg: JointState) -> None:
        """Set the joints by name: positions within the joint limits, velocities within the
        velocity limits (none: at rest); anything else is dropped and counted."""
        target = self.guard.check(SET_JOINT_STATE,
                                  lambda m: joint_state_target(m, self.set_state_spec), msg)
        if target is None:
            return
        try:
            with self._lock:
                if not self._closed:
                    self.robot.set_state(*target)
        except ValueError as exc:              # the robot's own limits (with their tolerance)
            self.guard.reject(SET_JOINT_STATE, Rejected("bounds", str(exc)))

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
            if not self.guard.publish(self._states, joint_state_msg(measurement, names)):
                continue                 # the physics produced NaN/Inf: counted and logged
            q_ref, qd_ref = reference
            self.guard.publish(self._reference, joint_state_msg(
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
        """Stop the diagnostics and close the physics once no callback is inside it (a
        set_joint_state arriving during shutdown raced the engine's disconnect and hung it)."""
        self._diagnostics.shutdown()
        with self._lock:
            self._closed = True
            self.robot.close()


def main(node_name: str, config_param: str, default_config: str) -> None:
    """Entry point of the robot nodes: one clear line and exit 1 on a bad config or URDF."""
    run_node(node_name, lambda: RobotNode(config_param, default_config), RobotNode.spin,
             RobotNode.close, errors=(PandaError,))
