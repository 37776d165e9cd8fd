"""The ROS face of :class:`~panda_fci.fci_bridge.FciBridge`: the ``fci_bridge`` node, the
robot over libfranka as ``/real`` (topics relative to the node's namespace):

- publishes ``joint_states`` (sensor_msgs/JointState: q, dq, measured link-side torque tau_J)
  at ``~publish_rate`` (up to the robot's 1 kHz), stamped with the robot's time mapped to ROS
  time; ``robot_state`` (panda_sim2real/RobotState) at ``~state_rate``; ``label`` (latched);
- subscribes ``joint_trajectory_controller/command`` (trajectory_msgs/JointTrajectory), run with
  the simulator's time parametrisation once validated; a rejected one leaves the robot holding;
- offers ``~recover`` (std_srvs/Trigger) after a reflex or a lost connection, and
  ``~move_to_start`` (std_srvs/Trigger): the slow, limit-checked move to ``~start_pose``
  (default: the limits' home pose), answered when the arm is there.

``~limits``: the joint limits, a mapping the launch file loads (config/panda_limits.yaml).
"""
from __future__ import annotations

import math
import sys
import threading
import time
from collections import deque
from typing import Optional

import numpy as np
import rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger, TriggerResponse
from trajectory_msgs.msg import JointTrajectory

from sim2real_checks import (GuardDiagnostics, Rejected, flag_param, integer_param, mapping_param, node_guard,
                             number_param, run_node)

from panda_sim2real import (COMMAND, ConfigError, JOINT_STATES, JointLimits, JointMeasurement, PandaError,
                            TrajectoryRejected, joint_state_msg, to_time, trajectory_from_msg)
from panda_fci.errors import RobotError
from panda_fci.fci_bridge import BridgeConfig, FciBridge, RobotSample
from panda_sim2real.msg import RobotState
from panda_fci.control_process import GIL_SWITCH_INTERVAL, ControlProcess
from panda_fci.realtime_host import lock_memory

CONTROL_MODES = ("process", "callback")   # ~control: the 1 kHz path in a child process, or in the node
LATENCY_WINDOW = 1000
MAX_RATE = 1000.0              # Hz: the robot sends one state per 1 ms tick
CONFIG_KEYS = ("stiffness", "damping", "max_delta_tau", "feedforward", "start_tolerance",
               "torque_thresholds", "force_thresholds", "homing")
MOVE_TIMEOUT_MARGIN = 5.0      # s of wall time beyond a move's duration before ~move_to_start gives up
SETTLE = 0.05                  # s after a move's end before ~move_to_start reads where the arm is


def rate_param(name: str, default: float) -> float:
    rate = number_param(name, default, ConfigError)
    if not 0.0 < rate <= MAX_RATE:
        raise ConfigError(f"{name} = {rate:g} Hz: give a rate in (0, {MAX_RATE:g}]")
    return rate


def start_pose_param(limits: JointLimits) -> np.ndarray:
    """``~start_pose``: the pose ``~move_to_start`` goes to (default: the limits' home pose);
    ConfigError unless it is one finite number per joint (whether it lies inside the limits'
    margins is checked by each move, which refuses it with the joint named)."""
    raw = rospy.get_param("~start_pose", None)
    if raw is None:
        return limits.home.copy()
    try:
        pose = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        pose = np.empty(0)
    if pose.shape != (limits.dof,) or not np.all(np.isfinite(pose)):
        raise ConfigError(f"~start_pose must be {limits.dof} finite joint positions [rad], got {raw!r}")
    return pose


