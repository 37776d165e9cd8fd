"""The input checks of the vehicle experiment's messages and of the kernel manager's channels:
what each accepts, and the reason code of each rejection."""
import dataclasses
import math
import os

import genpy
import numpy as np
import pytest
from geometry_msgs.msg import PointStamped, TwistStamped, Vector3Stamped
from sensor_msgs.msg import JointState
from sim2real_checks import Rejected, hostile_cases

from kernel_manager_ros.channel_check import channel_values
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.msg import VehicleCommand
from kernel_manager_ros.state_spec import Channel, StateSpec
from kernel_manager_ros.vehicle.checks import (
    FUTURE_STAMP_LIMIT, VehicleBounds, check_command, check_sensor, check_set_state)
from kernel_manager_ros.vehicle.messages import reset_message, vehicle_state_message
from kernel_manager_ros.vehicle.model import VehicleConfig

CONFIG = os.path.join(os.path.dirname(__file__), "..", "config")
BOUNDS = VehicleBounds.of(VehicleConfig.from_yaml(os.path.join(CONFIG,
                                                               "vehicle_design.yaml")).vehicle)


def reason(check, *args) -> str:
    with pytest.raises(Rejected) as caught:
        check(*args)
    return caught.value.reason


def test_bounds_are_the_vehicle_models():
    assert (BOUNDS.max_speed, BOUNDS.max_steering, BOUNDS.world) == (3.0, 0.5, 1000.0)


def test_command_within_the_top_speed_and_the_steering_limit():
    command = check_command(VehicleCommand(speed=-3.0, steering_angle=0.5), BOUNDS)
    assert (command.speed, command.steering) == (-3.0, 0.5)
    assert reason(check_command, VehicleCommand(speed=math.nan), BOUNDS) == "non_finite"
    assert reason(check_command, VehicleCommand(speed=3.01), BOUNDS) == "bounds"
    assert reason(check_command, VehicleCommand(steering_angle=-0.6), BOUNDS) == "bounds"


def test_set_state_arguments_and_their_bounds():
    msg = vehicle_state_message(0.0, x=1.0, y=2.0, pitch=0.1)
    assert check_set_state(msg, BOUNDS) == {"x": 1.0, "y": 2.0, "pitch": 0.1}
    velocity = vehicle_state_message(0.0)
    velocity.set_velocity, velocity.vx, velocity.vy = True, 0.0, -2.0
    assert check_set_state(velocity, BOUNDS) == pytest.approx({"speed": 2.0,
                                                               "yaw": -math.pi / 2})
    reset = reset_message(3.0, 1.0, 2.0, 0.5)
    assert check_set_state(reset, BOUNDS) == {"x": 1.0, "y": 2.0, "yaw": 0.5}
    for field, value, expected in (("pitch", math.inf, "non_finite"),   # vx, vy: unused too
                                   ("vx", math.nan, "non_finite"), ("vy", 5.0, "bounds"),
                                   ("x", 1000.5, "bounds"), ("pitch", 1.6, "bounds"),
                                   ("yaw", 7.0, "bounds"), ("speed", 4.6, "bounds")):
        bad = vehicle_state_message(0.0, x=1.0, y=2.0, yaw=0.0, speed=1.0, pitch=0.1)
        setattr(bad, field, value)
        assert reason(check_set_state, bad, BOUNDS) == expected, (field, value)
    velocity.vx = 4.0                                   # |v| = 4.5 m/s, 1.5 x top speed
    assert check_set_state(velocity, BOUNDS)["speed"] == pytest.approx(math.hypot(4.0, 2.0))
    velocity.vx = 4.5
    assert reason(check_set_state, velocity, BOUNDS) == "bounds"
    far = reset_message(0.0, 1e308, 0.0, 0.0)
    assert reason(check_set_state, far, BOUNDS) == "bounds"


def test_sensor_messages():
    gps = PointStamped()
    gps.header.stamp = genpy.Time(10)
    gps.point.x, gps.point.y = 5.0, 15.0
    assert check_sensor(gps, 10.0) is gps
    gps.point.y = math.nan
    assert reason(check_sensor, gps, 10.0) == "non_finite"
    gps.point.y = 1e308
    assert reason(check_sensor, gps, 10.0) == "bounds"
    gps.point.y = 0.0
    gps.header.stamp = genpy.Time(11 + int(FUTURE_STAMP_LIMIT))
    assert reason(check_sensor, gps, 10.0) == "stamp"
    velocity = TwistStamped()
    for value in (25.0, 1e308):                          # |v| of 1e308 overflows a square
        velocity.twist.linear.x = value
        assert reason(check_sensor, velocity, 0.0) == "bounds"
    pitch = Vector3Stamped()
    pitch.vector.y = 0.2
    assert check_sensor(pitch, 0.0) is pitch
    pitch.vector.y = 2.0
    assert reason(check_sensor, pitch, 0.0) == "bounds"
    assert reason(check_sensor, JointState(), 0.0) == "type"


def test_every_hostile_variant_is_rejected_or_harmless():
    """The fuzz rostest's variants of a set-state: all rejected but the far-future stamp, which
    the vehicle does not read."""
    good = vehicle_state_message(0.0, x=1.0, y=2.0, yaw=0.5, pitch=0.1)
    accepted = []
    for case in hostile_cases(good):
        try:
            args = check_set_state(case.message, BOUNDS)
        except Rejected:
            continue
        accepted.append(case.name)
        assert all(math.isfinite(v) for v in args.values())
    assert accepted == ["header.stamp far future"]


def test_channel_values_check_the_whole_message():
    spec = StateSpec.from_yaml(os.path.join(CONFIG, "panda_topics.yaml"))
    channel: Channel = spec.sensors[0]
    names = [f"panda_joint{i}" for i in range(1, 8)]
    msg = JointState(name=names, position=[0.1] * 7, velocity=[0.0] * 7, effort=[1.0] * 7)
    assert np.allclose(channel_values(channel, msg, 1e5), [0.1] * 7 + [0.0] * 7)
    msg.effort[3] = math.nan                             # not in the state, but relayed
    assert reason(channel_values, channel, msg, 1e5) == "non_finite"
    msg.effort[3] = 2e5
    assert reason(channel_values, channel, msg, 1e5) == "bounds"
    msg.effort[3], msg.position = 0.0, [0.1] * 6
    assert reason(channel_values, channel, msg, 1e5) == "size"
    msg.position = [0.1] * 7
    msg.name = names[1:] + names[:1]                     # the arrays read by index: order counts
    assert reason(channel_values, channel, msg, 1e5) == "names"
    msg.name, msg.position = names + ["panda_finger_joint1"], [0.1] * 8
    msg.velocity, msg.effort = [0.0] * 8, [0.0] * 8      # a gripper's joints after the arm's
    assert channel_values(channel, msg, 1e5).shape == (14,)
    with pytest.raises(KernelError, match="distinct"):
        dataclasses.replace(channel, joints=("a", "a"))


@pytest.mark.parametrize("check, good", [
    (lambda m: check_command(m, BOUNDS), VehicleCommand(speed=1.0, steering_angle=0.1)),
    (lambda m: check_sensor(m, 0.0), PointStamped()),
    (lambda m: check_sensor(m, 0.0), TwistStamped()),
    (lambda m: check_sensor(m, 0.0), Vector3Stamped()),
])
def test_hostile_variants_raise_nothing_but_rejected(check, good):
    for case in hostile_cases(good):
        try:
            check(case.message)
        except Rejected:
            pass
