"""ros_conversions: topic names, stamps, the lock-step tag and message round trips through the
checks of message_checks (no ROS master; the ObjectPose message needs the built workspace); the
rejections are in test_message_checks."""
import math

import numpy as np
import pytest
from sim2real_checks import Rejected

from trifinger_controllers import message_checks as mc
from trifinger_controllers import ros_conversions as rc
from trifinger_controllers.types import JOINT_LOWER, JOINT_UPPER, CubePose, RobotState


def test_joint_names_are_the_urdf_joints_in_simulator_order():
    # trifinger_simulation orders the joints finger 0, 120, 240; upper, middle, lower
    import os
    import re

    import robot_properties_fingers
    urdf = os.path.join(os.path.dirname(robot_properties_fingers.__file__), "urdf", "pro",
                        "trifingerpro.urdf")
    with open(urdf) as f:
        revolute = re.findall(r'<joint name="([^"]+)" type="revolute"', f.read())
    assert list(rc.JOINT_NAMES) == revolute
    assert len(rc.JOINT_NAMES) == 9


def state(step=1234):
    rng = np.random.default_rng(step)
    return RobotState(step=step, time=step / 1000.0,
                      position=rng.uniform(JOINT_LOWER, JOINT_UPPER),
                      velocity=rng.normal(size=9), torque=rng.uniform(-0.3, 0.3, 9))


def test_joint_state_round_trip_and_step():
    s = state()
    back = mc.robot_state_from_msg(rc.joint_state_msg(s))
    assert back.step == 1234 and back.time == pytest.approx(1.234)
    for f in ("position", "velocity", "torque"):
        np.testing.assert_array_equal(getattr(back, f), getattr(s, f))


def test_joints_are_mapped_by_name():
    s = state()
    msg = rc.joint_state_msg(s)
    perm = np.random.default_rng(0).permutation(9)
    msg.name = [msg.name[i] for i in perm]
    msg.position = [msg.position[i] for i in perm]
    msg.velocity = [msg.velocity[i] for i in perm]
    msg.effort = [msg.effort[i] for i in perm]
    back = mc.robot_state_from_msg(msg)
    np.testing.assert_array_equal(back.position, s.position)
    np.testing.assert_array_equal(back.torque, s.torque)


def test_torque_and_position_commands_round_trip():
    tau = np.linspace(-0.3, 0.3, 9)
    msg = rc.torque_command_msg(tau, rc.to_time(0.005))
    np.testing.assert_array_equal(mc.torque_from_msg(msg), tau)
    assert rc.step_of(msg.header.stamp) == 5
    q = np.array([0.0, 0.9, -1.7] * 3) + np.linspace(-0.2, 0.2, 9)
    msg = rc.position_command_msg(q, rc.to_time(0))
    np.testing.assert_array_equal(mc.position_from_msg(msg), q)


def test_pose_round_trip_and_normalisation():
    q = np.array([0.1, -0.2, 0.3, 0.9])
    q /= np.linalg.norm(q)
    pose = CubePose(position=np.array([0.01, -0.02, 0.0325]), orientation=q, stamp=2.09)
    msg = rc.pose_msg(pose)
    assert msg.header.frame_id == rc.WORLD_FRAME
    back = mc.cube_pose_from_msg(msg)
    np.testing.assert_allclose(back.position, pose.position)
    np.testing.assert_allclose(back.orientation, q)
    assert back.stamp == pytest.approx(2.09)
    msg.pose.orientation.w += 2e-4       # within tolerance: normalised
    assert np.linalg.norm(mc.cube_pose_from_msg(msg).orientation) == pytest.approx(1.0)


def test_lock_step_tag():
    assert rc.parse_lock_step_tag("") is None
    assert rc.parse_lock_step_tag(rc.lock_step_tag(None)) == rc.NO_POSE
    assert rc.parse_lock_step_tag(rc.lock_step_tag(0.09)) == 90_000_000
    assert rc.parse_lock_step_tag(rc.lock_step_tag(0.0)) == 0
    with pytest.raises(Rejected, match="lock-step tag"):
        rc.parse_lock_step_tag("lock_step:abc")


