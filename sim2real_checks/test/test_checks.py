"""The shared checks: each message type's rejections, the guard's per-reason throttling and
counters, the publish-side check, and the hostile variants the fuzz rostests send."""
import math

import numpy as np
import pytest
from geometry_msgs.msg import Pose, PoseStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from sim2real_checks.errors import Rejected
from sim2real_checks.finite import non_finite_fields, require_finite
from sim2real_checks.fuzz import hostile_cases
from sim2real_checks.guard import Guard
from sim2real_checks.joint_state import (JointBounds, JointStateLayout, JointStateSpec,
                                        check_joint_state)
from sim2real_checks.pose import check_pose
from sim2real_checks.scalar import check_scalar
from sim2real_checks.stamps import check_not_ahead

SPEC = JointStateSpec(("a", "b"), bounds=JointBounds.from_limits([-1, -2], [1, 2], [2, 3], [10, 20]))


def state(**fields) -> JointState:
    msg = JointState(name=["b", "a"], position=[0.5, -0.5], velocity=[], effort=[])
    for key, value in fields.items():
        setattr(msg, key, value)
    return msg


def reason(msg, spec=SPEC) -> str:
    with pytest.raises(Rejected) as caught:
        check_joint_state(msg, spec)
    return caught.value.reason


def test_joint_state_reorders_and_accepts_absent_optional_fields():
    values = check_joint_state(state(velocity=[1.0, -1.0]), SPEC)
    assert values.position.tolist() == [-0.5, 0.5]
    assert values.velocity.tolist() == [-1.0, 1.0]
    assert values.effort.size == 0


@pytest.mark.parametrize("fields, expected", [
    ({"name": ["a", "a"]}, "malformed"),
    ({"name": ["a", "c"]}, "missing_joint"),
    ({"name": ["a", "b", "c"], "position": [0, 0, 0]}, "unknown_joint"),
    ({"position": [0.0]}, "malformed"),
    ({"position": []}, "malformed"),
    ({"velocity": [0.0, 0.0, 0.0]}, "malformed"),
    ({"position": [math.nan, 0.0]}, "non_finite"),
    ({"effort": [0.0, math.inf]}, "non_finite"),
    ({"position": [0.0, 1.5]}, "bounds"),
    ({"velocity": [1e6, 0.0]}, "bounds"),
    ({"effort": [0.0, -1e308]}, "bounds"),
])
def test_joint_state_rejections(fields, expected):
    assert reason(state(**fields)) == expected


def test_an_effort_only_command_needs_no_positions():
    torques = JointStateSpec(("a", "b"), required=("effort",), bounds=SPEC.bounds)
    values = check_joint_state(state(position=[], effort=[1.0, -2.0]), torques)
    assert values.position.size == 0 and values.effort.tolist() == [-2.0, 1.0]
    assert reason(state(position=[], effort=[1.0, -50.0]), torques) == "bounds"
    assert reason(state(position=[], effort=[]), torques) == "malformed"


def test_measured_state_spec_widens_the_limits():
    measured = JointStateSpec(("a", "b"), bounds=JointBounds.from_limits(
        [-1, -2], [1, 2], [2, 3], [10, 20], position_margin=0.2, rate_factor=2.0))
    check_joint_state(state(position=[0.5, -1.1], velocity=[5.0, 3.5]), measured)
    assert reason(state(position=[0.5, -1.3]), measured) == "bounds"


def test_layout_ignores_extra_joints_by_default_and_maps_both_ways():
    layout = JointStateLayout(["a", "b"])
    q, qd, tau = layout.arrays(["f", "b", "a"], [9, 2, 1], [0, 0, 0], [0, 5, 4])
    assert q.tolist() == [1, 2] and tau.tolist() == [4, 5]
    out = np.zeros(6)
    layout.fill(["a", "b"], [1, 2], [3, 4], [5, 6], out)
    assert layout.message(JointState().header, out).velocity == [3.0, 4.0]


def _fill_outcome(layout: JointStateLayout, msg: JointState):
    out = np.full(3 * layout.dof, -7.0)
    try:
        layout.fill(msg.name, msg.position, msg.velocity, msg.effort, out)
    except Rejected as exc:
        assert out.tolist() == [-7.0] * out.size          # untouched on a rejection
        return exc.reason, str(exc)
    return "ok", out.tolist()


@pytest.mark.parametrize("names", [["b", "a"], ["a", "b"], ["c", "b", "a"]])
def test_fill_checks_a_known_layout_in_one_pass_exactly_as_the_detailed_check(names):
    """fill's hot path (names seen before) accepts and rejects every hostile variant exactly as
    the first, detailed pass does, with the same reason and message, and writes the same state."""
    good = JointState(name=names, position=[0.5, -0.5, 0.1][:len(names)],
                      velocity=[1.0, -1.0, 0.0][:len(names)], effort=[2.0, -3.0, 9.0][:len(names)])
    cases = [good] + [case.message for case in hostile_cases(good)]
    cases += [JointState(name=names, position=[1.0] * len(names), velocity=[2.5] * len(names),
                         effort=[0.0] * len(names)),                  # velocity bound of b only
              JointState(name=names, position=["x"] * len(names), velocity=good.velocity,
                         effort=good.effort)]                          # not numbers
    hot = JointStateLayout(("a", "b"), SPEC.bounds)
    assert _fill_outcome(hot, good)[0] == "ok"                         # caches the layout
    for msg in cases:
        first = JointStateLayout(("a", "b"), SPEC.bounds)             # nothing cached: detailed
        try:
            expected = _fill_outcome(first, msg)
        except (TypeError, ValueError) as exc:                         # not numbers
            with pytest.raises(type(exc)):
                _fill_outcome(hot, msg)
            continue
        assert _fill_outcome(hot, msg) == expected, msg


