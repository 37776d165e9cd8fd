"""The stand-in's unmodelled effects (issue 38): each one's statistics match its configuration,
and with the block off the stand-in is the one before: bit for bit on the CPU that recorded the
trace, to the last bits elsewhere (numpy's vector kernels differ across CPUs by an ulp)."""
import copy
import dataclasses
import os

import numpy as np
import pytest
import yaml

from panda_sim2real.drive_effects import (DriveEffects, presliding_step, presliding_torque,
                                          stribeck_excess, thermal_factor, torque_ripple)
from panda_sim2real.errors import ConfigError
from panda_sim2real.limits import CONFIG_DIR, JointLimits
from panda_sim2real.robot import SimulatedRobot
from panda_sim2real.robot_config import REALITY_CONFIG_FILE, RobotConfig
from panda_sim2real.sensor_effects import SensorEffects, gauss_markov_step, play
from panda_sim2real.trajectory import validate_trajectory
from panda_sim2real.unmodelled_config import GaussMarkovParams

LIMITS = JointLimits.from_yaml()
REAL = RobotConfig.from_yaml(REALITY_CONFIG_FILE)
EXTRA = REAL.unmodelled
TRACE = os.path.join(os.path.dirname(__file__), "data", "standin_c746d6c.npz")
with open(REALITY_CONFIG_FILE, encoding="utf-8") as f:
    RAW = yaml.safe_load(f)


def only(**blocks):
    """The default stand-in's effects with only ``blocks`` of the unmodelled block kept."""
    keep = {k: getattr(EXTRA, k) for k in blocks}
    return dataclasses.replace(REAL, unmodelled=dataclasses.replace(
        type(EXTRA)(scale=EXTRA.scale), **keep))


def run_reference_moves(config):
    """The moves whose readings the stand-in of c746d6c recorded in TRACE."""
    robot = SimulatedRobot(config, LIMITS)
    offset = np.array([0.4, 0.3, -0.3, 0.3, 0.4, -0.3, 0.5])
    robot.command(validate_trajectory(LIMITS.joint_names, [0.0, 1.0, 2.0],
                                      [LIMITS.home, LIMITS.home + offset, LIMITS.home - 0.5 * offset],
                                      [[], [], []], LIMITS))
    rows = [np.concatenate([[m.stamp], m.position, m.velocity, m.effort]) for m in robot.advance(2.5)]
    robot.close()
    return np.array(rows)


def test_without_the_block_the_stand_in_is_the_one_before_issue_38_to_the_last_bits():
    rows = run_reference_moves(dataclasses.replace(REAL, unmodelled=None))
    # 1e-13 is a few ulp of the readings (up to ~50 N m); any effect left on moves them by >1e-4
    np.testing.assert_allclose(rows, np.load(TRACE)["trace"], rtol=1e-13, atol=1e-13)


def test_with_the_block_the_readings_differ_and_stay_finite():
    rows = run_reference_moves(REAL)
    reference = np.load(TRACE)["trace"]
    assert np.all(np.isfinite(rows))
    gap = np.sqrt(np.mean((rows[:, 15:] - reference[:, 15:]) ** 2, axis=0))
    assert np.all(gap > 0.02) and np.all(gap < 5.0)          # N m per joint


def test_stamps_jitter_within_their_bound_and_stay_in_order():
    robot = SimulatedRobot(only(stamp_jitter=True), LIMITS)
    stamps = np.array([m.stamp for m in robot.advance(20.0)])
    nominal = np.arange(1, len(stamps) + 1) / REAL.publish_rate
    error = stamps - nominal
    assert np.max(np.abs(error)) <= EXTRA.stamp_jitter
    assert np.std(error) == pytest.approx(EXTRA.stamp_jitter / np.sqrt(3.0), rel=0.1)
    assert np.all(np.diff(stamps) > 0.0)


def test_positions_lie_on_the_encoder_grid():
    robot = SimulatedRobot(only(encoder_resolution=True), LIMITS)
    q = np.array([m.position for m in robot.advance(0.2)])
    steps = q / EXTRA.encoder_resolution
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-6)


def test_ripple_has_its_period_and_amplitude():
    p = EXTRA.harmonic_drive
    q = np.linspace(0.0, 0.2, 20001)[:, None] * np.ones(7)
    tau = torque_ripple(p, q)
    np.testing.assert_allclose(tau.max(axis=0), p.ripple, rtol=1e-4)
    period = 2.0 * np.pi / (2.0 * p.gear_ratio)
    np.testing.assert_allclose(torque_ripple(p, q + period), tau, atol=1e-9)


