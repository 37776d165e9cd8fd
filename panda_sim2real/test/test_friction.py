"""The stand-in's friction against the published identification (Gaz et al., RA-L 2019)."""
import os

import numpy as np
import pytest
import yaml

from panda_sim2real.friction import sigmoid_friction
from panda_sim2real.robot_config import REALITY_CONFIG_FILE, RobotConfig

REFERENCE = os.path.join(os.path.dirname(__file__), *[".."] * 3, "shared", "reference",
                         "panda_dynamics.yaml")
# The linear fit tau = fv qd + fc sign(qd) + fo of the same paper (reference sheet).
FV = np.array([0.0665, 0.1987, 0.0399, 0.2257, 0.1023, -0.0132, 0.0638])
FC = np.array([0.2450, 0.1523, 0.1827, 0.3591, 0.2669, 0.1658, 0.2109])
FO = np.array([-0.1073, -0.1566, -0.0686, -0.2522, 0.0045, 0.0910, -0.0127])


@pytest.fixture(scope="module")
def params():
    return RobotConfig.from_yaml(REALITY_CONFIG_FILE).friction


def test_zero_at_rest_and_monotonic(params):
    np.testing.assert_allclose(sigmoid_friction(params, np.zeros(7)), 0.0, atol=1e-12)
    qd = np.linspace(-2.0, 2.0, 401)[:, None] * np.ones(7)
    tau = sigmoid_friction(params, qd)
    assert np.all(np.diff(tau, axis=0) >= 0.0)
    assert np.all(np.abs(tau) <= params.phi1)


@pytest.mark.parametrize("qd", [-1.0, -0.5, 0.5, 1.0])
def test_agrees_with_the_published_linear_fit(params, qd):
    linear = FV * qd + FC * np.sign(qd) + FO
    np.testing.assert_array_less(np.abs(sigmoid_friction(params, np.full(7, qd)) - linear), 0.35)


@pytest.mark.skipif(not os.path.isfile(REFERENCE), reason="shared/reference not beside the repository")
def test_config_carries_the_reference_values(params):
    with open(REFERENCE, encoding="utf-8") as f:
        ref = yaml.safe_load(f)["friction"]
    for key in ("phi1", "phi2", "phi3"):
        np.testing.assert_array_equal(getattr(params, key), np.array(ref[key]))
