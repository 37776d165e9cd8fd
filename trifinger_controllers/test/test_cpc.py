"""Cartesian position controller, CPC (paper 004 §IV-B), on the simulated platform."""
import threading

import numpy as np
import pytest
from regrasp_episode import knocked_episode, selection_threads

from trifinger_controllers import cube, evaluation, grasps, task
from trifinger_controllers.controllers.cpc import (
    CPC_PARAMETERS,
    CartesianPositionController,
    CubePath,
    Phase,
    cartesian_torques,
    damped_pseudo_inverse,
    scheduled_gain,
)
from trifinger_controllers.controllers.grasp_planner import DEFAULT_LATENCY
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.types import TORQUE_LIMIT, CubePose, Observation, RobotState

H = cube.HALF_WIDTH


@pytest.fixture(scope="module")
def kinematics():
    return FingerKinematics()


def test_damped_pseudo_inverse(kinematics):
    jac = kinematics.tip_jacobians(kinematics.initial_position)
    pinv = damped_pseudo_inverse(jac, 1e-10)
    np.testing.assert_allclose(pinv, np.linalg.inv(jac), rtol=1e-5, atol=1e-6)
    # J^T (J J^T + l I)^-1 with l > 0 is biased towards smaller joint motions
    damped = damped_pseudo_inverse(jac, 1e-3)
    assert np.all(np.linalg.norm(damped, axis=(1, 2)) < np.linalg.norm(pinv, axis=(1, 2)))
    # bounded at a singular configuration (the finger stretched out: rank 2)
    singular = np.array([[[0.1, 0.0, 0.0], [0.0, 0.1, 0.1], [0.0, 0.0, 0.0]]] * 3)
    assert np.all(np.isfinite(damped_pseudo_inverse(singular, 1e-4)))
    assert np.abs(damped_pseudo_inverse(singular, 1e-4)).max() < 1e3
    u = np.array([[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]])
    np.testing.assert_allclose(cartesian_torques(jac, u, 1e-10), np.einsum("fij,fj->fi", np.linalg.inv(jac), u),
                               rtol=1e-5, atol=1e-8)


def test_gravity_compensation_holds_the_fingers_still(kinematics):
    """With the gravity torques alone (the CPC torque at zero tip error) the fingers stay put;
    without them they sag."""
    far = CubePose(np.array([0.0, 0.0, H]), cube.IDENTITY)
    drift = {}
    for compensate in (True, False):
        platform = SimulatedPlatform()
        obs = platform.reset(far, far)
        start = kinematics.tip_positions(obs.robot.position)
        for _ in range(400):
            q = obs.robot.position
            tau = kinematics.gravity(q) if compensate else np.zeros(9)
            tau = tau + cartesian_torques(kinematics.tip_jacobians(q), np.zeros((3, 3)), 1e-4).reshape(-1)
            obs = platform.step(tau)
        drift[compensate] = np.max(np.linalg.norm(kinematics.tip_positions(obs.robot.position) - start, axis=1))
        platform.close()
    assert drift[True] < 0.002
    assert drift[False] > 0.01


def test_gain_schedule_grows_exponentially_up_to_the_clip():
    assert scheduled_gain(1.0, 2.0, 0.5, 10.0, 0.0) == 1.0
    assert scheduled_gain(1.0, 2.0, 0.5, 10.0, 1.0) == pytest.approx(4.0)
    assert scheduled_gain(1.0, 2.0, 0.5, 10.0, 0.25) == pytest.approx(np.sqrt(2.0))
    assert scheduled_gain(1.0, 2.0, 0.5, 10.0, 100.0) == 10.0
    assert scheduled_gain(1.0, 1.0, 0.5, 10.0, 100.0) == 1.0


def test_cube_path_lifts_then_goes_straight_to_the_goal():
    start, goal = np.array([0.0, 0.0, H]), np.array([0.06, 0.08, 0.07])
    lifted = start + [0.0, 0.0, 0.02]
    path = CubePath(np.stack([start, lifted, goal]), 0.1, 1.0, cube.IDENTITY, cube.IDENTITY)
    np.testing.assert_allclose(path.position(0.5), start)
    np.testing.assert_allclose(path.position(1.1), start + [0.0, 0.0, 0.01])
    np.testing.assert_allclose(np.linalg.norm(path.velocity(1.5)), 0.1)
    assert path.done(1.0 + path.duration() + 1e-6) and not path.done(1.5)
    np.testing.assert_allclose(path.position(10.0), goal)
    np.testing.assert_allclose(path.orientation(2.0), cube.IDENTITY)


def test_bad_input(kinematics):
    with pytest.raises(ValueError, match="unknown grasp"):
        CartesianPositionController("xx", kinematics=kinematics)
    with pytest.raises(ValueError, match="level"):
        CartesianPositionController("tg", kinematics=kinematics, level=7)
    with pytest.raises(ValueError, match="outside its interval"):
        CPC_PARAMETERS.replace(kp=100.0)
    controller = CartesianPositionController("tg", kinematics=kinematics)
    platform = SimulatedPlatform()
    obs = platform.reset(CubePose(np.array([0.0, 0.0, H]), cube.IDENTITY),
                         CubePose(np.array([0.0, 0.0, 0.08]), cube.IDENTITY))
    with pytest.raises(RuntimeError, match="reset"):
        controller.compute(obs)
    platform.close()