def test_throttled_log_per_key_counts_suppressed(monkeypatch):
    lines = []
    now = [100.0]
    monkeypatch.setattr(rc.time, "monotonic", lambda: now[0])
    log = rc.ThrottledLog(lines.append, period=1.0)
    log("torque", "a")
    log("torque", "b")            # suppressed
    log("position", "c")          # another key: reported
    now[0] += 1.5
    log("torque", "d")
    assert lines == ["a", "c", "d (1 more since the last report)"]


def test_goal_from_param_forms():
    g = rc.goal_from_param([0.05, -0.02, 0.05])
    np.testing.assert_allclose(g.position, [0.05, -0.02, 0.05])
    np.testing.assert_allclose(g.orientation, [0, 0, 0, 1])
    s = math.sqrt(0.5)
    g = rc.goal_from_param({"position": [0.0, 0.0, 0.07], "orientation": [0, 0, s, s]})
    np.testing.assert_allclose(g.orientation, [0, 0, s, s])
    assert rc.goal_from_param([0.0, 0.0, 0.05, 0, 0, s, s]).position[2] == 0.05


@pytest.mark.parametrize("value, expected", [
    ([0.5, 0.0, 0.05], "outside the workspace"),
    ([0.0, 0.0, 0.3], "outside the workspace"),
    ([0.0, 0.0], "expected 3 or 7"),
    ("centre", "is not a pose"),
    ({"position": [0, 0, 0.05], "yaw": 1.0}, "unknown keys"),
    ([0.0, 0.0, 0.05, 0, 0, 0, 2.0], "not a unit quaternion"),
])
def test_bad_goal_params(value, expected):
    with pytest.raises(ValueError, match=expected) as info:
        rc.goal_from_param(value)
    assert str(info.value).startswith("~goal") and "\n" not in str(info.value)


def test_millisecond_stamps_give_the_simulators_floats():
    # the simulator's time of step k is k / 1000.0; over ROS a controller sees the same float
    for k in (0, 1, 3, 7, 999, 1001, 12345, 119999):
        assert rc.stamp_seconds(rc.to_time(k / 1000.0)) == k / 1000.0
        assert rc.step_of(rc.to_time(k / 1000.0)) == k
    assert rc.stamp_seconds(rc.to_time(0.0005)) == 0.0005


def test_unit_quaternions_are_kept_bit_for_bit():
    q = np.array([0.1, -0.2, 0.3, 0.9])
    q = q / np.linalg.norm(q)
    msg = rc.pose_msg(CubePose(np.zeros(3), q, 0.09))
    back = mc.cube_pose_from_msg(msg)
    np.testing.assert_array_equal(back.orientation, q)
    assert back.stamp == 0.09


def test_object_pose_round_trip_keeps_the_confidence_and_the_bits():
    q = np.array([0.1, -0.2, 0.3, 0.9])
    q = q / np.linalg.norm(q)
    for confidence in (0.0, 0.73, 1.0):     # 0: a missed detection, the previous pose repeated
        report = CubePose(np.array([0.01, -0.02, 0.0325]), q, 2.09, confidence)
        msg = rc.object_pose_msg(report)
        assert msg._type == "trifinger_controllers/ObjectPose"
        assert msg.header.frame_id == rc.WORLD_FRAME and msg.confidence == confidence
        back = mc.object_pose_from_msg(msg)
        np.testing.assert_array_equal(back.position, report.position)
        np.testing.assert_array_equal(back.orientation, q)
        assert back.stamp == 2.09 and back.confidence == confidence


def test_goal_pose_stays_a_pose_stamped_with_full_confidence():
    msg = rc.pose_msg(CubePose(np.array([0.0, 0.0, 0.08]), np.array([0.0, 0.0, 0.0, 1.0]),
                               confidence=0.2))
    assert msg._type == "geometry_msgs/PoseStamped"
    assert mc.cube_pose_from_msg(msg).confidence == 1.0
