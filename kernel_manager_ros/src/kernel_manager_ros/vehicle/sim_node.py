"""The ROS face of :class:`VehicleModel`: node ``vehicle_sim`` (paper 001 §4's simulated vehicle).

Topics (relative to the node's namespace, ``/vehicle`` in vehicle.launch):
  publishes ``gps`` (geometry_msgs/PointStamped) and ``gps_vel`` (geometry_msgs/TwistStamped) at
  every GPS fix, ``pitch`` (geometry_msgs/Vector3Stamped) at every attitude update, each stamped
  with its sensor time, and ``/clock`` when it is the clock source;
  subscribes ``cmd`` (kernel_manager_ros/VehicleCommand) and ``set_state``
  (kernel_manager_ros/VehicleState: the configuration interface the kernel manager uses for motor
  kernels, and the mission's reset at each mission start).
Parameters: ``~config`` (the vehicle YAML's mapping, loaded by the launch file; a file path is
still accepted for one release), ``~gps_rate`` (Hz, overrides the config), ``~seed``,
``~publish_clock`` (be the clock source: publish /clock at the physics rate, paced by
``~real_time_factor``, 0 = as fast as possible); otherwise the simulation follows ROS time.
A command or set-state that is not finite or leaves the model's physical bounds
(vehicle/checks.py: top speed, steering limit, the 1000 m world, ...) is dropped with one error
line per topic, reason and second; every output goes through the guard's publish-side check; the
guard's counters are on ``/diagnostics`` at 1 Hz.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Optional

import rospy
from rosgraph_msgs.msg import Clock
from geometry_msgs.msg import PointStamped, TwistStamped, Vector3Stamped

from sim2real_checks import (GuardDiagnostics, Rejected, flag_param, integer_param, mapping_param,
                             node_guard, number_param, optional_number_param, run_node)

from kernel_manager_ros.config_files import config_path
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.msg import VehicleCommand, VehicleState
from kernel_manager_ros.vehicle.checks import VehicleBounds, check_command, check_set_state
from kernel_manager_ros.vehicle.messages import attitude_message, gps_messages, to_time
from kernel_manager_ros.vehicle.model import GpsFix, VehicleConfig, VehicleModel

DEFAULT_CONFIG = "vehicle_design.yaml"


def load_config(path: Optional[str]) -> VehicleConfig:
    """The vehicle YAML at ``path`` (None: config/vehicle_design.yaml): the old ``~config``."""
    return VehicleConfig.from_yaml(path or config_path(DEFAULT_CONFIG))


@dataclass(frozen=True)
class VehicleSimParams:
    """vehicle_sim's parameters (module docstring), read once at start-up."""

    config: VehicleConfig          # ~config with ~gps_rate and ~seed applied
    publish_clock: bool
    real_time_factor: float

    @classmethod
    def from_ros(cls) -> "VehicleSimParams":
        """From the parameter server; KernelError naming the parameter otherwise."""
        config = mapping_param("~config", VehicleConfig.from_dict, load_config)
        gps_rate = optional_number_param("~gps_rate", KernelError, minimum=0.0)   # 0: as configured
        try:
            config = config.with_overrides(gps_rate=gps_rate or None)
        except KernelError as exc:    # a rate that does not divide the physics rate
            raise KernelError(f"~gps_rate: {exc}") from None
        config = config.with_overrides(seed=integer_param("~seed", None, KernelError, minimum=0))
        return cls(config, flag_param("~publish_clock", False, KernelError),
                   number_param("~real_time_factor", 1.0, KernelError, minimum=0.0))