def test_at_rest_the_sensor_reads_gravity_plus_ripple_plus_cables():
    config = dataclasses.replace(only(harmonic_drive=True, cables=True), torque_sensor=None,
                                 encoders=None)
    q = LIMITS.home + np.array([0.3, 0.2, -0.2, 0.3, 0.5, -0.4, 0.2])
    robot = SimulatedRobot(config, LIMITS)
    robot.reset(q)
    robot.run_until(1.5)
    drive = DriveEffects(config.unmodelled, config.friction, 7)
    q_now = robot.physics.state()[0]
    expected = robot.gravity_torque(q_now) + drive.static_torque(q_now)
    np.testing.assert_allclose(robot.measure().effort, expected, atol=0.02)
    robot.close()


def test_stribeck_excess_vanishes_at_rest_and_at_speed_and_peaks_at_low_speed():
    p = EXTRA.stribeck
    qd = np.linspace(0.0, 0.5, 5001)[:, None] * np.ones(7)
    tau = stribeck_excess(p, qd)
    assert np.all(tau[0] == 0.0)
    assert np.all(np.abs(tau[-1]) < 1e-6 * p.stiction)
    peak = qd[np.argmax(tau, axis=0), 0]
    assert np.all(peak < p.stribeck_velocity) and np.all(tau.max(axis=0) > 0.7 * p.stiction)


def test_presliding_makes_a_bounded_hysteresis_loop_in_displacement():
    p = EXTRA.stribeck
    dt, amplitude = 1e-3, 4.0 * p.presliding_displacement[0]
    t = np.arange(0.0, 4.0, dt)
    qd = amplitude * 2 * np.pi * np.cos(2 * np.pi * t)           # q = amplitude sin(2 pi t)
    z, torques = np.zeros(7), []
    for v in qd:
        torques.append(presliding_torque(p, z)[0])
        z = presliding_step(p, z, np.full(7, v), dt)
    torques = np.array(torques)
    assert np.max(np.abs(torques)) <= p.presliding_torque[0] + 1e-12
    q = amplitude * np.sin(2 * np.pi * t)
    second = t >= 1.0          # after the first cycle, the loop: two torques at the same q = 0
    crossing_up = torques[second & (np.abs(q) < 1e-5) & (qd > 0)]
    crossing_down = torques[second & (np.abs(q) < 1e-5) & (qd < 0)]
    assert crossing_up.mean() - crossing_down.mean() > 0.5 * p.presliding_torque[0]
    # implicit: bounded at any step
    fast = presliding_step(p, np.zeros(7), np.full(7, 100.0), 1.0)
    assert np.all(np.abs(fast) <= p.presliding_displacement)


def test_thermal_drift_rate_matches_its_configuration():
    p = EXTRA.thermal_drift
    assert np.all(thermal_factor(p, 0.0) == 1.0)
    rate = (thermal_factor(p, 1.0) - 1.0) / 1.0           # per second at the start
    np.testing.assert_allclose(rate, p.friction_per_kelvin * p.temperature_rise / p.time_constant,
                               rtol=1e-3)
    np.testing.assert_allclose(thermal_factor(p, 1e6), 1.0 + p.friction_per_kelvin * p.temperature_rise)
    drive = DriveEffects(only(thermal_drift=True).unmodelled, REAL.friction, 7)
    qd, q, tau = np.full(7, 0.3), LIMITS.home, np.zeros(7)
    ratio = drive.friction_torque(p.time_constant, q, qd, tau) / drive.friction_torque(0.0, q, qd, tau)
    np.testing.assert_allclose(ratio, thermal_factor(p, p.time_constant))


def test_load_dependent_friction_grows_with_the_transmitted_torque():
    drive = DriveEffects(only(load_friction=True).unmodelled, None, 7)
    qd, q = np.full(7, 0.5), LIMITS.home
    light = drive.friction_torque(0.0, q, qd, np.full(7, 1.0))
    heavy = drive.friction_torque(0.0, q, qd, np.full(7, -20.0))
    np.testing.assert_allclose(heavy - light, 19.0 * EXTRA.load_friction.coefficient * np.tanh(50.0))


def test_sensor_hysteresis_loop_has_the_configured_width():
    p = EXTRA.sensor_errors
    width = p.hysteresis
    tau = 3.0 * np.sin(np.linspace(0.0, 4 * np.pi, 4001))[:, None] * np.ones(7)
    played, out = tau[0].copy(), []
    for row in tau:
        played = play(width, played, row)
        out.append(played)
    out = np.array(out)
    rising = np.gradient(tau[:, 0]) > 0
    near_zero = (np.abs(tau[:, 0]) < 0.01) & (np.arange(len(tau)) > 1000)   # after the first peak
    gap = out[near_zero & ~rising, 0].mean() - out[near_zero & rising, 0].mean()
    assert gap == pytest.approx(width[0], rel=0.05)