class FciBridgeNode:
    def __init__(self) -> None:
        address = str(rospy.get_param("~robot_ip", "")).strip()
        if not address:
            raise ConfigError("~robot_ip is not set: give the robot's FCI address "
                              "(robot.launch robot:=fci robot_ip:=...)")
        self.limits = mapping_param("~limits", JointLimits.from_dict, JointLimits.from_yaml)
        config = BridgeConfig.from_dict({k: rospy.get_param(f"~{k}") for k in CONFIG_KEYS
                                         if rospy.has_param(f"~{k}")},
                                        self.limits.dof, "fci_bridge parameters")
        self.publish_period = 1.0 / rate_param("~publish_rate", MAX_RATE)
        self.state_period = 1.0 / rate_param("~state_rate", 100.0)
        realtime = str(rospy.get_param("~realtime", "enforce"))
        lock = flag_param("~lock_memory", False, ConfigError)
        control = str(rospy.get_param("~control", "process"))
        if control not in CONTROL_MODES:
            raise ConfigError(f"~control must be one of {CONTROL_MODES}, got {control!r}")
        if lock and control == "callback":   # the control process locks its own memory
            lock_memory()
        priority = integer_param("~control_priority", 0, ConfigError, minimum=0)
        self.bridge = (ControlProcess(address, self.limits, config, realtime, lock_memory=lock,
                                      priority=priority)
                       if control == "process" else
                       FciBridge(address, self.limits, config, realtime=realtime))
        self.bridge.on_error = lambda message: rospy.logerr(f"{rospy.get_name()}: robot stopped: "
                                                            f"{message}; call ~recover")
        self.names = list(self.limits.joint_names)
        self.start_pose = start_pose_param(self.limits)
        self.joint_pub = rospy.Publisher(JOINT_STATES, JointState, queue_size=100)
        self.state_pub = rospy.Publisher("robot_state", RobotState, queue_size=10)
        label = rospy.Publisher("label", String, queue_size=1, latch=True)
        label.publish(String(str(rospy.get_param("~label", "real robot"))))
        self.last_rejection = ""
        self.guard = node_guard()
        self.latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self._next_joint = self._next_state = -np.inf
        self.bridge.connect(timeout=number_param("~connect_timeout", 20.0, ConfigError, minimum=0.0))
        self.bridge.start()
        kernel = "a real-time" if self.bridge.realtime_kernel else "NOT a real-time"
        rospy.loginfo(f"{rospy.get_name()}: connected to {address}, holding; {kernel} kernel")
        rospy.Subscriber(COMMAND, JointTrajectory, self._on_command, queue_size=5)
        rospy.Service("~recover", Trigger, self._on_recover)
        rospy.Service("~move_to_start", Trigger, self._on_move_to_start)
        self._diagnostics = GuardDiagnostics(self.guard)
        self._publisher = threading.Thread(target=self._publish_loop, name="fci_publish", daemon=True)

    def spin(self) -> None:
        self._publisher.start()
        rospy.spin()

    def close(self) -> None:
        self._diagnostics.shutdown()
        self.bridge.close()

    def _on_command(self, msg: JointTrajectory) -> None:
        """A rejected trajectory leaves the robot holding (the bridge holds on its own checks)."""
        try:
            plan = trajectory_from_msg(msg, self.limits)
        except TrajectoryRejected as exc:
            self.bridge.hold()
            return self._reject(exc)
        try:
            self.bridge.command(plan)
        except (TrajectoryRejected, RobotError, ValueError) as exc:
            self._reject(exc)

    def _reject(self, exc: Exception) -> None:
        """Counted and logged per reason; the robot holds (TrajectoryRejected) or is stopped."""
        self.last_rejection = str(exc)
        if not hasattr(exc, "reason"):       # the robot refused it, or a value the bridge cannot use
            exc = Rejected("robot" if isinstance(exc, RobotError) else "malformed", str(exc))
        self.guard.reject(COMMAND, exc)

    def _on_recover(self, _request) -> TriggerResponse:
        try:
            message = self.bridge.recover()
        except PandaError as exc:
            return TriggerResponse(success=False, message=str(exc))
        rospy.loginfo(f"{rospy.get_name()}: {message}")
        return TriggerResponse(success=True, message=message)

    def _on_move_to_start(self, _request) -> TriggerResponse:
        """The slow, limit-checked move to ``~start_pose``; answers when the arm is there (or
        why it is not: the robot holds where it was)."""
        try:
            plan = self.bridge.move_to(self.start_pose)
            self.bridge.wait_for(plan, timeout=plan.duration + MOVE_TIMEOUT_MARGIN)
            time.sleep(SETTLE)                      # the publisher hands out the last states
            q = self.bridge.latest_q
            off = float(np.max(np.abs(q - self.start_pose))) if q is not None else math.inf
            if not off <= self.bridge.config.start_tolerance:
                raise RobotError(f"the arm stopped {off:.3f} rad from the start pose (another "
                                 f"trajectory or an error took over the move)")
        except (TrajectoryRejected, RobotError) as exc:
            rospy.logerr(f"{rospy.get_name()}: move_to_start: {exc}")
            return TriggerResponse(success=False, message=str(exc))
        message = f"at the start pose (within {off:.3f} rad) after a {plan.duration:.1f} s move"
        rospy.loginfo(f"{rospy.get_name()}: {message}")
        return TriggerResponse(success=True, message=message)

    def _publish_loop(self) -> None:
        last: Optional[RobotSample] = None
        while not rospy.is_shutdown():
            try:
                last = self._publish_next(last)
            except Exception as exc:         # keep publishing; say what went wrong
                self.guard.reject("publishing", exc, action="failed")

    def _publish_next(self, last: Optional[RobotSample]) -> Optional[RobotSample]:
        """Publish what the next robot state calls for; returns the latest state."""
        sample = self.bridge.next_sample(timeout=self.state_period)
        if sample is None:                   # no robot state (lost connection): still say why
            if last is not None and self.bridge.error:
                self.guard.publish(self.state_pub, self._robot_state(last, stamp=rospy.get_time()))
            return last
        if not sample.is_finite():
            self.guard.reject("robot_state_in", Rejected("non_finite", "NaN/Inf from the robot"),
                              action="dropped")
            return last
        if self.bridge.dropped:
            rospy.logwarn_throttle(5.0, f"{rospy.get_name()}: {self.bridge.dropped} robot states "
                                        f"dropped so far: publishing fell behind the robot")
        if last is not None and sample.robot_time < last.robot_time:   # the robot restarted
            self._next_joint = self._next_state = -np.inf
        if sample.robot_time >= self._next_joint:
            self._next_joint = max(self._next_joint + self.publish_period,
                                   sample.robot_time - self.publish_period / 2)
            # sample.is_finite() above is this message's publish-side check (no second scan of
            # every 1 kHz message under the GIL the libfranka tick competes for)
            self.joint_pub.publish(joint_state_msg(
                JointMeasurement(sample.stamp, sample.q, sample.dq, sample.tau_j), self.names))
            self.latencies.append(time.perf_counter() - sample.tick_wall)
        if sample.robot_time >= self._next_state:
            self._next_state = sample.robot_time + self.state_period * 0.999
            self.guard.publish(self.state_pub, self._robot_state(sample))
        return sample

    def _robot_state(self, sample: RobotSample, stamp: Optional[float] = None) -> RobotState:
        latency = np.asarray(self.latencies) if self.latencies else np.zeros(1)
        msg = RobotState(name=self.names, tau_ext=sample.tau_ext.tolist(), robot_mode=sample.mode,
                         control_command_success_rate=sample.success_rate,
                         current_errors=list(sample.errors),
                         last_error=self.bridge.error or "", last_rejection=self.last_rejection,
                         executing=self.bridge.executing(sample.robot_time),
                         realtime_kernel=self.bridge.realtime_kernel,
                         publish_latency_p50=float(np.percentile(latency, 50)),
                         publish_latency_p99=float(np.percentile(latency, 99)))
        msg.header.stamp = to_time(sample.stamp if stamp is None else stamp)
        return msg


def main() -> None:
    """Entry point of ``fci_bridge``: one clear line and exit 1 when it cannot start."""
    # with ~control: callback the tick callback runs in this interpreter: hand it the lock
    # within 0.2 ms rather than the default 5 ms while the publisher thread serialises.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    run_node("fci_bridge", FciBridgeNode, FciBridgeNode.spin, FciBridgeNode.close, errors=(PandaError,))
