"""message_checks: every rejection of a received message with its reason code and one-line text,
the bounds (torque refused beyond 100 x the limit, clipped below; targets 0.2 rad beyond the
range; measured states within the widened limits), the tracker's confidence of an object pose and
the stamp check (no ROS master)."""
import math

import genpy
import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState
from sim2real_checks import Rejected

from trifinger_controllers import message_checks as mc
from trifinger_controllers import ros_conversions as rc
from trifinger_controllers.msg import ObjectPose
from trifinger_controllers.types import (JOINT_LOWER, JOINT_UPPER, TORQUE_LIMIT, VELOCITY_LIMIT,
                                         CubePose, RobotState)

NAMES = rc.JOINT_NAMES
REST = np.array([0.0, 0.9, -1.7] * 3)


def rejection(parse, msg) -> Rejected:
    with pytest.raises(Rejected) as caught:
        parse(msg)
    assert "\n" not in str(caught.value)
    return caught.value


def command(effort, names=NAMES, **fields) -> JointState:
    msg = JointState(name=list(names), effort=list(effort))
    for key, value in fields.items():
        setattr(msg, key, value)
    return msg


@pytest.mark.parametrize("names, effort, reason, text", [
    (NAMES[:8], [0.0] * 8, "missing_joint", "finger_middle_to_lower_joint_240"),
    (NAMES[:8] + ("finger_joint_x",), [0.0] * 9, "missing_joint", "missing joint"),
    (NAMES + ("finger_joint_x",), [0.0] * 10, "unknown_joint", "finger_joint_x"),
    (NAMES[:8] + (NAMES[0],), [0.0] * 9, "malformed", "duplicate joint names"),
    (NAMES, [0.0] * 8, "malformed", "effort has 8 values"),
    (NAMES, [0.0] * 10, "malformed", "effort has 10 values"),
    (NAMES, [0.0] * 3 + [math.nan] + [0.0] * 5, "non_finite",
     "effort of finger_base_to_upper_joint_120"),
    (NAMES, [math.inf] + [0.0] * 8, "non_finite", "NaN/Inf"),
    (NAMES, [0.0] * 4 + [-1e308] + [0.0] * 4, "bounds", "beyond ±39.7"),
    (NAMES, [1e6] + [0.0] * 8, "bounds", "finger_base_to_upper_joint_0 effort"),
])
def test_bad_torque_commands_are_refused_with_their_reason(names, effort, reason, text):
    error = rejection(mc.torque_from_msg, command(effort, names))
    assert error.reason == reason
    assert text in str(error)


def test_plausible_torques_pass_to_be_clipped_and_absurd_ones_are_refused():
    # up to 100 x the limit a torque is a saturating control law: passed on (the simulator clips)
    assert mc.MAX_COMMAND_TORQUE == pytest.approx(100 * TORQUE_LIMIT)
    tau = np.full(9, 0.99 * mc.MAX_COMMAND_TORQUE)
    np.testing.assert_array_equal(mc.torque_from_msg(command(tau)), tau)
    tau[3] = -1.01 * mc.MAX_COMMAND_TORQUE
    assert rejection(mc.torque_from_msg, command(tau)).reason == "bounds"


def test_torque_command_in_any_joint_order_and_with_finite_positions_only():
    tau = np.linspace(-0.3, 0.3, 9)
    perm = np.random.default_rng(1).permutation(9)
    msg = command(tau[perm], [NAMES[i] for i in perm])
    np.testing.assert_array_equal(mc.torque_from_msg(msg), tau)
    msg.position = [0.0] * 9                     # given positions are ignored but must be finite
    np.testing.assert_array_equal(mc.torque_from_msg(msg), tau)
    msg.position[2] = math.nan
    assert rejection(mc.torque_from_msg, msg).reason == "non_finite"
    msg.position = [0.0] * 3
    assert rejection(mc.torque_from_msg, msg).reason == "malformed"


@pytest.mark.parametrize("value", [1e308, -1e308, math.inf, 1.57 + mc.POSITION_TARGET_MARGIN + 0.01])
def test_a_position_target_far_outside_the_joint_range_is_refused(value):
    q = REST.copy()
    q[4] = value     # finger 120's middle joint, range [0, 1.57]
    error = rejection(mc.position_from_msg, rc.position_command_msg(q, rc.to_time(0)))
    assert error.reason == ("non_finite" if math.isinf(value) else "bounds")
    if error.reason == "bounds":
        assert "finger_upper_to_middle_joint_120 position" in str(error) and "outside" in str(error)
    q[4] = 1.57 + 0.5 * mc.POSITION_TARGET_MARGIN             # a little beyond: accepted
    np.testing.assert_array_equal(
        mc.position_from_msg(rc.position_command_msg(q, rc.to_time(0))), q)


def test_a_position_command_needs_nine_targets():
    msg = rc.position_command_msg(REST, rc.to_time(0))
    msg.position = msg.position[:3]
    error = rejection(mc.position_from_msg, msg)
    assert error.reason == "malformed" and "position has 3 values" in str(error)


def measured(**changes) -> JointState:
    msg = rc.joint_state_msg(RobotState(7, 0.007, REST.copy(), np.zeros(9), np.zeros(9)))
    for key, value in changes.items():
        setattr(msg, key, value)
    return msg