def test_gain_error_and_nonlinearity_scale_the_reading():
    effects = only(sensor_errors=True).unmodelled
    sensors = SensorEffects(effects, seed=0, dof=7)
    tau = np.array([10.0, -30.0, 5.0, -20.0, 2.0, -1.0, 0.5])
    sensors.reset(tau, 0.0)
    p = effects.sensor_errors
    expected = (1 + p.gain_error) * tau + p.nonlinearity * tau * np.abs(tau) / p.full_scale
    np.testing.assert_allclose(sensors.torque(tau, 0.0), expected)


@pytest.mark.parametrize("params", [GaussMarkovParams(np.full(7, 0.2), 0.05),
                                    GaussMarkovParams(np.full(7, 0.1), 2.0)])
def test_gauss_markov_processes_have_their_std_and_correlation_time(params):
    rng = np.random.default_rng(3)
    dt, n = params.time_constant / 20.0, 200_000
    x, xs = params.std * rng.standard_normal(7), np.empty((n, 7))
    for k in range(n):
        x = gauss_markov_step(params, x, dt, rng)
        xs[k] = x
    assert np.std(xs) == pytest.approx(params.std[0], rel=0.05)
    lag = 20
    corr = np.mean([np.corrcoef(xs[:-lag, j], xs[lag:, j])[0, 1] for j in range(7)])
    assert corr == pytest.approx(np.exp(-1.0), abs=0.05)


def test_the_stand_in_with_every_effect_tracks_a_fast_move_stably():
    robot = SimulatedRobot(REAL, LIMITS)
    goal = LIMITS.home + np.array([0.8, 0.5, -0.6, 0.6, 0.9, -0.7, 1.2])
    robot.command(validate_trajectory(LIMITS.joint_names, [0.0, 1.2, 2.4], [LIMITS.home, goal, LIMITS.home],
                                      [[], [], []], LIMITS))
    states = robot.advance(4.0)
    q = np.array([m.position for m in states])
    assert all(m.is_finite() for m in states)
    np.testing.assert_allclose(q[-1], LIMITS.home, atol=0.01)
    robot.close()


def test_scale_multiplies_every_amplitude():
    raw = copy.deepcopy(RAW)
    raw["unmodelled"]["scale"] = [2.0] * 7
    scaled = RobotConfig.from_dict(raw).unmodelled
    np.testing.assert_allclose(scaled.stribeck.stiction, 2.0 * EXTRA.stribeck.stiction / EXTRA.scale)
    np.testing.assert_allclose(scaled.correlated_noise.std, 2.0 * EXTRA.correlated_noise.std / EXTRA.scale)
    np.testing.assert_allclose(scaled.harmonic_drive.gear_ratio, EXTRA.harmonic_drive.gear_ratio)


@pytest.mark.parametrize("path, value, message", [
    (("correlated_noise", "time_constant"), 0.0, "must be above 0"),
    (("harmonic_drive", "friction_modulation"), [1.0] * 7, "must be below 1"),
    (("stribeck", "stribeck_velocity"), [0.0] * 7, "must be positive"),
    (("scale",), [1.0] * 6, "list of 7 numbers"),
    (("stamp_jitter",), 0.006, "half the publish period"),
    (("cables", "stiffness"), [float("nan")] * 7, "finite"),
])
def test_bad_values_are_refused_with_the_entry_named(path, value, message):
    raw = copy.deepcopy(RAW)
    tree = raw["unmodelled"]
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value
    with pytest.raises(ConfigError, match=message):
        RobotConfig.from_dict(raw, source="bad.yaml")


def test_a_faster_publish_rate_must_keep_stamps_in_order():
    fast = dataclasses.replace(REAL, physics_rate=4000.0)
    with pytest.raises(ConfigError, match="stamp_jitter"):
        fast.with_overrides(publish_rate=2000.0)    # jitter 0.4 ms >= half of 0.5 ms


@pytest.mark.parametrize("name", ["default.yaml", "individual_b.yaml"])
def test_every_reality_individual_loads_with_its_effects(name):
    config = RobotConfig.from_yaml(os.path.join(CONFIG_DIR, "reality", name))
    assert config.unmodelled is not None and config.unmodelled.acts_on_links
