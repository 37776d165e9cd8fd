"""The vehicle simulation: kinematics, ramp, sensors, configuration interface, configs."""
import math
import os

import numpy as np
import pytest

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.vehicle.model import (
    Ramp, SensorParams, VehicleConfig, VehicleModel, VehicleParams)

CONFIG = os.path.join(os.path.dirname(__file__), "..", "config")
QUIET = SensorParams(gps_noise=0.0, attitude_noise=0.0)


def model(**kwargs):
    return VehicleModel(VehicleConfig(sensors=kwargs.pop("sensors", QUIET), **kwargs))


def test_straight_line_follows_the_first_order_speed_lag():
    v = model()
    v.advance(5.0, 1.0, 0.0)
    s = v.get_state()
    tau = v.params.speed_time_constant
    expected = 5.0 - tau * (1.0 - math.exp(-5.0 / tau))
    assert s.x == pytest.approx(expected, abs=0.01)
    assert s.y == pytest.approx(0.0, abs=1e-12) and s.yaw == pytest.approx(0.0, abs=1e-12)
    assert s.speed == pytest.approx(1.0, abs=1e-6)


def test_full_lock_turn_has_the_bicycle_turning_radius():
    v = model()
    v.advance(3.0, 1.0, 1.0)     # clipped to max_steering; settle on the circle
    xy = []
    for _ in range(200):
        v.advance(0.01, 1.0, 1.0)
        xy.append((v.get_state().x, v.get_state().y))
    xy = np.array(xy)
    # circle fit: x^2 + y^2 + D x + E y + F = 0 (linear least squares)
    a = np.column_stack([xy[:, 0], xy[:, 1], np.ones(len(xy))])
    d, e, f = np.linalg.lstsq(a, -(xy ** 2).sum(1), rcond=None)[0]
    radius = math.sqrt(d * d / 4 + e * e / 4 - f)
    assert radius == pytest.approx(v.params.min_turning_radius, rel=0.01)
    assert v.get_state().steering == pytest.approx(v.params.max_steering, abs=1e-6)


def drive_over(ramp):
    """Drive straight along y = 15 from x = 5 to x = -5 at 1.5 m/s; times, pitch, speed."""
    v = model(ramp=ramp)
    v.reset(5.0, 15.0, math.pi)
    log = []
    while v.get_state().x > -5.0 and v.t < 30.0:
        v.advance(0.01, 1.5, 0.0)
        s = v.get_state()
        log.append((v.t, s.x, s.pitch, s.speed, v.readings().attitude.pitch))
    return np.array(log)


def test_the_ramp_slows_the_vehicle_and_gives_pitch():
    flat, ramp = drive_over(None), drive_over(Ramp())
    assert np.all(flat[:, 2] == 0.0)
    slope = math.atan(Ramp().height / Ramp().up_length)
    assert ramp[:, 2].max() == pytest.approx(slope, abs=0.02)            # nose up climbing
    assert ramp[:, 2].min() == pytest.approx(-slope, abs=0.02)           # nose down descending
    on_slope = np.abs(ramp[:, 2]) > 0.8 * slope
    assert ramp[on_slope, 3].mean() < 0.75 * 1.5                         # drive train can't hold it
    cruising = ramp[:, 1] < 3.0                                          # after accelerating
    assert ramp[cruising, 3].min() == pytest.approx(1.5 * VehicleParams().grade_factor(slope),
                                                    rel=0.05)
    assert ramp[-1, 0] > flat[-1, 0] + 1.5                               # costs > 1.5 s over 10 m
    np.testing.assert_allclose(ramp[:, 4], ramp[:, 2], atol=0.1)         # the sensor reports it


def test_gps_holds_its_fix_between_updates_at_the_configured_rate():
    v = model(sensors=SensorParams(gps_rate=1.0, gps_noise=0.0, attitude_noise=0.0))
    fixes = {}
    for _ in range(350):
        v.advance(0.01, 1.0, 0.0)
        fix = v.readings().gps
        fixes.setdefault(fix.stamp, set()).add((fix.x, fix.y))
    assert sorted(fixes) == [0.0, 1.0, 2.0, 3.0]                         # 1 Hz, time-stamped
    assert all(len(positions) == 1 for positions in fixes.values())      # held in between
    assert v.readings().gps.x == pytest.approx(
        3.0 - v.params.speed_time_constant * (1 - math.exp(-3.0 / 0.3)), abs=0.01)
    assert v.get_state().x > v.readings().gps.x + 0.4                    # the vehicle moved on
    assert v.readings().gps.vx == pytest.approx(1.0, abs=0.01)           # velocity over 1 s
    fast = model()
    fast.advance(0.5, 1.0, 0.0)
    assert fast.readings().gps.stamp == pytest.approx(0.5)
    fast.advance(0.04, 1.0, 0.0)
    assert fast.readings().gps.stamp == pytest.approx(0.5)               # next fix at 0.55 s