@pytest.mark.parametrize("grasp", ["tg", "og"])
def test_short_episode_grasps_and_lifts_the_cube(grasp, kinematics):
    """Level 3, fixed seed: CPC grasps the cube and lifts it by more than 2 cm, all three tips in
    contact, torques within the limit (mix and match: TG and OG)."""
    goal, initial, seed = evaluation.episode_specs(3, 2, 0)[1]
    assert goal.position[2] > initial.position[2] + 0.03
    controller = CartesianPositionController(grasp, kinematics=kinematics, level=3)
    platform = SimulatedPlatform(seed=seed)
    obs = platform.reset(initial, goal)
    controller.reset(obs)
    assert controller.grasp.name == grasp
    torque = np.zeros(9)
    phases = set()
    for step in range(3000):
        if step % 5 == 0:  # 200 Hz
            torque = controller.compute(obs)
            assert np.all(np.abs(torque) <= TORQUE_LIMIT)
            phases.add(controller.phase)
        obs = platform.step(torque)
    truth = platform.true_cube_pose()
    held = evaluation.holding_fingers(kinematics, truth, obs.robot.position)
    platform.close()
    assert {Phase.ABOVE, Phase.BESIDE, Phase.CLOSE, Phase.MOVE} <= phases
    assert truth.position[2] - initial.position[2] > 0.02
    assert held == 3
    assert controller.regrasps == 0


def test_fixed_grasp_and_level_4_orientation_reference(kinematics):
    """A Grasp object is used as given; at level 4 the reference turns to the goal orientation."""
    pose = CubePose(np.array([0.0, 0.0, H]), cube.IDENTITY)
    goal = CubePose(np.array([0.0, 0.0, 0.08]), cube.from_yaw(np.deg2rad(20)))
    fixed = grasps.triangle_grasp(pose)
    controller = CartesianPositionController(fixed, kinematics=kinematics, level=4)
    platform = SimulatedPlatform()
    obs = platform.reset(pose, goal)
    controller.reset(obs)
    assert controller.grasp is fixed
    controller._grasp_pose = obs.cube
    controller._start_move(obs)
    end = controller._path.start + controller._path.duration()
    assert np.rad2deg(cube.angle_between(controller._path.orientation(end), goal.orientation)) < 1e-6
    platform.close()


def test_goal_yaw_only_where_a_finger_would_be_weak(kinematics):
    """Levels 1-3: the cube is turned on the way only if a finger would be too weak at the goal
    (here a far, high goal of the level-3 set, seed 1 trial 5), by at most 45 deg."""
    goal, initial, _ = evaluation.episode_specs(3, 6, 1)[5]
    controller = CartesianPositionController("tg", kinematics=kinematics, level=3)
    zeros = np.zeros(9)
    controller.reset(Observation(RobotState(0, 0.0, kinematics.initial_position, zeros, zeros), initial, goal))
    plan = controller.grasp_plan
    turned = plan.goal_orientation(initial.orientation, goal.position, kinematics)
    np.testing.assert_allclose(cube.multiply(plan.goal_turn, initial.orientation), turned, atol=1e-12)
    angle = np.rad2deg(cube.angle_between(turned, initial.orientation))
    assert 0.0 < angle <= 45.0 + 1e-6
    assert (plan.holding_torque(CubePose(goal.position, turned), kinematics)
            < plan.holding_torque(CubePose(goal.position, initial.orientation), kinematics))
    near = initial.position + np.array([0.0, 0.0, 0.03])
    np.testing.assert_allclose(plan.goal_orientation(initial.orientation, near, kinematics), initial.orientation)


def test_regrasp_is_planned_off_the_control_call(kinematics):
    """Simulation: the carried cube is put back on the floor, out of the hand. CPC retreats and
    grasps it again; every grasp selection ran on the planner's thread, never on the thread
    calling reset and compute; the re-grasp's plan was taken DEFAULT_LATENCY after it was asked
    for, and the episode repeats bit for bit (deterministic mode)."""
    goal, initial, seed = evaluation.episode_specs(3, 2, 0)[1]
    runs = []
    for _ in range(2):
        controller = CartesianPositionController("tg", kinematics=kinematics, level=3)
        threads = selection_threads(controller)
        torques, truth, _ = knocked_episode(controller, seed, initial, goal, steps=7000,
                                            knock_step=3000)
        runs.append(torques)
        assert controller.regrasps == 1
        assert len(threads) == 2 and threading.get_ident() not in threads
        regrasp = controller.grasp_planner.records[-1]
        assert regrasp.taken - regrasp.requested == pytest.approx(DEFAULT_LATENCY)
        assert controller.phase in (Phase.MOVE, Phase.HOLD)
        assert truth.position[2] > task.RESTING_HEIGHT + 0.02            # lifted again
    np.testing.assert_array_equal(runs[0], runs[1])
