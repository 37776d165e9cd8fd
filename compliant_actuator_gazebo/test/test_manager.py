"""The Plugin Manager's logic (paper 003 §3.2) without ROS: layouts, fan-out, aggregation."""
import glob
import math
import os
import re
import textwrap

import pytest
import yaml
from sim2real_checks import Rejected

from compliant_actuator_gazebo.bounds import JointBounds, Range
from compliant_actuator_gazebo.manager import (MODE_INPUTS, ArrayRejected, JointSample,
                                               LayoutError, RobotLayout, StateAggregator,
                                               check_array, fan_out)
from compliant_actuator_gazebo.topics import INPUT_NAMES

ALL_MODES = {"robot": "bot", "joints": [{"name": f"j{m}", "mode": m} for m in range(7)]}


def layout(data=None) -> RobotLayout:
    return RobotLayout.from_dict(ALL_MODES if data is None else data)


def test_layout_from_yaml(tmp_path):
    path = tmp_path / "arm.yaml"
    path.write_text("robot: /arm\njoints:\n  - {name: joint_1, mode: 3}\n"
                    "  - {name: joint_2, mode: 5}\n")
    arm = RobotLayout.from_yaml(str(path))
    assert arm.robot == "arm"                       # a leading slash is tolerated
    assert arm.names == ("joint_1", "joint_2")
    assert [j.mode for j in arm.joints] == [3, 5]
    assert arm.robot_topic("robot_state") == "/arm/robot_state"
    assert arm.joint_topic("joint_2", "link_state") == "/arm/joint_2/link_state"


@pytest.mark.parametrize("data, message", [
    ([1, 2], "expected a mapping"),
    ({"joints": [{"name": "a", "mode": 0}]}, "missing key 'robot'"),
    ({"robot": "r"}, "missing key 'joints'"),
    ({"robot": "r", "joints": []}, "non-empty list"),
    ({"robot": "r", "joints": {"a": 0}}, "non-empty list"),
    ({"robot": "r", "joints": [{"name": "a", "mode": 0}], "rate": 3}, "unknown key(s) rate"),
    ({"robot": "a b", "joints": [{"name": "a", "mode": 0}]}, "'robot' must be a ROS name"),
    ({"robot": 3, "joints": [{"name": "a", "mode": 0}]}, "'robot' must be a ROS name"),
    ({"robot": "r", "joints": ["a"]}, "joints[0] must be a mapping"),
    ({"robot": "r", "joints": [{"mode": 0}]}, "joints[0]: missing key 'name'"),
    ({"robot": "r", "joints": [{"name": "a"}]}, "joints[0]: missing key 'mode'"),
    ({"robot": "r", "joints": [{"name": "a", "mode": 1, "mdoe": 2}]}, "unknown key(s) mdoe"),
    ({"robot": "r", "joints": [{"name": "a/b", "mode": 1}]}, "'name' must be a joint name"),
    ({"robot": "r", "joints": [{"name": "a", "mode": 7}]}, "'mode' must be an integer 0..6"),
    ({"robot": "r", "joints": [{"name": "a", "mode": -1}]}, "'mode' must be an integer 0..6"),
    ({"robot": "r", "joints": [{"name": "a", "mode": 2.0}]}, "'mode' must be an integer 0..6"),
    ({"robot": "r", "joints": [{"name": "a", "mode": "3"}]}, "'mode' must be an integer 0..6"),
    ({"robot": "r", "joints": [{"name": "a", "mode": True}]}, "'mode' must be an integer 0..6"),
    ({"robot": "r", "joints": [{"name": "a", "mode": 0}, {"name": "a", "mode": 3}]},
     "joint 'a' is listed twice"),
])
def test_bad_layouts_give_one_line(data, message):
    with pytest.raises(LayoutError) as err:
        RobotLayout.from_dict(data, source="test.yaml")
    text = str(err.value)
    assert message in text and text.startswith("test.yaml") and "\n" not in text


def test_bad_yaml_files(tmp_path):
    with pytest.raises(LayoutError, match="manager config not found"):
        RobotLayout.from_yaml(str(tmp_path / "missing.yaml"))
    corrupt = tmp_path / "corrupt.yaml"
    corrupt.write_text("robot: arm\njoints: [ {name: a, mode: 0\n")
    with pytest.raises(LayoutError, match="is not valid YAML") as err:
        RobotLayout.from_yaml(str(corrupt))
    assert "\n" not in str(err.value)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00robot")
    with pytest.raises(LayoutError, match="manager config"):
        RobotLayout.from_yaml(str(binary))
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(LayoutError, match="expected a mapping"):
        RobotLayout.from_yaml(str(empty))
    with pytest.raises(LayoutError, match="manager config"):
        RobotLayout.from_yaml(str(tmp_path))         # a directory