def test_sensor_noise_is_small_zero_mean_and_seeded():
    a = VehicleModel(VehicleConfig(seed=3))
    b = VehicleModel(VehicleConfig(seed=3))
    xs = []
    for _ in range(400):
        a.advance(0.05, 0.0, 0.0)
        b.advance(0.05, 0.0, 0.0)
        assert a.readings() == b.readings()
        xs.append(a.readings().gps.x)
    assert abs(np.mean(xs)) < 0.001 and 0.002 < np.std(xs) < 0.006


def test_set_state_round_trip_and_partial_updates():
    v = model()
    v.set_state(x=1.0, y=2.0, yaw=0.5, speed=0.7, pitch=0.1)
    s = v.get_state()
    assert (s.x, s.y, s.yaw, s.speed, s.pitch) == (1.0, 2.0, 0.5, 0.7, 0.1)
    v.set_state(yaw=4.0)                       # wrapped, others untouched
    s = v.get_state()
    assert s.yaw == pytest.approx(4.0 - 2 * math.pi) and (s.x, s.y, s.speed) == (1.0, 2.0, 0.7)
    v.advance(0.1, 0.7, 0.0)
    assert v.get_state().pitch < 0.1           # the set pitch relaxes to the flat terrain
    with pytest.raises(KernelError, match="finite"):
        v.set_state(x=float("nan"))
    with pytest.raises(KernelError, match="beyond the world"):
        v.set_state(x=1e308)
    s = v.get_state()
    assert abs(s.x) < 10.0 and abs(s.y) < 10.0       # a refused request changes nothing


def test_gps_velocity_after_a_set_state_comes_from_motion_not_the_jump():
    v = model()
    v.advance(2.0, 1.0, 0.0)                   # steady along x at ~1 m/s
    before = v.readings().gps
    v.set_state(x=v.get_state().x - 0.5)       # a motor kernel moves the vehicle back
    v.advance(1.0 / v.config.sensors.gps_rate, 1.0, 0.0)   # up to the first fix after it
    after = v.readings().gps
    assert after.stamp > before.stamp
    assert after.vx == pytest.approx(v.get_state().speed, abs=0.3)   # not -0.5 m / 50 ms
    assert after.x < before.x                  # the fix itself shows the move


def test_set_pitch_slows_the_vehicle_like_the_ramp():
    """A motor kernel that sets the pitch makes the design simulation behave as on the ramp."""
    free, tilted = model(), model()
    for v in (free, tilted):
        v.advance(2.0, 1.5, 0.0)
    for _ in range(20):
        free.advance(0.1, 1.5, 0.0)
        tilted.set_state(pitch=0.24)
        tilted.advance(0.1, 1.5, 0.0)
    assert tilted.get_state().x < free.get_state().x - 0.5             # 0.25 m/s lost on average


def test_nan_commands_are_refused():
    v = model()
    for cmd in ((float("nan"), 0.0), (1.0, float("inf"))):
        with pytest.raises(KernelError, match="finite"):
            v.command(*cmd)


def test_shipped_configs_load():
    design = VehicleConfig.from_yaml(os.path.join(CONFIG, "vehicle_design.yaml"))
    deploy = VehicleConfig.from_yaml(os.path.join(CONFIG, "vehicle_deploy.yaml"))
    slow = VehicleConfig.from_yaml(os.path.join(CONFIG, "vehicle_deploy_slow_gps.yaml"))
    assert design.ramp is None and design.sensors.gps_rate == 20.0
    assert deploy.ramp == Ramp() and deploy.sensors.gps_rate == 20.0
    assert slow.ramp == Ramp() and slow.sensors.gps_rate == 1.0
    assert design.vehicle == VehicleParams()
    assert VehicleConfig.from_dict(design.to_dict()) == design
    assert VehicleConfig.from_dict(deploy.to_dict()) == deploy


@pytest.mark.parametrize("data, message", [
    ({"vehicle": {"wheelbase": -1}}, "wheelbase"),
    ({"vehicle": {"wheel_base": 1}}, "unknown keys"),
    ({"sensors": {"gps_rate": 30}}, "must divide"),
    ({"ramp": {"start": [1, 2, 3]}}, "2 numbers"),
    ({"ramp": {"direction": [0, 0]}}, "non-zero"),
    ({"physics": 100}, "unknown keys"),
    ([1, 2], "mapping"),
])
def test_bad_configs_give_one_clear_error(data, message):
    with pytest.raises(KernelError, match=message):
        VehicleConfig.from_dict(data)


def test_bad_yaml_file(tmp_path):
    path = tmp_path / "v.yaml"
    path.write_text("vehicle: [unclosed\n")
    with pytest.raises(KernelError, match="not valid YAML"):
        VehicleConfig.from_yaml(path)
    path.write_text("!!python/object/apply:os.system ['true']\n")
    with pytest.raises(KernelError):
        VehicleConfig.from_yaml(path)
