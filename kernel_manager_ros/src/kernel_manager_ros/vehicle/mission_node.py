"""The ROS face of :class:`MissionProgram`: node ``mission`` (the robot program of paper 001 §4).

Topics: subscribes ``/vehicle/gps``, ``/vehicle/gps_vel``, ``/vehicle/pitch`` (or the kernel
manager's ``<topic>_kernel`` republications when ``~use_kernel_topics`` is true, §3.2);
publishes ``/vehicle/cmd`` (kernel_manager_ros/VehicleCommand) and ``/mission/perf``
(std_msgs/Float64, perf(t) of §4) every control step, ``/mission/total_reward``
(std_msgs/Float64) at the end of each mission, and a reset on ``/vehicle/set_state`` at each
mission start (a start pose drawn as in §4).
Parameters: ``~config`` (the mission YAML's mapping, loaded by the launch file; a file path is
still accepted for one release), ``~missions`` (0 = forever), ``~gap`` (s between
missions), ``~seed``, ``~use_kernel_topics``, ``~pitch_speed_gain`` (overrides the config's, for
a redesigned program). A sensor message that is not finite, leaves the vehicle's physical range
or is stamped far after the node's clock (checks.check_sensor) is dropped with one error
line per topic, reason and second; every output goes through the guard's publish-side check; the
guard's counters are on ``/diagnostics`` at 1 Hz.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import rospy
from geometry_msgs.msg import PointStamped, TwistStamped, Vector3Stamped
from sim2real_checks import (GuardDiagnostics, flag_param, integer_param, mapping_param, node_guard,
                             number_param, optional_number_param, run_node)
from std_msgs.msg import Float64

from kernel_manager_ros.config_files import config_path
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.vehicle.mission import (
    Command, MissionConfig, MissionProgram, average_total_reward)
from kernel_manager_ros.msg import VehicleCommand, VehicleState
from kernel_manager_ros.vehicle.checks import check_sensor
from kernel_manager_ros.vehicle.messages import (
    CMD_TOPIC, GPS_TOPIC, GPS_VEL_TOPIC, PERF_TOPIC, PITCH_TOPIC, SENSOR_TOPICS, SET_STATE_TOPIC,
    command_message, observation, perf_message, reset_message)

KERNEL_SUFFIX = "_kernel"
DEFAULT_CONFIG = "mission.yaml"


def load_config(path: Optional[str]) -> MissionConfig:
    """The mission YAML at ``path`` (None: config/mission.yaml): the old ``~config``."""
    return MissionConfig.from_yaml(path or config_path(DEFAULT_CONFIG))


@dataclass(frozen=True)
class MissionParams:
    """mission's parameters (module docstring), read once at start-up."""

    config: MissionConfig          # ~config with ~pitch_speed_gain applied
    missions: int
    gap: float
    seed: int
    use_kernel_topics: bool

    @classmethod
    def from_ros(cls) -> "MissionParams":
        """From the parameter server; KernelError naming the parameter otherwise."""
        config = mapping_param("~config", MissionConfig.from_dict, load_config)
        gain = optional_number_param("~pitch_speed_gain", KernelError, minimum=0.0)
        if gain is not None:
            config = config.with_program(pitch_speed_gain=gain)
        return cls(config, missions=integer_param("~missions", 0, KernelError, minimum=0),
                   gap=number_param("~gap", 2.0, KernelError, minimum=0.0),
                   seed=integer_param("~seed", 0, KernelError, minimum=0),
                   use_kernel_topics=flag_param("~use_kernel_topics", False, KernelError))


class MissionNode:
    def __init__(self, params: MissionParams) -> None:
        config = self.config = params.config
        self.missions = params.missions
        self.gap = params.gap
        suffix = KERNEL_SUFFIX if params.use_kernel_topics else ""
        self.program = MissionProgram(config, np.random.default_rng(params.seed))
        self.guard = node_guard()
        self._lock = threading.Lock()
        self._latest: dict[str, Any] = {}
        self._cmd = rospy.Publisher(CMD_TOPIC, VehicleCommand, queue_size=10)
        self._perf = rospy.Publisher(PERF_TOPIC, Float64, queue_size=10)
        self._total = rospy.Publisher("/mission/total_reward", Float64, queue_size=10, latch=True)
        self._reset = rospy.Publisher(SET_STATE_TOPIC, VehicleState, queue_size=1, latch=True)
        self._sensor_topics = {topic: topic + suffix for topic in SENSOR_TOPICS}
        for topic, cls in ((GPS_TOPIC, PointStamped), (GPS_VEL_TOPIC, TwistStamped),
                           (PITCH_TOPIC, Vector3Stamped)):
            rospy.Subscriber(topic + suffix, cls, self._on_sensor, callback_args=topic,
                             queue_size=20)
        self.diagnostics = GuardDiagnostics(self.guard)
        self.totals: list[float] = []
        rospy.loginfo("%s: %d goals, program %s, sensors %s", rospy.get_name(),
                      len(config.goals), config.program, "<topic>" + suffix)

    def _on_sensor(self, msg: Any, topic: str) -> None:
        checked = self.guard.check(self._sensor_topics[topic],
                                   lambda m: check_sensor(m, rospy.get_time()), msg)
        if checked is None:
            return
        with self._lock:
            self._latest[topic] = msg

    def _sensors_since(self, t: float) -> Optional[tuple[Any, Any, Any]]:
        """The latest three sensor messages if all were stamped at or after ``t``."""
        with self._lock:
            msgs = tuple(self._latest.get(k) for k in (GPS_TOPIC, GPS_VEL_TOPIC, PITCH_TOPIC))
        if any(m is None or m.header.stamp.to_sec() < t - 1e-6 for m in msgs):
            return None
        return msgs  # type: ignore[return-value]

    def _run_mission(self, rate: rospy.Rate) -> Optional[float]:
        x, y, yaw = self.program.start_pose()
        t_reset = rospy.get_time()
        self.guard.publish(self._reset, reset_message(t_reset, x, y, yaw))
        while (msgs := self._sensors_since(t_reset)) is None:
            if rospy.is_shutdown():
                return None
            rate.sleep()
        self.program.start(rospy.get_time())
        total = 0.0
        while not rospy.is_shutdown():
            t = rospy.get_time()
            msgs = self._sensors_since(t_reset)
            if msgs is None:   # a message stamped before the reset came last: wait for a fresh one
                rate.sleep()
                continue
            tick = self.program.tick(observation(*msgs), t)
            total += tick.perf
            self.guard.publish(self._perf, perf_message(tick.perf))
            command = tick.command or Command(0.0, 0.0)
            self.guard.publish(self._cmd, command_message(command, t))
            if tick.done:
                return total
            rate.sleep()
        return None

    def spin(self) -> None:
        rate = rospy.Rate(self.config.control_rate)
        while rospy.get_time() == 0.0 and not rospy.is_shutdown():
            rospy.sleep(0.01)
        while not rospy.is_shutdown() and (self.missions == 0 or len(self.totals) < self.missions):
            total = self._run_mission(rate)
            if total is None:
                break
            self.totals.append(total)
            self.guard.publish(self._total, Float64(data=total))
            rospy.loginfo("%s: mission %d total reward %.0f, ATR %.2f", rospy.get_name(),
                          len(self.totals), total, average_total_reward(self.totals)[-1])
            rospy.sleep(self.gap)


def main() -> None:
    run_node("mission", lambda: MissionNode(MissionParams.from_ros()), MissionNode.spin,
             errors=(KernelError,))