def test_measured_state_bounds_are_the_limits_widened():
    q = JOINT_UPPER + 0.9 * mc.MEASURED_POSITION_MARGIN         # a little past the range: taken
    v = np.full(9, 1.9 * VELOCITY_LIMIT)
    tau = np.full(9, -1.9 * TORQUE_LIMIT)
    state = mc.robot_state_from_msg(measured(position=list(q), velocity=list(v), effort=list(tau)))
    assert state.step == 7
    np.testing.assert_array_equal(state.velocity, v)
    for field, value in (("position", JOINT_LOWER - 1.1 * mc.MEASURED_POSITION_MARGIN),
                         ("velocity", np.full(9, 2.1 * VELOCITY_LIMIT)),
                         ("effort", np.full(9, 2.1 * TORQUE_LIMIT))):
        error = rejection(mc.robot_state_from_msg, measured(**{field: list(value)}))
        assert error.reason == "bounds" and field in str(error)


@pytest.mark.parametrize("changes, reason", [
    ({"velocity": []}, "malformed"),
    ({"effort": [0.0] * 8}, "malformed"),
    ({"position": [math.nan] + [0.9] * 8}, "non_finite"),
    ({"name": list(NAMES[:8]) + ["finger_x"]}, "missing_joint"),
])
def test_measured_state_rejections(changes, reason):
    assert rejection(mc.robot_state_from_msg, measured(**changes)).reason == reason


def pose(position=(0.0, 0.0, 0.0325), orientation=(0.0, 0.0, 0.0, 1.0), frame="world"):
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = position
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = orientation
    return msg


@pytest.mark.parametrize("msg, reason", [
    (pose(orientation=(0.0, 0.0, 0.0, 0.5)), "quaternion"),
    (pose(orientation=(0.0, 0.0, 0.0, 0.0)), "quaternion"),
    (pose(orientation=(0.0, math.nan, 0.0, 1.0)), "non_finite"),
    (pose(position=(0.0, math.inf, 0.0)), "non_finite"),
    (pose(position=(0.0, 1e6, 0.0)), "bounds"),
    (pose(position=(0.4, 0.4, 0.0)), "bounds"),
    (pose(frame="camera60"), "frame"),
])
def test_bad_poses_are_refused_with_their_reason(msg, reason):
    assert rejection(mc.cube_pose_from_msg, msg).reason == reason


def object_pose(confidence, **pose_fields):
    base = pose(**pose_fields)
    return ObjectPose(header=base.header, pose=base.pose, confidence=confidence)


@pytest.mark.parametrize("msg, reason, text", [
    (object_pose(1.5), "confidence", "confidence 1.5 outside [0, 1]"),
    (object_pose(-1e-9), "confidence", "outside [0, 1]"),
    (object_pose(1e308), "confidence", "outside [0, 1]"),
    (object_pose(math.nan), "non_finite", "NaN/Inf in confidence"),
    (object_pose(-math.inf), "non_finite", "NaN/Inf in confidence"),
    # the pose checks come first and apply as to a PoseStamped
    (object_pose(0.9, orientation=(0.0, 0.0, 0.0, 0.5)), "quaternion", "orientation norm"),
    (object_pose(math.nan, position=(0.0, 1e6, 0.0)), "bounds", "farther than"),
    (object_pose(0.9, frame="camera60"), "frame", "camera60"),
])
def test_bad_object_poses_are_refused_with_their_reason(msg, reason, text):
    error = rejection(mc.object_pose_from_msg, msg)
    assert error.reason == reason
    assert text in str(error)


@pytest.mark.parametrize("confidence", [0.0, 0.5, 1.0])
def test_object_pose_confidences_in_the_unit_interval_pass(confidence):
    # 0 is a missed detection (the previous pose repeated), passed on for the filter to skip
    assert mc.object_pose_from_msg(object_pose(confidence)).confidence == confidence


def test_poses_in_the_object_box_pass_and_near_unit_quaternions_are_normalised():
    assert mc.cube_pose_from_msg(pose(position=(0.3, -0.3, 0.3), frame="")).position[0] == 0.3
    back = mc.cube_pose_from_msg(pose(orientation=(0.0, 0.0, 0.0, 1.05)))
    np.testing.assert_allclose(back.orientation, [0, 0, 0, 1.0])


def test_unit_quaternions_are_kept_bit_for_bit():
    q = np.array([0.1, -0.2, 0.3, 0.9])
    q = q / np.linalg.norm(q)
    back = mc.cube_pose_from_msg(rc.pose_msg(CubePose(np.zeros(3), q, 0.09)))
    np.testing.assert_array_equal(back.orientation, q)


def test_stamps_far_ahead_of_the_clock_are_refused():
    now = genpy.Time(100)
    mc.check_not_ahead(genpy.Time(100 + mc.MAX_STAMP_AHEAD - 1), now, "joint state")
    mc.check_not_ahead(genpy.Time(0), now, "joint state")            # the past is fine
    with pytest.raises(Rejected) as caught:
        mc.check_not_ahead(genpy.Time(4_000_000_000), now, "joint state")
    assert caught.value.reason == "stamp" and "joint state" in str(caught.value)
    mc.check_not_ahead(genpy.Time(4_000_000_000), genpy.Time(0), "joint state")  # no clock yet
