"""Frequency response (paper 003 §4.2.1, issue 20): the estimator recovers known linear systems,
the closed-form stiffness matches the core, a short chirp of the SEA matches its analytic transfer
function, and reproduce_chirp follows the tool conventions."""
import math
import os

import numpy as np
import pytest
from scipy import signal
from sim2real_checks import check_argument_error, check_help

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo.experiments.frequency_response import (LinearPlant, empirical_transfer_function,
                                                                      log_chirp, phase_crossing, run_chirp,
                                                                      spring_stiffness)
from compliant_actuator_gazebo.experiments.step_response import FIG8_PRESETS

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "reproduce_chirp")


def estimate(system, f0, f1, dt=1e-4, cycles=20.0, tail=5.0):
    """Drive a continuous system (scipy lti, simulated exactly with a first-order hold) with a
    log chirp and return the estimate within [f0, f1]."""
    duration = cycles / f0
    t = np.arange(0.0, duration + tail, dt)
    u = log_chirp(t, f0, f1, duration, 0.1)
    _, y, _ = signal.lsim(system, u, t, interp=True)
    f, h = empirical_transfer_function(u, y, dt)
    inside = (f >= f0) & (f <= f1)
    return f[inside], h[inside]


def test_the_estimator_recovers_a_first_order_lag():
    tau = 0.05                                  # corner at 3.18 Hz
    f, h = estimate(signal.lti([1.0], [tau, 1.0]), 0.3, 30.0)
    exact = 1.0 / (1.0 + 2j * np.pi * f * tau)
    assert np.max(np.abs(20 * np.log10(np.abs(h / exact)))) < 0.01
    assert np.max(np.abs(np.degrees(np.angle(h / exact)))) < 0.1


def test_the_estimator_recovers_a_second_order_resonance():
    plant = LinearPlant(inertia=3.3e-4, damping=0.005, sigma=2.0, gravity_stiffness=0.1)   # zeta 0.095
    system = signal.lti([plant.sigma], [plant.inertia, plant.damping, plant.sigma + plant.gravity_stiffness])
    fn = plant.natural_frequency
    f, h = estimate(system, 0.1 * fn, 3.0 * fn, tail=10.0 / plant.slowest_decay)
    ratio = h / plant.response(f)
    assert np.max(np.abs(20 * np.log10(np.abs(ratio)))) < 0.05
    assert np.max(np.abs(np.degrees(np.angle(ratio)))) < 0.5
    assert phase_crossing(f, h) == pytest.approx(fn, rel=2e-3)
    peak = np.argmax(np.abs(h))                                       # the 14 dB peak is seen
    assert 20 * np.log10(np.abs(h[peak])) == pytest.approx(20 * np.log10(np.max(np.abs(plant.response(f)))), abs=0.1)
    assert f[peak] == pytest.approx(plant.peak_frequency, abs=2 * (f[1] - f[0]))


def test_the_estimator_can_tell_a_wrong_model():
    plant = LinearPlant(inertia=3.3e-4, damping=0.02, sigma=2.0, gravity_stiffness=0.1)
    other = LinearPlant(inertia=3.3e-4, damping=0.02, sigma=2.2, gravity_stiffness=0.1)   # 10 % stiffer
    system = signal.lti([plant.sigma], [plant.inertia, plant.damping, plant.sigma + plant.gravity_stiffness])
    f, h = estimate(system, 0.1 * plant.natural_frequency, 3.0 * plant.natural_frequency,
                    tail=10.0 / plant.slowest_decay)
    below = f <= other.natural_frequency
    phase = np.abs(np.degrees(np.angle(h[below] / other.response(f[below]))))
    assert np.max(phase) > 5.0


def test_the_estimator_refuses_records_of_different_lengths():
    with pytest.raises(ValueError, match="same length"):
        empirical_transfer_function(np.zeros(10), np.zeros(9), 1e-3)


@pytest.mark.parametrize("actuator", sorted(FIG8_PRESETS))
@pytest.mark.parametrize("behaviour", ["soft", "stiff"])
def test_the_closed_form_stiffness_is_the_core_one(actuator, behaviour):
    preset = FIG8_PRESETS[actuator][behaviour]
    model = cag.make_actuator(actuator, {k: float(v) for k, v in preset.description_args})
    r = model.references(0.0, preset.preset)
    assert spring_stiffness(actuator, model.params, preset.preset) == \
        pytest.approx(model.stiffness(0.0, r.theta1, r.theta2), rel=1e-9)


def test_a_short_sea_chirp_matches_its_transfer_function():
    r = run_chirp("sea", "soft", span=(0.1, 1.2), cycles=6.0)
    # the 1-DoF link: I = 0.2 * 0.04^2 + 1.17e-5 kg m^2, m g l = 0.2 * 9.81 * 0.04 N m/rad
    assert r.plant.inertia == pytest.approx(0.2 * 0.04 ** 2 + 1.1667e-5, rel=1e-3)
    assert r.plant.gravity_stiffness == pytest.approx(0.2 * 9.81 * 0.04, rel=1e-6)
    low = r.frequency <= 0.5 * r.plant.natural_frequency
    assert low.sum() > 5
    db, deg = r.errors(low)
    assert db < 1.0 and deg < 5.0
    assert r.natural_frequency_sim == pytest.approx(r.plant.natural_frequency, rel=0.01)
    assert r.passed
    assert math.isclose(r.plant.natural_frequency, math.sqrt((200 + 0.07848) / r.plant.inertia) / (2 * math.pi),
                        rel_tol=1e-4)


def test_help_lists_the_common_flags():
    check_help(SCRIPT, "reproduce_chirp")


@pytest.mark.parametrize("args", [["--no-such-option"], ["--omega-dt", "0"], ["--amplitude", "nan"]])
def test_a_bad_argument_is_one_line_and_exit_code_2(args, tmp_path):
    check_argument_error(SCRIPT, "reproduce_chirp", args, str(tmp_path))
