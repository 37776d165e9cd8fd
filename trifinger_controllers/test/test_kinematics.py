"""FingerKinematics against trifinger_simulation's own kinematics and PyBullet's dynamics."""

import numpy as np
import pybullet
import pytest
from robot_properties_fingers import Kinematics

from trifinger_controllers.kinematics import TIP_FRAMES, URDF_PATH, FingerKinematics
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.types import CubePose


@pytest.fixture(scope="module")
def kin():
    return FingerKinematics()


@pytest.fixture(scope="module")
def sim():
    platform = SimulatedPlatform()
    platform.reset(CubePose(np.array([0.0, 0.0, 0.0325]), np.array([0, 0, 0, 1.0])),
                   CubePose(np.array([0.0, 0.0, 0.08]), np.array([0, 0, 0, 1.0])))
    yield platform
    platform.close()


def random_configurations(kin, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(kin.lower, kin.upper, size=(n, 9))


def set_joints(sim, q):
    finger = sim.simulation.simfinger
    for i, joint in enumerate(finger.pybullet_joint_indices):
        pybullet.resetJointState(finger.finger_id, joint, q[i], 0.0, physicsClientId=sim.client_id)


def test_tips_equal_trifinger_simulation_kinematics(kin):
    reference = Kinematics(str(URDF_PATH), TIP_FRAMES)
    for q in random_configurations(kin, 50):
        np.testing.assert_allclose(kin.tip_positions(q), np.array(reference.forward_kinematics(q)),
                                   atol=1e-12)


def test_tips_equal_pybullet_link_states(kin, sim):
    finger = sim.simulation.simfinger
    for q in random_configurations(kin, 20, seed=1):
        set_joints(sim, q)
        expected = np.array([
            pybullet.getLinkState(finger.finger_id, link, computeForwardKinematics=True,
                                  physicsClientId=sim.client_id)[4]
            for link in finger.pybullet_tip_link_indices
        ])
        # PyBullet parses the URDF origins with float rounding: agreement is ~2e-9 m
        np.testing.assert_allclose(kin.tip_positions(q), expected, atol=1e-8)


def test_jacobian_equals_finite_differences(kin):
    eps = 1e-6
    for q in random_configurations(kin, 20, seed=2):
        jac = kin.tip_jacobians(q)
        assert jac.shape == (3, 3, 3)
        for j in range(9):
            dq = np.zeros(9)
            dq[j] = eps
            column = (kin.tip_positions(q + dq) - kin.tip_positions(q - dq)) / (2 * eps)  # (3 tips, 3)
            finger = j // 3
            for tip in range(3):
                if tip == finger:
                    np.testing.assert_allclose(jac[tip][:, j % 3], column[tip], atol=1e-8)
                else:  # other fingers' joints do not move this tip
                    np.testing.assert_allclose(column[tip], 0.0, atol=1e-12)


def test_gravity_and_mass_matrix_equal_pybullet(kin, sim):
    finger = sim.simulation.simfinger
    zeros = [0.0] * 9
    for q in random_configurations(kin, 20, seed=3):
        set_joints(sim, q)
        tau = pybullet.calculateInverseDynamics(finger.finger_id, list(q), zeros, zeros,
                                                physicsClientId=sim.client_id)
        np.testing.assert_allclose(kin.gravity(q), tau, atol=1e-6)
        mass = np.array(pybullet.calculateMassMatrix(finger.finger_id, list(q),
                                                     physicsClientId=sim.client_id))
        np.testing.assert_allclose(kin.mass_matrix(q), mass, atol=1e-6)
        assert np.allclose(kin.mass_matrix(q), kin.mass_matrix(q).T)


def test_gravity_does_not_corrupt_cached_kinematics(kin):
    q1, q2 = random_configurations(kin, 2, seed=4)
    tips = kin.tip_positions(q1)
    jac = kin.tip_jacobians(q1)
    kin.gravity(q2)
    kin.mass_matrix(q2)
    np.testing.assert_array_equal(kin.tip_positions(q1), tips)
    np.testing.assert_array_equal(kin.tip_jacobians(q1), jac)


def test_inverse_kinematics_reaches_reachable_targets(kin):
    rng = np.random.default_rng(5)
    margin = 0.1
    for _ in range(20):
        q_true = rng.uniform(kin.lower + margin, kin.upper - margin)
        targets = kin.tip_positions(q_true)
        q = kin.inverse_kinematics(targets, kin.initial_position, iterations=200)
        assert kin.within_limits(q)
        np.testing.assert_allclose(kin.tip_positions(q), targets, atol=1e-4)


def test_inverse_kinematics_respects_limits_for_unreachable_targets(kin):
    targets = np.array([[0.0, 0.0, 1.0]] * 3)
    q = kin.inverse_kinematics(targets, iterations=50)
    assert kin.within_limits(q)
    with pytest.raises(ValueError):
        kin.inverse_kinematics(np.zeros((2, 3)))
