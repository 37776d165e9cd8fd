"""The ROS face of :class:`VehicleModel`: node ``vehicle_sim`` (paper 001 §4's simulated vehicle).

Topics (relative to the node's namespace, ``/vehicle`` in vehicle.launch):
  publishes ``gps`` (geometry_msgs/PointStamped) and ``gps_vel`` (geometry_msgs/TwistStamped) at
  every GPS fix, ``pitch`` (geometry_msgs/Vector3Stamped) at every attitude update, each stamped
  with its sensor time, and ``/clock`` when it is the clock source;
  subscribes ``cmd`` (kernel_manager_ros/VehicleCommand) and ``set_state``
  (kernel_manager_ros/VehicleState: the configuration interface the kernel manager uses for motor
  kernels, and the mission's reset at each mission start).
Parameters: ``~config`` (vehicle YAML), ``~gps_rate`` (Hz, overrides the config), ``~seed``,
``~publish_clock`` (be the clock source: publish /clock at the physics rate, paced by
``~real_time_factor``, 0 = as fast as possible); otherwise the simulation follows ROS time.
A command or set-state with NaN/Inf is dropped with a throttled error; the node keeps running.
"""
from __future__ import annotations

import threading
import time
from typing import Optional

import rospy
from rosgraph_msgs.msg import Clock
from geometry_msgs.msg import PointStamped, TwistStamped, Vector3Stamped

from kernel_manager_ros.config_files import config_path
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.node_runner import run_node
from kernel_manager_ros.msg import VehicleCommand, VehicleState
from kernel_manager_ros.vehicle_messages import (
    attitude_message, command_from_message, gps_messages, set_state_arguments, to_time)
from kernel_manager_ros.vehicle_model import VehicleConfig, VehicleModel

DEFAULT_CONFIG = "vehicle_design.yaml"


class VehicleSimNode:
    def __init__(self) -> None:
        path = rospy.get_param("~config", "") or config_path(DEFAULT_CONFIG)
        gps_rate = rospy.get_param("~gps_rate", 0.0)
        seed = rospy.get_param("~seed", None)
        self.config = VehicleConfig.from_yaml(path).with_overrides(
            gps_rate=float(gps_rate) if gps_rate else None,
            seed=int(seed) if seed is not None else None)
        self.publish_clock = bool(rospy.get_param("~publish_clock", False))
        self.real_time_factor = float(rospy.get_param("~real_time_factor", 1.0))
        if self.real_time_factor < 0:
            raise KernelError("~real_time_factor must be >= 0")
        self._lock = threading.Lock()
        self.vehicle: Optional[VehicleModel] = None
        self._gps = rospy.Publisher("gps", PointStamped, queue_size=20)
        self._gps_vel = rospy.Publisher("gps_vel", TwistStamped, queue_size=20)
        self._pitch = rospy.Publisher("pitch", Vector3Stamped, queue_size=20)
        self._clock = rospy.Publisher("/clock", Clock, queue_size=10) if self.publish_clock else None
        rospy.Subscriber("cmd", VehicleCommand, self._on_command, queue_size=10)
        rospy.Subscriber("set_state", VehicleState, self._on_set_state, queue_size=10)
        rospy.loginfo("%s: %s, GPS %.1f Hz, ramp %s, config %s", rospy.get_name(),
                      self.config.label, self.config.sensors.gps_rate,
                      "yes" if self.config.ramp else "no", path)

    # ------------------------------------------------------------------------- callbacks
    def _on_command(self, msg: VehicleCommand) -> None:
        try:
            command = command_from_message(msg)
        except KernelError as exc:
            rospy.logerr_throttle(1.0, f"{rospy.get_name()}: command dropped: {exc}")
            return
        with self._lock:
            if self.vehicle is not None:
                self.vehicle.command(command.speed, command.steering)

    def _on_set_state(self, msg: VehicleState) -> None:
        try:
            args = set_state_arguments(msg)
        except KernelError as exc:
            rospy.logerr_throttle(1.0, f"{rospy.get_name()}: set_state dropped: {exc}")
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
            except KernelError as exc:     # e.g. a position beyond the world: state unchanged
                rospy.logerr_throttle(1.0, f"{rospy.get_name()}: set_state dropped: {exc}")

    # ---------------------------------------------------------------------------- running
    def _publish_all(self) -> None:
        readings = self.vehicle.readings()
        position, velocity = gps_messages(readings.gps)
        self._gps.publish(position)
        self._gps_vel.publish(velocity)
        self._pitch.publish(attitude_message(readings.attitude))

    def _step(self) -> None:
        """One physics step; publishes the sensors that updated."""
        with self._lock:
            before = self.vehicle.readings()
            self.vehicle.step()
            after = self.vehicle.readings()
        if after.gps is not before.gps:
            position, velocity = gps_messages(after.gps)
            self._gps.publish(position)
            self._gps_vel.publish(velocity)
        if after.attitude is not before.attitude:
            self._pitch.publish(attitude_message(after.attitude))

    def spin(self) -> None:
        if self.publish_clock:
            self.vehicle = VehicleModel(self.config, start_time=0.0)
            self._clock.publish(Clock(clock=to_time(0.0)))
            wall_start = time.monotonic()
            while not rospy.is_shutdown():
                self._step()
                self._clock.publish(Clock(clock=to_time(self.vehicle.t)))
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
    run_node("vehicle_sim", VehicleSimNode, VehicleSimNode.spin)
