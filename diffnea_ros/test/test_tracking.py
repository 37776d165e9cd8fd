"""Tracking with a learnt inverse-dynamics model (paper 002 §4.1.1): the ground-truth model
tracks almost perfectly, a wrong model visibly worse; the end-effector point and its Jacobian
agree; the reaching targets and goals are what the module says."""
import numpy as np
import pytest
import torch

from diffnea_ros.model import RigidBodyModel
from diffnea_ros.experiments.sine_tracking import (TrackingConfig, kuka_urdf_path, load_pybullet_robot,
                                                   perturb_inertials)
from diffnea_ros.experiments.tracking import (HOME, OperationalSpaceConfig, end_effector_offset,
                                              end_effector_position, ground_truth, minimum_jerk,
                                              reaching_goals, track_operational_space, track_sine)
from diffnea_ros.urdf import load_robot

p = pytest.importorskip("pybullet")
SHORT = OperationalSpaceConfig(tasks=2, move_seconds=1.0, hold_seconds=0.25)


@pytest.fixture(scope="module")
def models():
    description = load_robot(kuka_urdf_path())
    truth = ground_truth(RigidBodyModel(description))
    wrong = ground_truth(RigidBodyModel(perturb_inertials(description,
                                                          np.random.default_rng(0), 0.9)))
    return truth, wrong


def test_sine_tracking_is_near_perfect_with_the_truth_and_worse_with_a_wrong_model(models):
    truth, wrong = models
    good = track_sine(truth, TrackingConfig(duration=3.0))
    bad = track_sine(wrong, TrackingConfig(duration=3.0))
    assert good.stable and bad.stable
    assert good.nmse_q.max() < 1e-6 and good.rms_q < 1e-3
    assert bad.nmse_q.mean() > 20 * good.nmse_q.mean()
    assert bad.rms_qd > 10 * good.rms_qd


def test_reaching_is_near_perfect_with_the_truth_and_worse_with_a_wrong_model(models):
    truth, wrong = models
    goals = reaching_goals(0, SHORT)
    good = track_operational_space(truth, goals, SHORT)
    bad = track_operational_space(wrong, goals, SHORT)
    assert good.stable and bad.stable
    assert good.nmse_x < 1e-4 and good.rms_x < 1e-3
    assert bad.nmse_x > 20 * good.nmse_x and bad.nmse_xd > 20 * good.nmse_xd


def test_a_model_without_gravity_is_reported_unstable_or_far_off(models):
    truth, _ = models
    result = track_operational_space(lambda q, qd, qdd: torch.zeros_like(q),
                                     reaching_goals(1, SHORT), SHORT)
    assert not result.stable or result.rms_x > 0.01
    if not result.stable:
        assert result.nmse_x is None and result.nmse_xd is None


def test_goals_are_seeded_and_within_range():
    a, b, c = reaching_goals(3, SHORT), reaching_goals(3, SHORT), reaching_goals(4, SHORT)
    assert a.shape == (2, 3) and np.array_equal(a, b) and not np.array_equal(a, c)
    client = p.connect(p.DIRECT)
    try:
        body, joints = load_pybullet_robot(client, kuka_urdf_path())
        for k, j in enumerate(joints):
            p.resetJointState(body, j, HOME[k], 0.0, physicsClientId=client)
        home = end_effector_position(client, body, joints[-1])
    finally:
        p.disconnect(client)
    assert np.all(np.abs(a - home) <= SHORT.goal_range)


def test_end_effector_jacobian_matches_finite_differences():
    client = p.connect(p.DIRECT)
    try:
        body, joints = load_pybullet_robot(client, kuka_urdf_path())
        ee = joints[-1]
        q = np.array(HOME) + 0.1

        def position(x):
            for k, j in enumerate(joints):
                p.resetJointState(body, j, x[k], 0.0, physicsClientId=client)
            return end_effector_position(client, body, ee)

        numeric = np.stack([(position(q + e) - position(q - e)) / 2e-6
                            for e in np.eye(7) * 1e-6], axis=1)
        zeros = [0.0] * 7
        jac = np.array(p.calculateJacobian(body, ee, end_effector_offset(client, body, ee),
                                           q.tolist(), zeros, zeros, physicsClientId=client)[0])
    finally:
        p.disconnect(client)
    assert np.allclose(jac, numeric, atol=1e-7)


def test_minimum_jerk_starts_and_ends_at_rest():
    start, goal = np.zeros(3), np.array([0.1, -0.2, 0.05])
    t = np.linspace(0.0, 1.5, 301)
    x, xd = minimum_jerk(start, goal, t, 1.0)
    assert np.allclose(x[0], start) and np.allclose(x[-1], goal)
    assert np.allclose(xd[0], 0.0) and np.allclose(xd[t >= 1.0], 0.0)
    assert np.allclose(np.gradient(x, t, axis=0)[5:195], xd[5:195], atol=1e-3)
