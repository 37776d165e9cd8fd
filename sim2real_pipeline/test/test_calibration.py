"""The stand-in's calibration figures (calibration.py): spectra and autocorrelation of known
processes, the tolerance, the suggested scale, the published figures' file."""
import numpy as np
import pytest

from sim2real_pipeline.calibration import (Calibration, RealRobotResidual, residual_spectra,
                                           suggested_scale, torque_residuals)
from sim2real_pipeline.errors import PipelineError

RATE = 100.0


def ar1(n, tau, rng, dof=7):
    """A unit-variance first-order Gauss-Markov process with correlation time ``tau`` [s]."""
    a = np.exp(-1.0 / (RATE * tau))
    x = np.zeros((n, dof))
    for k in range(1, n):
        x[k] = a * x[k - 1] + np.sqrt(1 - a * a) * rng.standard_normal(dof)
    return x


def test_white_noise_is_flat_and_uncorrelated():
    rng = np.random.default_rng(0)
    spectra = residual_spectra([0.3 * rng.standard_normal((2000, 7)) for _ in range(10)], RATE)
    np.testing.assert_allclose(spectra.psd[1:-1].mean(axis=0), spectra.white_psd, rtol=0.1)
    np.testing.assert_allclose(spectra.white_psd, 2 * 0.09 / RATE, rtol=0.05)
    assert np.all(np.abs(spectra.autocorrelation[1:]) < 0.05)
    np.testing.assert_allclose(spectra.correlation_time, 1.0 / RATE)


def test_a_correlated_process_shows_its_correlation_time_and_a_low_pass_spectrum():
    rng = np.random.default_rng(1)
    spectra = residual_spectra([ar1(3000, 0.1, rng) for _ in range(5)], RATE)
    np.testing.assert_allclose(spectra.correlation_time, 0.1, atol=0.02)
    assert np.all(spectra.psd[1] > 5 * spectra.white_psd)       # power at low frequencies
    assert np.all(spectra.psd[-1] < 0.2 * spectra.white_psd)


def test_residuals_are_the_torque_columns_real_minus_predicted():
    pred, real = np.zeros((5, 21)), np.arange(105.0).reshape(5, 21)
    (res,) = torque_residuals([pred], [real])
    np.testing.assert_array_equal(res, real[:, 14:21])


def test_short_residuals_alone_are_refused():
    with pytest.raises(PipelineError, match="no residual"):
        residual_spectra([np.zeros((10, 7))], RATE)


def test_tolerance_is_a_factor_either_way_and_the_scale_moves_only_joints_outside():
    published = np.full(7, 0.4)
    identified = np.array([0.4, 0.79, 0.21, 0.9, 0.1, 0.4, 0.4])
    cal = Calibration(identified, np.ones(7), published, 2.0)
    assert cal.within.tolist() == [True, True, True, False, False, True, True]
    scale = suggested_scale(cal, np.ones(7), np.zeros(7))
    np.testing.assert_allclose(scale[[0, 1, 2, 5, 6]], 1.0)
    np.testing.assert_allclose(scale[3], np.sqrt(0.4 / 0.9))
    np.testing.assert_allclose(scale[4], 2.0)
    # with a floor the part above it grows as scale^2
    floored = suggested_scale(cal, np.ones(7), np.full(7, 0.05))
    np.testing.assert_allclose(floored[4], np.sqrt(0.35 / 0.05))


def test_the_published_figures_load_and_bad_files_are_refused(tmp_path):
    reference = RealRobotResidual.from_yaml()
    np.testing.assert_allclose(reference.torque_mse, [0.41, 1.03, 0.60, 0.42, 0.17, 0.04, 0.03])
    assert reference.tolerance == 2.0 and "Gaz" in reference.source
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: x\nreal_panda_torque_mse: [1, 2]\ntolerance: 2\n")
    with pytest.raises(PipelineError, match="7 positive"):
        RealRobotResidual.from_yaml(str(bad))
    bad.write_text("source: x\n")
    with pytest.raises(PipelineError, match="real_panda_torque_mse"):
        RealRobotResidual.from_yaml(str(bad))