def test_fan_out_follows_each_mode():
    """§3.2: modes 0/1 take array 1 only (torque / link position); 2/5 the motor references;
    3/6 equilibrium and preset; 4 the motor torques."""
    robot = layout()
    r1 = [0.1 * (m + 1) for m in range(7)]
    r2 = [-0.1 * (m + 1) for m in range(7)]
    got = dict(fan_out(robot, r1, r2))
    expected = {
        "/bot/j0/torque_command": r1[0],
        "/bot/j1/link_command": r1[1],
        "/bot/j2/reference_1": r1[2], "/bot/j2/reference_2": r2[2],
        "/bot/j3/equilibrium_position": r1[3], "/bot/j3/stiffness_preset": r2[3],
        "/bot/j4/motor_1_command": r1[4], "/bot/j4/motor_2_command": r2[4],
        "/bot/j5/reference_1": r1[5], "/bot/j5/reference_2": r2[5],
        "/bot/j6/equilibrium_position": r1[6], "/bot/j6/stiffness_preset": r2[6],
    }
    assert got == expected
    assert len(fan_out(robot, r1, r2)) == len(expected)      # no topic twice
    # each array alone (the node forwards them independently)
    assert dict(fan_out(robot, reference_1=r1)) == {k: v for k, v in expected.items() if v > 0}
    assert dict(fan_out(robot, reference_2=r2)) == {k: v for k, v in expected.items() if v < 0}
    assert fan_out(robot) == []
    # the documented table is the one used
    for m, (first, second) in MODE_INPUTS.items():
        assert robot.input_topics("reference_1")[m] == f"/bot/j{m}/{first}"
        assert robot.input_topics("reference_2")[m] == (None if second is None
                                                        else f"/bot/j{m}/{second}")


def test_fan_out_keeps_array_order_not_mode_order():
    robot = layout({"robot": "arm", "joints": [{"name": "b", "mode": 3}, {"name": "a", "mode": 3}]})
    assert fan_out(robot, [1.0, 2.0]) == [("/arm/b/equilibrium_position", 1.0),
                                          ("/arm/a/equilibrium_position", 2.0)]


@pytest.mark.parametrize("r1, r2, message, reason", [
    ([0.0] * 6, None, "reference_1 has 6 values, robot 'bot' has 7 joints", "size"),
    ([0.0] * 8, None, "reference_1 has 8 values", "size"),
    ([], None, "reference_1 has 0 values", "size"),
    ([0.0] * 7, [0.0] * 3, "reference_2 has 3 values", "size"),
    ([0.0] * 3 + [math.nan] + [0.0] * 3, None, "reference_1[3] (j3) is nan", "non_finite"),
    ([0.0] * 7, [math.inf] + [0.0] * 6, "reference_2[0] (j0) is inf", "non_finite"),
    ([0.0] * 7, [0.0] * 6 + [-math.inf], "reference_2[6] (j6) is -inf", "non_finite"),
    (["x"] + [0.0] * 6, None, "reference_1[0] (j0) is not a number", "type"),
    (5.0, None, "reference_1 is not an array", "type"),
])
def test_bad_arrays_are_rejected_whole(r1, r2, message, reason):
    with pytest.raises(ArrayRejected) as err:
        fan_out(layout(), r1, r2)
    assert message in str(err.value)
    assert isinstance(err.value, Rejected) and err.value.reason == reason


def test_arrays_are_checked_against_the_bounds_of_the_inputs_they_feed():
    """Element j of reference_1 goes to joint j's first input of its mode, of reference_2 to its
    second (none in modes 0 and 1: only finiteness there)."""
    robot = layout({"robot": "arm", "joints": [{"name": "a", "mode": 0}, {"name": "b", "mode": 6}]})
    bounds = {"a": fake_bounds(torque_command=Range(-5.0, 5.0)),
              "b": fake_bounds(equilibrium_position=Range(-1.0, 1.0),
                               stiffness_preset=Range(0.0, 0.5))}
    assert fan_out(robot, [4.0, 0.5], [123.0, 0.25], bounds=bounds) == [
        ("/arm/a/torque_command", 4.0), ("/arm/b/equilibrium_position", 0.5),
        ("/arm/b/stiffness_preset", 0.25)]
    for r1, r2, message in (([6.0, 0.5], None, "reference_1[0] (a torque_command) 6 outside"),
                            ([0.0, 1.5], None, "(b equilibrium_position) 1.5 outside [-1, 1]"),
                            (None, [0.0, -0.1], "reference_2[1] (b stiffness_preset) -0.1")):
        with pytest.raises(ArrayRejected, match=re.escape(message)) as err:
            fan_out(robot, r1, r2, bounds=bounds)
        assert err.value.reason == "bounds"
    assert fan_out(robot, [6.0, 1.5]) == [("/arm/a/torque_command", 6.0),   # no bounds: as is
                                          ("/arm/b/equilibrium_position", 1.5)]


def fake_bounds(**inputs):
    """JointBounds with the given input ranges (the rest unbounded)."""
    wide = Range(-math.inf, math.inf)
    return JointBounds("j", {name: inputs.get(name, wide) for name in INPUT_NAMES}, wide, wide,
                       math.inf, math.inf, (wide, wide), (None, None), (math.inf, math.inf))


