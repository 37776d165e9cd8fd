"""Joint-limit normalisation to [0, 1] (paper 000 §IV-B)."""
import numpy as np
import pytest

from panda_sim2real import ConfigError, JointLimits
from panda_pairs.normalisation import JointLimitScaler


@pytest.fixture(scope="module")
def limits():
    return JointLimits.from_yaml()


@pytest.fixture(scope="module")
def scaler(limits):
    return JointLimitScaler.from_limits(limits)


def test_round_trip_is_exact(scaler):
    x = np.random.default_rng(0).normal(0.0, 3.0, size=(50, 4, 21))
    np.testing.assert_allclose(scaler.inverse_transform(scaler.transform(x)), x, rtol=0, atol=1e-12)
    assert scaler.transform(x).shape == x.shape


def test_position_limits_map_to_zero_and_one(scaler, limits):
    low = np.concatenate([limits.position_min, -limits.velocity, -limits.effort])
    high = np.concatenate([limits.position_max, limits.velocity, limits.effort])
    np.testing.assert_allclose(scaler.transform(low), np.zeros(21), atol=1e-15)
    np.testing.assert_allclose(scaler.transform(high), np.ones(21), atol=1e-15)


def test_velocity_and_torque_zero_map_to_one_half(scaler, limits):
    x = np.concatenate([limits.home, np.zeros(7), np.zeros(7)])
    y = scaler.transform(x)
    np.testing.assert_allclose(y[7:], 0.5)
    assert np.all((y[:7] > 0) & (y[:7] < 1))


def test_wrong_width_is_rejected(scaler):
    with pytest.raises(ValueError):
        scaler.transform(np.zeros((3, 14)))


def test_arrays_round_trip_without_objects(scaler, tmp_path):
    arrays = scaler.to_arrays()
    assert all(a.dtype != object for a in arrays.values())
    np.savez(tmp_path / "s.npz", **arrays)
    with np.load(tmp_path / "s.npz", allow_pickle=False) as npz:
        back = JointLimitScaler.from_arrays({k: npz[k] for k in npz.files})
    np.testing.assert_array_equal(back.lower, scaler.lower)
    np.testing.assert_array_equal(back.upper, scaler.upper)
    assert back.joint_names == scaler.joint_names


def test_inconsistent_arrays_raise_config_error(scaler):
    arrays = scaler.to_arrays()
    with pytest.raises(ConfigError):
        JointLimitScaler.from_arrays({"lower": arrays["lower"], "upper": arrays["upper"]})
    with pytest.raises(ConfigError):
        JointLimitScaler.from_arrays(dict(arrays, upper=arrays["lower"]))
