"""The grasp-constrained RRT-Connect of MP (paper 004 §IV-A), trifinger_controllers.rrt."""
from types import SimpleNamespace

import numpy as np
import pytest

from trifinger_controllers import cube, grasps, rrt
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.rrt import GraspPathPlanner, PlannerConfig, interpolate_pose
from trifinger_controllers.types import CUBE_WIDTH, CubePose

HALF = CUBE_WIDTH / 2
IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])


@pytest.fixture(scope="module")
def kin():
    return FingerKinematics()


def _pose(x, y, z, orientation=IDENTITY):
    return CubePose(np.array([x, y, z], float), np.asarray(orientation, float))


def _grasp(kin, pose):
    return grasps.center_of_three_grasp(pose, None, kin, level=3)


class WallPlanner(GraspPathPlanner):
    """A planner with an extra obstacle: cube centres with |x| < 1 cm below ``wall_top`` are
    invalid (to force a detour, or to block every path when the wall is infinitely high)."""

    wall_top = 0.075

    def _pose_violation(self, position, orientation):
        if abs(position[0]) < 0.01 and position[2] < self.wall_top:
            return "wall"
        return super()._pose_violation(position, orientation)


def _check_plan(plan, planner, kin, start, goals):
    cfg = planner.config
    assert np.allclose(plan.positions[0], start.position)
    assert any(np.allclose(plan.positions[-1], g.position)
               and cube.angle_between(plan.orientations[-1], g.orientation) < 1e-6 for g in goals)
    steps = (np.linalg.norm(np.diff(plan.positions, axis=0), axis=1)
             + cfg.rotation_weight * cube.angle_between(plan.orientations[:-1], plan.orientations[1:]))
    assert np.all(steps <= cfg.resolution + 1e-9)
    assert np.max(np.abs(np.diff(plan.joint_positions, axis=0))) <= cfg.max_joint_step + 1e-9
    for p, o, q, targets in zip(plan.positions, plan.orientations, plan.joint_positions, plan.tip_targets):
        # the grasp is maintained: the fingertips are at the grasp's contacts for this cube pose
        assert np.allclose(targets, planner.tip_targets(p, o))
        assert np.max(np.linalg.norm(kin.tip_positions(q) - targets, axis=1)) <= cfg.ik_tolerance
        assert kin.within_limits(q)
        assert cube.lowest_point(CubePose(p, o)) >= -cfg.floor_tolerance
        assert np.min(targets[:, 2]) >= cfg.min_tip_height


def test_direct_path(kin):
    start = _pose(0.0, 0.0, HALF)
    goal = _pose(0.04, 0.03, 0.08)
    planner = GraspPathPlanner(kin, _grasp(kin, start).tip_offsets(), PlannerConfig(seed=1))
    plan = planner.plan(start, goal, kin.initial_position)
    assert plan is not None and plan.iterations == 0
    _check_plan(plan, planner, kin, start, [goal])


def test_plans_around_an_obstacle(kin):
    start = _pose(-0.03, 0.0, 0.045)
    goal = _pose(0.03, 0.0, 0.045)
    planner = WallPlanner(kin, _grasp(kin, start).tip_offsets(), PlannerConfig(seed=3, max_time=10.0))
    plan = planner.plan(start, goal, kin.initial_position)
    assert plan is not None
    assert plan.iterations > 0                       # the direct path is blocked: RRT-Connect
    _check_plan(plan, planner, kin, start, [goal])
    crossing = np.abs(plan.positions[:, 0]) < 0.01
    assert np.all(plan.positions[crossing, 2] >= WallPlanner.wall_top)   # over the wall
    # shortcut smoothing leaves few corners
    assert plan.raw_waypoints >= 2 and len(plan) < 200


class FakeClock:
    """time.perf_counter for the planner module: each reading advances ``tick`` seconds, so a
    wall-clock budget becomes a number of readings, independent of this machine's load; a
    reading past ``stop`` fails the test (a planner that ignores its budget)."""

    def __init__(self, tick: float, stop: float) -> None:
        self.now, self.tick, self.stop = 0.0, tick, stop

    def __call__(self) -> float:
        self.now += self.tick
        if self.now > self.stop:
            raise AssertionError(f"the planner ran on past {self.stop} s of its clock")
        return self.now


def test_fails_cleanly_within_the_budget(kin, monkeypatch):
    start = _pose(-0.03, 0.0, 0.045)
    goal = _pose(0.03, 0.0, 0.045)
    budget = 0.05
    planner = WallPlanner(kin, _grasp(kin, start).tip_offsets(),
                          PlannerConfig(seed=0, max_time=budget, max_iterations=10 ** 6))
    planner.wall_top = np.inf                         # no way across
    clock = FakeClock(tick=0.001, stop=2 * budget)    # the budget is 50 readings
    monkeypatch.setattr(rrt, "time", SimpleNamespace(perf_counter=clock))
    extensions = []
    extend = planner._extend
    monkeypatch.setattr(planner, "_extend", lambda *a: extensions.append(1) or extend(*a))
    assert planner.plan(start, goal, kin.initial_position) is None
    assert extensions                                 # it searched,
    assert budget <= clock.now <= budget + 2 * clock.tick   # until the budget was spent


def test_invalid_goal_fails_fast(kin):
    start = _pose(0.0, 0.0, HALF)
    planner = GraspPathPlanner(kin, _grasp(kin, start).tip_offsets(), PlannerConfig())
    upside_down = cube.from_axis_angle(np.array([1.0, 0.0, 0.0]), np.pi)  # fingers cannot turn it over
    far = _pose(0.13, 0.0, 0.1, upside_down)
    def no_search(*_):
        raise AssertionError("an invalid goal must be refused before the search")
    planner._extend = no_search
    assert planner.plan(start, far, kin.initial_position) is None
    q, why = planner.check(far.position, far.orientation, kin.initial_position)
    assert q is None and why


def test_goal_region_and_determinism(kin):
    start = _pose(0.0, 0.0, HALF)
    goals = [_pose(0.0, 0.0, 0.07, cube.from_yaw(np.pi)),     # unreachable turn first
             _pose(0.0, 0.0, 0.07)]
    config = PlannerConfig(seed=5)
    a = GraspPathPlanner(kin, _grasp(kin, start).tip_offsets(), config).plan(start, goals, kin.initial_position)
    b = GraspPathPlanner(kin, _grasp(kin, start).tip_offsets(), config).plan(start, goals, kin.initial_position)
    assert a is not None and np.array_equal(a.joint_positions, b.joint_positions)
    assert cube.angle_between(a.orientations[-1], IDENTITY) < 1e-6


def test_interpolate_pose_and_bad_input(kin):
    q1 = cube.from_yaw(1.0)
    p, o = interpolate_pose(np.zeros(3), IDENTITY, np.ones(3), q1, 0.5)
    assert np.allclose(p, 0.5) and np.isclose(cube.angle_between(o, IDENTITY), 0.5)
    with pytest.raises(ValueError):
        GraspPathPlanner(kin, np.zeros((2, 3)))
    with pytest.raises(ValueError):
        PlannerConfig(max_time=0.0)