def test_pose_scalar_and_finite_checks():
    pose = PoseStamped()
    pose.pose.orientation.w = 1.02
    assert check_pose(pose, 1.0).quaternion_xyzw[3] == pytest.approx(1.0)
    # a corner of the box inscribed in the workspace sphere passes whatever the rounding of the
    # norm (NumPy 2.4 gives 0.5196152422706632 for (0.3, -0.3, 0.3), sqrt(3) * 0.3 is ...631)
    pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = 0.3, -0.3, 0.3
    assert check_pose(pose, 0.3 * math.sqrt(3.0)).position[0] == 0.3
    with pytest.raises(Rejected, match="farther"):
        check_pose(pose, 0.3 * math.sqrt(3.0) - 1e-6)
    pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = 2.0, 0.0, 0.0
    with pytest.raises(Rejected, match="farther"):
        check_pose(pose, 1.0)
    pose.pose.position.x, pose.pose.orientation.w = 0.0, 0.0
    with pytest.raises(Rejected) as caught:
        check_pose(pose.pose, 1.0)
    assert caught.value.reason == "quaternion"
    assert check_scalar(0.5, -1, 1) == 0.5
    for value, expected in ((math.nan, "non_finite"), (1e308, "bounds")):
        with pytest.raises(Rejected) as caught:
            check_scalar(value, -1, 1)
        assert caught.value.reason == expected
    trajectory = JointTrajectory(points=[JointTrajectoryPoint(positions=[0.0, math.nan])])
    assert non_finite_fields(trajectory) == ["points[0].positions[1]"]
    with pytest.raises(Rejected, match="beyond"):
        require_finite(Float64(data=1e9), bound=1e6)


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_guard_logs_one_line_per_topic_and_reason_and_period_whatever_the_text():
    lines, clock = [], FakeClock()
    guard = Guard("/node", period=1.0, log=lines.append, clock=clock)
    for k in range(1000):                      # 1 kHz of alternating bad input for 1 s
        clock.t = k * 0.001
        guard.reject("/in", Rejected("non_finite", f"NaN in position[{k % 7}]"))
        guard.reject("/in", Rejected("bounds", f"velocity {k} beyond ±2"))
        guard.reject("/in", ValueError(f"odd text {k}"))
    assert len(lines) == 3
    assert guard.counts[("/in", "non_finite")] == 1000
    clock.t = 1.0
    guard.reject("/in", Rejected("bounds", "again"))
    assert len(lines) == 4 and "(+999 more since the last line)" in lines[-1]
    status = guard.status()
    assert status.level == status.WARN
    assert {kv.key: kv.value for kv in status.values}["/in [bounds]"] == "1001"
    assert guard.total() == 3001


class FakePublisher:
    resolved_name = "/out"

    def __init__(self) -> None:
        self.sent = []

    def publish(self, msg) -> None:
        self.sent.append(msg)


def test_guard_withholds_non_finite_outputs():
    lines, publisher = [], FakePublisher()
    guard = Guard("/node", log=lines.append)
    assert guard.publish(publisher, JointState(position=[1.0]))
    assert not guard.publish(publisher, JointState(position=[math.nan]))
    assert len(publisher.sent) == 1
    assert guard.counts[("/out", "non_finite_output")] == 1
    assert "not published [non_finite_output]" in lines[0]
    # with the values the message was built from: one vector check, the same verdict and line
    assert guard.publish(publisher, JointState(position=[1.0]), np.array([1.0]))
    assert not guard.publish(publisher, JointState(position=[math.inf]), np.array([math.inf]))
    assert len(publisher.sent) == 2 and guard.counts[("/out", "non_finite_output")] == 2


def test_hostile_cases_cover_every_field_and_leave_the_good_message_alone():
    good = state(velocity=[0.0, 0.0], effort=[1.0, 1.0])
    names = [c.name for c in hostile_cases(good)]
    for field in ("position", "velocity", "effort"):
        assert f"{field}=nan" in names and f"{field}=1e+308" in names
        assert f"{field} one short" in names and f"{field} one too many" in names
    assert "name unknown" in names and "name repeated" in names
    assert "header.stamp far future" in names
    assert good.position == [0.5, -0.5] and good.name == ["b", "a"]
    rejected = 0
    for case in hostile_cases(good):
        try:
            check_joint_state(case.message, SPEC)
        except Rejected:
            rejected += 1
    assert rejected >= len(names) - 3          # the stamp and the 'empty' optional fields pass
    trajectory = JointTrajectory(joint_names=["a"], points=[JointTrajectoryPoint(positions=[0.0])])
    assert "points[0].positions=-inf" in [c.name for c in hostile_cases(trajectory)]
    assert np.isnan(hostile_cases(Pose())[0].message.position.x)


def test_a_stamp_far_ahead_of_the_clock_is_refused_once_there_is_a_clock():
    check_not_ahead(105.0, 100.0, 10.0)
    check_not_ahead(4e9, 0.0, 10.0)                 # no clock yet: nothing to compare with
    with pytest.raises(Rejected, match="ahead of the clock") as caught:
        check_not_ahead(4e9, 100.0, 10.0, "joint state")
    assert caught.value.reason == "stamp"
