"""ILC of paper 003 §4.3 (eq. 13) on plants with known behaviour; no simulator needed."""
import math

import numpy as np
import pytest

from compliant_actuator_gazebo.experiments.ilc import IlcConfig, minimum_jerk, run_ilc


def lagging_plant(sag: float, tau: float, dt: float):
    """First-order lag of the equilibrium with a constant sag (a soft joint under a load)."""
    def trial(eq: np.ndarray) -> np.ndarray:
        q = np.empty_like(eq)
        q[0] = eq[0] - sag
        a = dt / (tau + dt)
        for k in range(1, len(eq)):
            q[k] = q[k - 1] + a * (eq[k] - sag - q[k - 1])
        return q
    return trial


def test_minimum_jerk_endpoints_and_rest():
    t = np.linspace(0.0, 25.0, 2501)
    q = minimum_jerk(np.zeros(2), np.array([0.8, 0.8]), 20.0, t)
    assert np.allclose(q[0], 0.0) and np.allclose(q[t >= 20.0], 0.8)
    v = np.gradient(q[:, 0], t)
    assert abs(v[0]) < 1e-6 and abs(v[2000]) < 1e-3
    assert np.max(v) == pytest.approx(1.875 * 0.8 / 20.0, rel=1e-3)   # peak of the quintic


def test_gain_decays_as_documented():
    c = IlcConfig()
    assert c.gain(0) == 0.5 and c.gain(10) == pytest.approx(0.5 / math.e)


def test_converges_on_a_lagging_sagging_plant():
    dt = 0.01
    t = np.arange(0.0, 20.0, dt)
    desired = minimum_jerk(np.zeros(2), np.array([0.8, 0.8]), 20.0, t)
    result = run_ilc(lagging_plant(sag=0.3, tau=0.2, dt=dt), desired)
    assert result.max_errors[0] > 0.25              # the open-loop trial misses by the sag
    assert result.converged_iteration is not None
    assert result.max_errors[-1] <= 0.08
    assert result.iterations == result.converged_iteration
    assert all(b < a for a, b in zip(result.max_errors, result.max_errors[1:]))


def test_stops_at_max_iterations_when_the_band_is_unreachable():
    t = np.arange(0.0, 1.0, 0.01)
    desired = np.column_stack([np.sin(t)])
    noisy = np.random.default_rng(0)
    result = run_ilc(lambda eq: eq + noisy.normal(0.0, 0.5, eq.shape), desired,
                     IlcConfig(max_iterations=3))
    assert result.converged_iteration is None and result.iterations == 3


def test_bad_input_is_refused():
    desired = np.zeros((10, 2))
    with pytest.raises(ValueError):
        run_ilc(lambda eq: eq, np.full((10, 2), np.nan))
    with pytest.raises(ValueError):
        run_ilc(lambda eq: np.full_like(eq, np.nan), desired)
    with pytest.raises(ValueError):
        run_ilc(lambda eq: eq[:, :1], desired)
    with pytest.raises(ValueError):
        IlcConfig(k0=0.0)
    with pytest.raises(ValueError):
        minimum_jerk(np.zeros(1), np.ones(1), 0.0, np.zeros(3))
