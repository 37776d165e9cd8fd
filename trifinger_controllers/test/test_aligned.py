"""The chain of alignment primitives before a policy (paper 004 §IV-D; aligned.py): the plan for
constructed poses, and one short chained episode in simulation."""
import numpy as np
import pytest

from trifinger_controllers import cube, evaluation
from trifinger_controllers.aligned import (
    YAW_THRESHOLDS_DEG,
    AlignedController,
    AlignmentConfig,
    Primitive,
    flipped,
    plan,
    side_faces,
    yaw_error,
)
from trifinger_controllers.controllers import make_controller
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.perception import PerceptionConfig
from trifinger_controllers.physics import PhysicsRandomisation
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.task import RESTING_HEIGHT, random_resting_orientation
from trifinger_controllers.types import CUBE_WIDTH, CubePose

KIN = FingerKinematics()
GOAL_POSITION = np.array([0.0, 0.02, 0.07])
START = np.array([0.0, 0.0, RESTING_HEIGHT])
YAW = cube.from_yaw(0.3)
#: YAW rolled 90 deg over the bottom edge opposite its +x face (that face comes up).
ROLLED = cube.multiply(cube.from_axis_angle(np.array([np.sin(0.3), -np.cos(0.3), 0.0]), np.pi / 2), YAW)


def tipped(orientation, axis, angle):
    """``orientation`` rotated by ``angle`` about the world ``axis``."""
    return cube.multiply(cube.from_axis_angle(np.asarray(axis, float), angle), orientation)


def kinds(steps):
    return [s.primitive for s in steps]


def test_flipped_brings_the_pushed_face_on_top():
    rng = np.random.default_rng(0)
    for _ in range(50):
        orientation = random_resting_orientation(rng)
        for face in side_faces(orientation):
            after = flipped(orientation, face)
            assert cube.up_face(after) == face
            assert cube.angle_between(after, orientation) == pytest.approx(np.pi / 2)


def test_yaw_error_is_the_signed_turn_between_resting_orientations():
    assert np.rad2deg(yaw_error(cube.from_yaw(0.1), cube.from_yaw(0.1 + np.deg2rad(40)))) == pytest.approx(40)
    assert np.rad2deg(yaw_error(cube.from_yaw(0.1), cube.from_yaw(0.1 - np.deg2rad(170)))) == pytest.approx(-170)
    # a tilted goal: the yaw to its nearest resting orientation, the tilt left to the policy
    assert yaw_error(YAW, tipped(YAW, [1, 0, 0], 0.4)) == pytest.approx(0.0, abs=1e-9)


def test_nothing_to_do_when_the_goal_is_within_the_yaw_threshold():
    goal = CubePose(GOAL_POSITION, tipped(cube.from_yaw(0.3 + np.deg2rad(10)), [1, 0, 0], 0.5))
    assert plan(CubePose(START, YAW), goal) == []


def test_a_large_yaw_is_turned_in_steps_within_the_fingers_reach():
    config = AlignmentConfig()
    one = plan(CubePose(START, YAW), CubePose(GOAL_POSITION, cube.from_yaw(0.3 + np.deg2rad(40))), config)
    assert kinds(one) == [Primitive.YAW] and np.rad2deg(one[0].angle) == pytest.approx(40)
    three = plan(CubePose(START, YAW), CubePose(GOAL_POSITION, cube.from_yaw(0.3 - np.deg2rad(100))), config)
    assert kinds(three) == [Primitive.YAW] * 3
    assert np.rad2deg(sum(s.angle for s in three)) == pytest.approx(-100)
    assert all(abs(s.angle) <= np.deg2rad(config.max_turn_deg) for s in three)


def test_a_far_cube_is_slid_to_the_centre_first():
    steps = plan(CubePose(np.array([0.1, 0.0, RESTING_HEIGHT]), YAW), CubePose(GOAL_POSITION, YAW))
    assert kinds(steps) == [Primitive.SLIDE] and steps[0].target == (0.0, 0.0)


