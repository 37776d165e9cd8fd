"""Goals, initial poses, reward and workspace checks against trifinger_simulation's move_cube."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from trifinger_simulation.tasks import move_cube

from trifinger_controllers import cube, task
from trifinger_controllers.types import CubePose


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_reward_equals_minus_move_cube_cost(level):
    rng = np.random.default_rng(level)
    for _ in range(50):
        goal = task.sample_goal(level, rng)
        pose = CubePose(rng.uniform([-0.2, -0.2, 0.0], [0.2, 0.2, 0.15]),
                        Rotation.random(random_state=int(rng.integers(1 << 30))).as_quat())
        expected = -move_cube.evaluate_state(move_cube.Pose(goal.position, goal.orientation),
                                             move_cube.Pose(pose.position, pose.orientation), level)
        assert task.reward(level, goal, pose) == pytest.approx(expected, abs=1e-15)
        assert task.reward(level, goal, goal) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_vectorised_rewards_equal_reward(level):
    rng = np.random.default_rng(20 + level)
    goal = task.sample_goal(level, rng)
    positions = rng.uniform([-0.2, -0.2, 0.0], [0.2, 0.2, 0.15], size=(40, 3))
    orientations = Rotation.random(40, random_state=level).as_quat()
    expected = [task.reward(level, goal, CubePose(p, q)) for p, q in zip(positions, orientations)]
    np.testing.assert_allclose(task.rewards(level, goal, positions, orientations), expected, atol=1e-12)


def test_errors():
    goal = CubePose(np.array([0.0, 0.0, 0.05]), np.array([0, 0, 0, 1.0]))
    pose = CubePose(np.array([0.03, 0.04, 0.05]), Rotation.from_euler("x", 30, degrees=True).as_quat())
    assert task.position_error(goal, pose) == pytest.approx(0.05)
    assert np.rad2deg(task.orientation_error(goal, pose)) == pytest.approx(30.0)


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_goals_are_seeded_valid_and_leave_move_cube_alone(level):
    state = move_cube.random.get_state()
    a = [task.sample_goal(level, np.random.default_rng(7)) for _ in range(2)]
    assert np.array_equal(a[0].position, a[1].position)
    assert np.array_equal(a[0].orientation, a[1].orientation)
    assert move_cube.random.get_state()[1].tolist() == state[1].tolist()
    rng = np.random.default_rng(8)
    for _ in range(30):
        goal = task.sample_goal(level, rng)
        task.check_goal(goal)
        assert task.in_workspace(goal)
    with pytest.raises(ValueError, match="invalid level"):
        task.sample_goal(5, rng)


def test_goal_outside_workspace_is_a_clear_error():
    identity = np.array([0, 0, 0, 1.0])
    for position, words in [([0.3, 0.0, 0.05], "arena circle"), ([0.0, 0.0, 0.01], "too low"),
                            ([0.0, 0.0, 0.2], "too high")]:
        with pytest.raises(ValueError, match=f"outside the workspace: .*{words}"):
            task.check_goal(CubePose(np.array(position), identity))
    tilted = Rotation.from_euler("x", 45, degrees=True).as_quat()
    with pytest.raises(ValueError, match="corner is too low"):
        task.check_goal(CubePose(np.array([0.0, 0.0, 0.0325]), tilted))
    with pytest.raises(ValueError, match="unit quaternion"):
        task.check_goal(CubePose(np.array([0.0, 0.0, 0.05]), np.array([0, 0, 0, 2.0])))
    with pytest.raises(ValueError, match="shape"):
        task.check_goal(CubePose(np.zeros(2), identity))
    assert not task.in_workspace(CubePose(np.array([0.3, 0.0, 0.05]), identity))


def assert_resting_near_centre(pose):
    assert pose.position[2] == pytest.approx(task.RESTING_HEIGHT)
    assert np.linalg.norm(pose.position[:2]) <= task.INITIAL_RADIUS
    assert abs(cube.lowest_point(pose)) < 1e-9  # a face flat on the floor


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_initial_poses_rest_near_the_centre(level):
    rng = np.random.default_rng(10 + level)
    for _ in range(30):
        goal, initial = task.sample_episode(level, rng)
        assert_resting_near_centre(initial)
        if level == 4:  # aligned as well as a resting cube can be
            tilt = np.arccos(np.max(cube.rotate(goal.orientation, cube.FACE_NORMALS)[:, 2]))
            assert task.orientation_error(goal, initial) == pytest.approx(tilt, abs=1e-9)


@pytest.mark.parametrize("delta", [10.0, 25.0, 35.0])
def test_level4_initial_orientation_error_is_exact(delta):
    rng = np.random.default_rng(int(delta))
    for _ in range(30):
        goal, initial = task.sample_episode(4, rng, orientation_error_deg=delta)
        task.check_goal(goal)
        assert_resting_near_centre(initial)
        assert np.rad2deg(task.orientation_error(goal, initial)) == pytest.approx(delta, abs=1e-9)
        # the same error from a given goal
        again = task.initial_pose(goal, 4, rng, orientation_error_deg=delta)
        assert_resting_near_centre(again)
        assert np.rad2deg(task.orientation_error(goal, again)) == pytest.approx(delta, abs=1e-9)


def test_impossible_orientation_error_is_reported():
    goal = CubePose(np.array([0.0, 0.0, 0.08]),
                    Rotation.from_euler("xy", [40, 20], degrees=True).as_quat())
    with pytest.raises(ValueError, match="impossible"):
        task.initial_pose(goal, 4, np.random.default_rng(0), orientation_error_deg=10.0)


def test_episodes_depend_on_the_seed_only():
    a = [task.sample_episode(3, np.random.default_rng(42)) for _ in range(2)]
    for x, y in zip(a[0], a[1]):
        assert np.array_equal(x.position, y.position) and np.array_equal(x.orientation, y.orientation)
    b = task.sample_episode(3, np.random.default_rng(43))
    assert not np.array_equal(a[0][0].position, b[0].position)
