"""The cube alignment primitives of paper 004 §IV-D in simulation (short runs, fixed poses)."""
import numpy as np
import pytest

from trifinger_controllers import cube
from trifinger_controllers.alignment import CENTRE, Flip, SlideToCentre, YawRotation
from trifinger_controllers.evaluation import control_period
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.pose_filter import ObservationFilter
from trifinger_controllers.task import RESTING_HEIGHT
from trifinger_controllers.types import CubePose

KIN = FingerKinematics()


def run(controller, initial, seconds, stop_when_done=True):
    """Run ``controller`` on the simulated platform (the tracker model, seen through the pose
    filter as in the evaluation) from ``initial``; the true final pose."""
    platform = SimulatedPlatform()
    estimator = ObservationFilter()
    try:
        obs = estimator(platform.reset(initial, initial))
        controller.reset(obs)
        period = control_period(controller)
        torque = np.zeros(9)
        for step in range(int(seconds * 1000)):
            if step % period == 0:
                torque = controller.compute(obs)
                if stop_when_done and controller.done:
                    break
            obs = estimator(platform.step(torque))
        return platform.true_cube_pose()
    finally:
        platform.close()


def test_slide_moves_an_off_centre_cube_towards_the_centre():
    initial = CubePose(np.array([0.09, 0.05, RESTING_HEIGHT]), cube.from_yaw(0.2))
    start = np.linalg.norm(initial.position[:2] - CENTRE[:2])
    final = run(SlideToCentre("cg", kinematics=KIN), initial, seconds=9.0)
    distance = np.linalg.norm(final.position[:2] - CENTRE[:2])
    assert distance < 0.3 * start, (start, distance, final.position)
    assert final.position[2] < RESTING_HEIGHT + 0.01          # slid, not lifted


def test_slide_to_a_target_beside_the_centre():
    """Where the chain (aligned.py) places a cube before a flip that would roll it far away."""
    initial = CubePose(np.array([-0.02, 0.01, RESTING_HEIGHT]), cube.from_yaw(0.4))
    target = np.array([0.03, -0.015])
    final = run(SlideToCentre("cg", kinematics=KIN, target=target), initial, seconds=9.0)
    assert np.linalg.norm(final.position[:2] - target) < 0.015, final.position


def test_yaw_rotation_turns_the_cube_by_the_requested_angle():
    initial = CubePose(np.array([0.0, 0.01, RESTING_HEIGHT]), cube.from_yaw(0.1))
    angle = np.deg2rad(30.0)
    controller = YawRotation(angle, "cg", kinematics=KIN)
    final = run(controller, initial, seconds=9.0)
    turned = np.angle(np.exp(1j * (cube.yaw(final.orientation) - cube.yaw(initial.orientation))))
    assert abs(turned - angle) < np.deg2rad(10.0), np.rad2deg(turned)
    assert controller.done


def test_flip_changes_the_upward_face():
    initial = CubePose(np.array([0.0, 0.0, RESTING_HEIGHT]), cube.from_yaw(0.15))
    controller = Flip(kinematics=KIN)
    final = run(controller, initial, seconds=7.0)
    assert controller.done
    assert cube.up_face(final.orientation) != cube.up_face(initial.orientation)
    assert cube.up_face(final.orientation) == controller.pushed_face   # the pushed face is on top
    assert cube.lowest_point(final) < 0.005                            # resting on the floor again


def test_bad_input():
    with pytest.raises(ValueError, match="yaw angle"):
        YawRotation(np.nan)
    with pytest.raises(ValueError, match="face"):
        Flip(face=7)
    with pytest.raises(ValueError, match="slide target"):
        SlideToCentre(kinematics=KIN, target=[np.nan, 0.0])
