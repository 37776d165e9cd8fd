"""SimulatedPlatform: reset, 1 ms torque steps, camera rate and delay, determinism (the ideal
camera: the tracker model has its own tests, test_perception.py)."""

import numpy as np
import pytest
from trifinger_simulation.tasks import move_cube
from trifinger_simulation.trifinger_platform import TriFingerPlatform

from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.perception import PerceptionConfig
from trifinger_controllers.platform import SimulatedPlatform, UnloggedTriFingerPlatform
from trifinger_controllers.types import TORQUE_LIMIT, CubePose, Observation

INITIAL = CubePose(np.array([0.02, -0.01, 0.0325]), np.array([0.0, 0.0, 0.38268343, 0.92387953]))
GOAL = CubePose(np.array([0.0, 0.05, 0.08]), np.array([0.0, 0.0, 0.0, 1.0]))
KIN = FingerKinematics()


def hold(obs: Observation) -> np.ndarray:
    """Gravity compensation + joint PD at the initial position."""
    q, dq = obs.robot.position, obs.robot.velocity
    return KIN.gravity(q) + 2.0 * (KIN.initial_position - q) - 0.05 * dq


def test_reset_and_first_observation():
    platform = SimulatedPlatform(perception=PerceptionConfig.ideal())
    obs = platform.reset(INITIAL, GOAL)
    assert obs.robot.step == 0 and obs.robot.time == 0.0
    np.testing.assert_allclose(obs.robot.position, KIN.initial_position, atol=1e-12)
    np.testing.assert_allclose(obs.robot.velocity, 0.0)
    np.testing.assert_allclose(obs.cube.position, INITIAL.position, atol=1e-9)
    np.testing.assert_allclose(obs.cube.orientation, INITIAL.orientation, atol=1e-7)
    assert obs.cube.stamp == 0.0
    assert obs.goal.position.tolist() == GOAL.position.tolist()
    platform.close()


def test_steps_camera_rate_and_delay():
    platform = SimulatedPlatform(perception=PerceptionConfig.ideal())
    obs = platform.reset(INITIAL, GOAL)
    stamps = set()
    for k in range(1, 1001):
        obs = platform.step(hold(obs))
        assert obs.robot.step == k and obs.robot.time == pytest.approx(k / 1000)
        assert np.all(np.abs(obs.robot.torque) <= TORQUE_LIMIT + 1e-12)
        stamps.add(obs.cube.stamp)
        if k >= 100:  # the delayed images: 90 ms < age <= 190 ms (10 Hz, 90 ms delay)
            assert 0.09 < obs.robot.time - obs.cube.stamp <= 0.19 + 1e-9
    stamp_list = sorted(stamps)
    np.testing.assert_allclose(np.diff(stamp_list), 0.1, atol=1e-9)  # 10 Hz
    # fingers held: the cube stays where it was put and the fingers where they started
    truth = platform.true_cube_pose()
    assert truth.stamp == pytest.approx(1.0)
    assert np.linalg.norm(truth.position - INITIAL.position) < 2e-3
    assert np.max(np.abs(obs.robot.position - KIN.initial_position)) < 0.05
    np.testing.assert_allclose(obs.cube.position, truth.position, atol=1e-3)
    platform.close()


def test_torque_is_clipped_and_bad_torques_rejected():
    platform = SimulatedPlatform(perception=PerceptionConfig.ideal())
    with pytest.raises(RuntimeError, match="reset"):
        platform.step(np.zeros(9))
    platform.reset(INITIAL, GOAL)
    obs = platform.step(np.full(9, 5.0))
    assert np.all(np.abs(obs.robot.torque) <= TORQUE_LIMIT + 1e-12)
    with pytest.raises(ValueError):
        platform.step(np.zeros(8))
    with pytest.raises(ValueError):
        platform.step(np.full(9, np.nan))
    platform.close()


def run(seed, torques):
    platform = SimulatedPlatform(seed=seed)
    obs = platform.reset(INITIAL, GOAL)
    out = []
    for torque in torques:
        obs = platform.step(hold(obs) + torque)
        out.append(np.concatenate([obs.robot.position, obs.robot.velocity, obs.cube.position,
                                   obs.cube.orientation, platform.true_cube_pose().position]))
    platform.close()
    return np.array(out)


def test_deterministic():
    torques = np.random.default_rng(0).uniform(-0.2, 0.2, size=(400, 9))
    a = run(3, torques)
    b = run(3, torques)
    np.testing.assert_array_equal(a, b)
    # and the same platform object gives the same episode again after reset
    platform = SimulatedPlatform(seed=3)
    for _ in range(2):
        obs = platform.reset(INITIAL, GOAL)
        for torque in torques[:100]:
            obs = platform.step(hold(obs) + torque)
        if _ == 0:
            first = obs.robot.position.copy()
    np.testing.assert_array_equal(first, obs.robot.position)
    platform.close()


def test_unlogged_platform_matches_trifinger_simulation():
    torques = np.random.default_rng(1).uniform(-0.3, 0.3, size=(350, 9))
    runs = []
    for cls in (TriFingerPlatform, UnloggedTriFingerPlatform):
        platform = cls(initial_object_pose=move_cube.Pose(INITIAL.position, INITIAL.orientation))
        rows = []
        for torque in torques:
            t = platform.append_desired_action(platform.Action(torque=torque))
            robot = platform.get_robot_observation(t)
            camera = platform.get_camera_observation(t)
            rows.append(np.concatenate([robot.position, robot.velocity, robot.torque,
                                        camera.object_pose.position, camera.object_pose.orientation,
                                        [camera.cameras[0].timestamp]]))
        runs.append(np.array(rows))
        del platform
    np.testing.assert_array_equal(runs[0], runs[1])