class VehicleSimNode:
    def __init__(self, params: VehicleSimParams) -> None:
        self.config = params.config
        self.publish_clock = params.publish_clock
        self.real_time_factor = params.real_time_factor
        self.bounds = VehicleBounds.of(self.config.vehicle)
        self.guard = node_guard()
        self._lock = threading.Lock()
        self.vehicle: Optional[VehicleModel] = None
        self._gps = rospy.Publisher("gps", PointStamped, queue_size=20)
        self._gps_vel = rospy.Publisher("gps_vel", TwistStamped, queue_size=20)
        self._pitch = rospy.Publisher("pitch", Vector3Stamped, queue_size=20)
        self._clock = rospy.Publisher("/clock", Clock, queue_size=10) if self.publish_clock else None
        self._cmd_topic = rospy.Subscriber("cmd", VehicleCommand, self._on_command,
                                           queue_size=10).resolved_name
        self._set_state_topic = rospy.Subscriber("set_state", VehicleState, self._on_set_state,
                                                 queue_size=10).resolved_name
        self.diagnostics = GuardDiagnostics(self.guard)
        rospy.loginfo("%s: %s, GPS %.1f Hz, ramp %s", rospy.get_name(), self.config.label,
                      self.config.sensors.gps_rate, "yes" if self.config.ramp else "no")

    # ------------------------------------------------------------------------- callbacks
    def _on_command(self, msg: VehicleCommand) -> None:
        command = self.guard.check(self._cmd_topic, lambda m: check_command(m, self.bounds), msg)
        if command is None:
            return
        with self._lock:
            if self.vehicle is not None:
                self.vehicle.command(command.speed, command.steering)

    def _on_set_state(self, msg: VehicleState) -> None:
        args = self.guard.check(self._set_state_topic, lambda m: check_set_state(m, self.bounds),
                                msg)
        if args is None:
            return
        with self._lock:
            if self.vehicle is None:
                return
            try:
                if msg.reset:
                    self.vehicle.reset(args["x"], args["y"], args["yaw"])
                    self._publish_all()
                else:
                    self.vehicle.set_state(**args)
            except KernelError as exc:     # the model's own refusal: state unchanged
                self.guard.reject(self._set_state_topic, Rejected("bounds", str(exc)))

    # ---------------------------------------------------------------------------- running
    def _publish_all(self) -> None:
        readings = self.vehicle.readings()
        self._publish_gps(readings.gps)
        self.guard.publish(self._pitch, attitude_message(readings.attitude))

    def _publish_gps(self, fix: GpsFix) -> None:
        position, velocity = gps_messages(fix)
        self.guard.publish(self._gps, position)
        self.guard.publish(self._gps_vel, velocity)

    def _step(self) -> None:
        """One physics step; publishes the sensors that updated."""
        with self._lock:
            before = self.vehicle.readings()
            self.vehicle.step()
            after = self.vehicle.readings()
        if after.gps is not before.gps:
            self._publish_gps(after.gps)
        if after.attitude is not before.attitude:
            self.guard.publish(self._pitch, attitude_message(after.attitude))

    def spin(self) -> None:
        if self.publish_clock:
            self.vehicle = VehicleModel(self.config, start_time=0.0)
            self.guard.publish(self._clock, Clock(clock=to_time(0.0)))
            wall_start = time.monotonic()
            while not rospy.is_shutdown():
                self._step()
                self.guard.publish(self._clock, Clock(clock=to_time(self.vehicle.t)))
                if self.real_time_factor > 0:
                    lag = wall_start + self.vehicle.t / self.real_time_factor - time.monotonic()
                    if lag > 0:
                        time.sleep(lag)
            return
        while rospy.get_time() == 0.0 and not rospy.is_shutdown():
            time.sleep(0.001)
        with self._lock:
            self.vehicle = VehicleModel(self.config, start_time=rospy.get_time())
        while not rospy.is_shutdown():
            if rospy.get_time() >= self.vehicle.t + self.vehicle.dt:
                self._step()
            else:
                time.sleep(0.0005)


def main() -> None:
    run_node("vehicle_sim", lambda: VehicleSimNode(VehicleSimParams.from_ros()),
             VehicleSimNode.spin, errors=(KernelError,))
