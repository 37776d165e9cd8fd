"""Sine-tracking data of the simulated iiwa (paper 002 §4.1) and perturbed initial models:
PyBullet and our RNEA agree on the model, the recorded data satisfy the ground-truth inverse
dynamics, perturbations stay consistent, and identification from a perturbed model works."""
import functools

import numpy as np
import pytest
import torch

from diffnea_ros.algorithms import forward_dynamics, rnea
from diffnea_ros.consistency import check_consistency
from diffnea_ros.errors import DataError, DiffneaError
from diffnea_ros.identification import IdentificationConfig, evaluate_nmse, identify
from diffnea_ros.model import GRAVITY, RigidBodyModel
from diffnea_ros.experiments.sine_tracking import (AMPLITUDES, PERIODS, SineTrajectory, TrackingConfig,
                                                   joint_limits, kuka_urdf_path, load_pybullet_robot,
                                                   perturb_inertials, simulate_sine_tracking)
from diffnea_ros.urdf import load_robot

p = pytest.importorskip("pybullet")


@pytest.fixture(scope="module")
def description():
    return load_robot(kuka_urdf_path())


@pytest.fixture(scope="module")
def truth(description):
    return RigidBodyModel(description)


@pytest.fixture(scope="module")
def data():
    return simulate_sine_tracking(TrackingConfig(duration=2.0))


@pytest.fixture()
def bullet():
    client = p.connect(p.DIRECT)
    p.setGravity(*GRAVITY, physicsClientId=client)
    body, joints = load_pybullet_robot(client, kuka_urdf_path())
    yield client, body, joints
    p.disconnect(client)


def consistency(desc):
    return check_consistency([b.mass for b in desc.bodies], [b.com for b in desc.bodies],
                             [b.inertia for b in desc.bodies], names=desc.body_names)


def test_pybullet_inverse_dynamics_is_rnea_without_damping(bullet, truth):
    client, body, joints = bullet
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, qd, qdd = (rng.uniform(-1.5, 1.5, 7) for _ in range(3))
        expected = p.calculateInverseDynamics(body, q.tolist(), qd.tolist(), qdd.tolist(),
                                              physicsClientId=client)
        ours = rnea(truth, *(torch.tensor(x) for x in (q, qd, qdd)), damping=torch.zeros(7))
        assert np.allclose(ours[0].numpy(), expected, atol=1e-9)


def test_pybullet_step_is_forward_dynamics_with_urdf_damping(bullet, truth):
    """PyBullet applies the URDF's joint damping (0.5) explicitly; one semi-implicit step."""
    client, body, joints = bullet
    dt = 1e-3
    p.setTimeStep(dt, physicsClientId=client)
    rng = np.random.default_rng(2)
    q, qd, tau = rng.uniform(-1, 1, 7), rng.uniform(-2, 2, 7), rng.uniform(-5, 5, 7)
    for k, j in enumerate(joints):
        p.resetJointState(body, j, q[k], qd[k], physicsClientId=client)
    p.setJointMotorControlArray(body, joints, p.TORQUE_CONTROL, forces=tau.tolist(),
                                physicsClientId=client)
    p.stepSimulation(physicsClientId=client)
    states = p.getJointStates(body, joints, physicsClientId=client)
    q1, qd1 = np.array([s[0] for s in states]), np.array([s[1] for s in states])
    args = [torch.tensor(x) for x in (q, qd, tau)]
    with_damping = forward_dynamics(truth, *args)[0].numpy()
    without = forward_dynamics(truth, *args, damping=torch.zeros(7))[0].numpy()
    assert np.allclose((qd1 - qd) / dt, with_damping, atol=1e-8)
    assert not np.allclose((qd1 - qd) / dt, without, atol=1e-2)
    assert np.allclose(q1, q + dt * qd1, atol=1e-12)


def test_trajectory_follows_the_paper(description):
    lower, upper = joint_limits(description)
    trajectory = SineTrajectory.from_limits(lower, upper)
    t = np.linspace(0.0, 2 * max(PERIODS), 20001)
    q, qd, qdd = trajectory(t)
    reach = np.maximum(np.abs(lower), np.abs(upper))
    assert np.allclose(q.max(0), np.array(AMPLITUDES) * reach, rtol=1e-4)
    at_period = trajectory(np.array(PERIODS))[0].diagonal()      # joint j at t = T_j
    assert np.allclose(at_period, trajectory.centre, atol=1e-9)
    assert np.allclose(np.gradient(q, t, axis=0)[1:-1], qd[1:-1], atol=1e-3)
    assert np.allclose(np.gradient(qd, t, axis=0)[1:-1], qdd[1:-1], atol=1e-3)
    with pytest.raises(DataError, match="limits"):
        SineTrajectory.from_limits(np.array([0.0] * 7), upper)


def test_recorded_data_satisfy_the_ground_truth(data, truth):
    assert len(data) == 500 and np.allclose(np.diff(data.t), 1 / 250)
    assert np.all(data.tracking_rms() < 1e-3)
    model = functools.partial(rnea, truth)
    exact = evaluate_nmse(model, data.samples("exact"))
    savgol = evaluate_nmse(model, data.samples("savgol"))
    assert np.all(exact < 1e-12)
    assert np.all(savgol < 1e-3)
    # a wrong model does not: without damping, joint 1 (no gravity load) is far off
    undamped = evaluate_nmse(functools.partial(rnea, truth, damping=torch.zeros(7)),
                             data.samples("exact"))
    assert undamped[0] > 0.1
    with pytest.raises(DataError, match="acceleration"):
        data.samples("finite")


def test_perturbation_is_consistent_different_and_seeded(description):
    for seed in range(20):
        perturbed = perturb_inertials(description, np.random.default_rng(seed), scale=0.95)
        assert consistency(perturbed).consistent, seed
    a = perturb_inertials(description, np.random.default_rng(3), scale=0.5)
    b = perturb_inertials(description, np.random.default_rng(3), scale=0.5)
    for x, y, truth in zip(a.bodies, b.bodies, description.bodies):
        assert x.mass == y.mass and np.array_equal(x.inertia, y.inertia)
        assert abs(x.mass / truth.mass - 1) <= 0.5 and abs(x.mass - truth.mass) > 0
        assert np.abs(x.com - truth.com).max() <= 0.05 and not np.allclose(x.com, truth.com)
        assert not np.allclose(x.inertia, truth.inertia, rtol=1e-3)
        assert x.damping == truth.damping and np.array_equal(x.origin, truth.origin)
    same = perturb_inertials(description, np.random.default_rng(3), scale=0.0)
    assert all(np.allclose(x.inertia, t.inertia) and x.mass == t.mass
               for x, t in zip(same.bodies, description.bodies))
    with pytest.raises(DiffneaError, match="scale"):
        perturb_inertials(description, np.random.default_rng(0), scale=1.0)
    with pytest.raises(DiffneaError, match="not links"):
        perturb_inertials(description, np.random.default_rng(0), links=["nope"])


def test_identification_from_a_perturbed_model(data, description):
    torch.set_num_threads(1)
    perturbed = perturb_inertials(description, np.random.default_rng(0), scale=0.5)
    config = IdentificationConfig(parametrisation="cov", epochs=6, batch_size=32,
                                  learning_rate=1e-2, seed=0)
    result = identify(RigidBodyModel(perturbed), data.samples(), config=config)
    before, after = result.nmse_train_before.mean(), result.nmse_train_after.mean()
    assert before > 0.1
    assert after < before / 10
    assert result.consistency.consistent