def test_check_array_returns_floats():
    assert check_array(layout(), "reference_1", range(7)) == [float(i) for i in range(7)]
    with pytest.raises(ValueError, match="unknown array"):
        layout().input_topics("reference_3")


def sample(stamp, value, stiffness=0.0, deflection=0.0):
    return JointSample(stamp, value, 10 * value, 100 * value, stiffness, deflection)


def test_aggregation_waits_for_every_joint_and_uses_the_newest_stamp():
    robot = layout({"robot": "arm", "joints": [{"name": "a", "mode": 3}, {"name": "b", "mode": 5}]})
    agg = StateAggregator(robot)
    assert agg.arrays("robot_state") is None
    agg.update("link_state", "b", sample(2_000_000_000, 0.2, stiffness=5.0, deflection=0.01))
    assert agg.arrays("robot_state") is None and agg.arrays("robot_stiffness") is None
    agg.update("link_state", "a", sample(1_500_000_000, 0.1, stiffness=4.0, deflection=-0.02))
    state = agg.arrays("robot_state")
    assert state.name == ("a", "b")                   # layout order, not arrival order
    assert state.stamp == 2_000_000_000               # newest per-joint stamp
    assert state.position == (0.1, 0.2)
    assert state.velocity == (1.0, 2.0)
    assert state.effort == (10.0, 20.0)
    stiff = agg.arrays("robot_stiffness")
    assert stiff.stiffness == (4.0, 5.0) and stiff.deflection == (-0.02, 0.01)
    assert stiff.stamp == 2_000_000_000
    # a newer sample of one joint: its value, the others' as they were, the newest stamp
    agg.update("link_state", "a", sample(3_000_000_000, 0.3))
    state = agg.arrays("robot_state")
    assert state.position == (0.3, 0.2) and state.stamp == 3_000_000_000
    # motor streams are independent
    agg.update("motor_1_state", "a", sample(1, 1.0))
    assert agg.arrays("motor_1_state") is None
    agg.update("motor_1_state", "b", sample(2, 2.0))
    agg.update("motor_2_state", "a", sample(3, 3.0))
    assert agg.arrays("motor_1_state").position == (1.0, 2.0)
    assert agg.arrays("motor_1_state").stamp == 2
    assert agg.arrays("motor_2_state") is None
    agg.update("motor_2_state", "b", sample(4, 4.0))
    assert agg.arrays("motor_2_state").effort == (300.0, 400.0)


def test_aggregation_rejects_unknown_names():
    agg = StateAggregator(layout())
    with pytest.raises(ValueError, match="unknown stream"):
        agg.update("torque_el1_state", "j0", sample(0, 0.0))
    with pytest.raises(ValueError, match="not in the layout"):
        agg.update("link_state", "elbow", sample(0, 0.0))


def test_aggregation_keeps_non_finite_samples_out_of_every_array():
    agg = StateAggregator(layout())
    for joint in agg.layout.names:
        agg.update("link_state", joint, sample(1, 0.5))
    before = agg.arrays("robot_state")
    with pytest.raises(ValueError, match="NaN/Inf in position"):
        agg.update("link_state", agg.layout.names[0], sample(2, float("nan")))
    bad = JointSample(3, 0.1, 0.0, 0.0, stiffness=float("inf"))
    with pytest.raises(ValueError, match="stiffness"):
        agg.update("link_state", agg.layout.names[0], bad)
    assert agg.arrays("robot_state") == before
    assert all(math.isfinite(v) for v in agg.arrays("robot_stiffness").stiffness)


def test_layout_yaml_roundtrip_of_the_documented_example(tmp_path):
    """The module docstring's example is a valid layout."""
    import compliant_actuator_gazebo.manager as manager
    doc = manager.__doc__
    start = doc.rindex("\n", 0, doc.index("robot: arm")) + 1
    example = textwrap.dedent(doc[start:doc.index("Fan-out")])
    path = tmp_path / "doc.yaml"
    path.write_text(example)
    assert yaml.safe_load(path.read_text())["robot"] == "arm"
    assert RobotLayout.from_yaml(str(path)).names == ("joint_1", "joint_2")


def test_the_launch_files_manager_configs_load():
    """Every manager_config default of launch/*.launch is a valid layout."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    configs = []
    for launch in glob.glob(os.path.join(package, "launch", "*.launch")):
        with open(launch, encoding="utf-8") as f:
            configs += re.findall(r'name="manager_config"\s+default="\$\(find '
                                  r'compliant_actuator_gazebo\)/([^"]+)"', f.read())
    # gazebo.launch names its model's layout: config/$(arg model).yaml, for the two arms
    configs = [c.replace("$(arg model)", model) if "$(arg model)" in c else c
               for c in configs for model in (("two_dof_qbmove", "five_dof_arm") if "$(arg model)" in c else ("",))]
    for config in configs:
        layout_ = RobotLayout.from_yaml(os.path.join(package, config))
        assert layout_.joints and all(0 <= j.mode <= 6 for j in layout_.joints)