def test_a_goal_with_a_side_face_up_needs_one_flip_of_that_face():
    goal = CubePose(GOAL_POSITION, tipped(ROLLED, [1, 0, 0], 0.3))           # the cube's +x face up, tilted
    assert cube.up_face(goal.orientation) == 0
    steps = plan(CubePose(START, YAW), goal)
    assert kinds(steps) == [Primitive.FLIP] and steps[0].face == 0          # no yaw left after it
    # plus a yaw when the goal is turned as well
    turned = CubePose(GOAL_POSITION, cube.multiply(cube.from_yaw(np.deg2rad(30)), ROLLED))
    steps = plan(CubePose(START, YAW), turned)
    assert kinds(steps) == [Primitive.FLIP, Primitive.YAW] and np.rad2deg(steps[1].angle) == pytest.approx(30)


def test_a_flip_that_would_roll_the_cube_far_away_starts_with_a_slide():
    goal = CubePose(GOAL_POSITION, ROLLED)
    face_normal = cube.rotate(YAW, cube.FACE_NORMALS[0])[:2]
    start = np.array([*(-0.04 * face_normal), RESTING_HEIGHT])              # it would land 10.5 cm out
    steps = plan(CubePose(start, YAW), goal)
    assert kinds(steps) == [Primitive.SLIDE, Primitive.FLIP]
    # to half a width towards the pushed face: it lands half a width beyond the centre
    np.testing.assert_allclose(steps[0].target, 0.5 * CUBE_WIDTH * face_normal, atol=1e-9)


def test_an_upside_down_goal_needs_two_flips():
    goal = CubePose(GOAL_POSITION, tipped(YAW, [1, 0, 0], np.pi))
    steps = plan(CubePose(START, YAW), goal)
    flips = [s for s in steps if s.primitive is Primitive.FLIP]
    assert len(flips) == 2 and flips[1].face == cube.up_face(goal.orientation)
    assert flips[0].face in side_faces(YAW)
    orientation = flipped(flipped(YAW, flips[0].face), flips[1].face)
    assert cube.up_face(orientation) == cube.up_face(goal.orientation)


def test_the_chain_runs_at_the_fastest_child_rate_with_the_policys_threshold():
    for name, rate in (("cic", 100.0), ("cpc", 200.0), ("mp", 500.0)):
        chain = AlignedController(make_controller(name, kinematics=KIN, level=4), kinematics=KIN)
        assert chain.rate_hz == rate and chain.name == f"{name}+align"
        assert chain.config.yaw_threshold_deg == YAW_THRESHOLDS_DEG[name]
    # CPC turns 80 deg in its grasp, CIC does not
    goal = CubePose(GOAL_POSITION, cube.from_yaw(0.3 + np.deg2rad(80)))
    assert plan(CubePose(START, YAW), goal, AlignmentConfig.for_policy("cpc+rpl")) == []
    assert kinds(plan(CubePose(START, YAW), goal, AlignmentConfig.for_policy("cic"))) == [Primitive.YAW] * 2


def test_bad_config():
    with pytest.raises(ValueError, match="yaw_threshold_deg"):
        AlignmentConfig(yaw_threshold_deg=-1.0)
    with pytest.raises(ValueError, match="max_turn_deg"):
        AlignmentConfig(max_turn_deg=120.0)


def test_a_chained_episode_flips_the_cube_then_hands_over():
    """Ideal camera, nominal physics: the chain flips the cube's +x face up (the goal's), then
    the policy (CPC) takes over from the current observation."""
    initial = CubePose(np.array([0.02, 0.0, RESTING_HEIGHT]), YAW)
    goal = CubePose(GOAL_POSITION, ROLLED)
    chain = AlignedController(make_controller("cpc", kinematics=KIN, level=4), kinematics=KIN)
    platform = SimulatedPlatform(seed=0, perception=PerceptionConfig.ideal(), physics=PhysicsRandomisation.nominal())
    try:
        record = evaluation.run_episode(platform, chain, 4, goal, initial, seconds=6.0, kinematics=KIN)
    finally:
        platform.close()
    assert record.error is None
    assert kinds(s.step for s in chain.records) == [Primitive.FLIP] and chain.records[0].done
    assert chain.handover is not None and chain.handover < 6.0
    assert cube.up_face(record.final.orientation) == cube.up_face(goal.orientation) == 0
