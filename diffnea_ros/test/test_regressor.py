"""The regressor tau = Y pi is exact: it equals the RNEA, and training through it equals
training through the differentiable RNEA."""
from __future__ import annotations

import os

import pytest
import torch

from diffnea_ros.algorithms import rnea
from diffnea_ros.learnable import LearnableDynamics
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.regressor import regressor, regressor_torque, standard_parameters


def urdf(name: str) -> str:
    import pybullet_data

    return os.path.join(pybullet_data.getDataPath(), name)


@pytest.mark.parametrize("path", ["kuka_iiwa/model.urdf", "franka_panda/panda.urdf"])
def test_regressor_equals_rnea(path):
    model = RigidBodyModel.from_urdf(urdf(path))
    generator = torch.Generator().manual_seed(0)
    q, qd, qdd = (torch.randn(32, model.dof, dtype=torch.float64, generator=generator) for _ in range(3))
    y = regressor(model, q, qd, qdd)
    assert y.shape == (32, model.dof, model.num_bodies, 10)
    tau = regressor_torque(y, standard_parameters(model.nominal_inertials()))
    expected = rnea(model, q, qd, qdd, damping=torch.zeros(model.dof, dtype=torch.float64))
    torch.testing.assert_close(tau, expected, rtol=0, atol=1e-11)


@pytest.mark.parametrize("kind", ["symm", "tri", "cov"])
def test_prediction_and_gradient_through_the_regressor_equal_the_rnea(kind):
    model = RigidBodyModel.from_urdf(urdf("franka_panda/panda.urdf"))
    dynamics = LearnableDynamics(model, kind, friction=True)
    with torch.no_grad():   # move away from the URDF so every term matters
        for p in dynamics.parameters():
            p.add_(0.05 * torch.randn_like(p))
    generator = torch.Generator().manual_seed(1)
    q, qd, qdd = (torch.randn(16, model.dof, dtype=torch.float64, generator=generator) for _ in range(3))
    target = torch.randn(16, model.dof, dtype=torch.float64, generator=generator)
    cache = dynamics.regressor_cache(q, qd, qdd, chunk=5)

    def gradients(prediction: torch.Tensor) -> list[torch.Tensor]:
        dynamics.zero_grad()
        ((prediction - target) ** 2).sum().backward()
        return [p.grad.clone() for p in dynamics.parameters()]

    direct = dynamics(q, qd, qdd)
    through = dynamics.predict_from_regressor(cache.y, cache.fixed, qd)
    torch.testing.assert_close(through, direct, rtol=0, atol=1e-10)
    for a, b in zip(gradients(direct), gradients(dynamics.predict_from_regressor(cache.y, cache.fixed, qd))):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-8)
