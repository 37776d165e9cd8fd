"""Step-response figures against the analytic response of a damped oscillator."""
import math

import numpy as np
import pytest

from compliant_actuator_gazebo.experiments.step_metrics import step_metrics


def second_order(t, zeta, wn, final):
    wd = wn * math.sqrt(1 - zeta ** 2)
    phi = math.acos(zeta)
    return final * (1 - np.exp(-zeta * wn * t) * np.sin(wd * t + phi) / math.sqrt(1 - zeta ** 2))


def test_overshoot_and_sag_of_an_underdamped_response():
    t = np.linspace(0.0, 20.0, 200001)
    zeta, wn = 0.2, 5.0
    q = second_order(t, zeta, wn, 0.7)       # steps to 0.7 although 0.8 was asked (sag 0.1)
    m = step_metrics(t, q, 0.8)
    assert m.overshoot == pytest.approx(math.exp(-math.pi * zeta / math.sqrt(1 - zeta ** 2)), rel=1e-3)
    assert m.final == pytest.approx(0.7, abs=1e-6)
    assert m.steady_state_error == pytest.approx(0.1, abs=1e-6)
    assert m.settling_time == pytest.approx(4.0 / (zeta * wn), rel=0.25)   # classic 2 % estimate
    assert m.rise_time is not None and 0 < m.rise_time < m.settling_time


def test_step_time_and_no_motion():
    t = np.linspace(0.0, 2.0, 201)
    q = np.where(t >= 1.0, 0.8 * (1 - np.exp(-(t - 1.0) * 30)), 0.0)
    m = step_metrics(t, q, 0.8, step_time=1.0)
    assert m.overshoot == pytest.approx(0.0, abs=1e-9)
    assert m.steady_state_error == pytest.approx(0.0, abs=1e-6)
    still = step_metrics(t, np.zeros_like(t), 0.8)
    assert still.rise_time is None and still.steady_state_error == pytest.approx(0.8)


def test_bad_traces():
    with pytest.raises(ValueError):
        step_metrics(np.arange(5.0), np.zeros(5), 0.8)
    with pytest.raises(ValueError):
        step_metrics(np.arange(20.0), np.full(20, np.nan), 0.8)
