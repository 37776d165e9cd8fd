"""Robot descriptions with plugin blocks: the shipped robots, their launch files and configs, and
every bad description (one-line DescriptionError naming the problem). No ROS master needed."""
import math
import os

import pytest
import yaml

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo.description import (DescriptionError, load_description,
                                                   parse_description)
from sim2real_checks import launch_params

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
URDF = os.path.join(PKG, "urdf")


def robot(plugin_body: str, joint_type: str = "revolute", extra: str = "") -> str:
    """A one-joint URDF with one plugin block holding ``plugin_body``."""
    return f"""<robot name="bot">
  <link name="base"/>
  <link name="arm"><inertial><mass value="0.2"/>
    <inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="{joint_type}"><parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/>
    <dynamics damping="0.01" friction="0.002"/></joint>
  {extra}
  <gazebo><plugin name="j1_actuator" filename="libcompliant_actuator_plugin.so">
    {plugin_body}
  </plugin></gazebo>
</robot>"""


GOOD = "<joint>j1</joint><actuator>qbmove</actuator><operationMode>3</operationMode>"


def test_joint_limits_are_read():
    joint = parse_description(robot(GOOD)).urdf_joint("j1")
    assert (joint.lower, joint.upper, joint.effort, joint.velocity) == (-3.0, 3.0, 10.0, 10.0)
    free = parse_description(robot(GOOD, joint_type="continuous")).urdf_joint("j1")
    assert (free.lower, free.upper, free.effort) == (None, None, 10.0)   # no range: continuous
    bare = parse_description(robot(GOOD).replace('effort="10" velocity="10"', 'effort="0"'))
    assert bare.urdf_joint("j1").effort is None and bare.urdf_joint("j1").velocity is None


def test_minimal_block_parses_with_defaults():
    d = parse_description(robot(GOOD))
    assert d.name == "bot" and d.compliant_names == ("j1",)
    spec = d.spec("j1")
    assert (spec.actuator_type, spec.mode, spec.namespace) == ("qbmove", 3, "bot")
    assert spec.topic_namespace == "/bot/j1"
    assert spec.actuator.type() == "qbmove" and spec.actuator.motors() == 2
    assert spec.params.mode == cag.Mode.EquilibriumPreset
    j = d.urdf_joint("j1")
    assert (j.type, j.damping, j.friction) == ("revolute", 0.01, 0.002)


def test_parameters_are_split_and_built_by_the_core():
    d = parse_description(robot(
        "<robotNamespace>/arm/</robotNamespace><joint>j1</joint><actuator>sea</actuator>"
        "<operationMode>6</operationMode><k>42</k><max_deflection>0.5</max_deflection>"
        "<pid_p>100</pid_p><motor1_inertia>0.01</motor1_inertia><!-- a comment -->"))
    spec = d.spec("j1")
    assert spec.namespace == "arm" and spec.mode == 6
    assert spec.actuator_params == {"k": 42.0, "max_deflection": 0.5}
    assert spec.joint_params == {"pid_p": 100.0, "motor1_inertia": 0.01}
    assert spec.actuator.stiffness(0.1, 0.0, 0.0) == pytest.approx(42.0)
    assert spec.actuator.max_deflection() == 0.5
    assert spec.params.motor_pid.p == 100.0 and spec.params.motor1.inertia == 0.01
    joint = spec.make_joint()
    joint.reset(0.0, 0.0)
    assert joint.mode() == cag.Mode.MotorPidEquilibrium


def test_other_plugins_and_continuous_joints():
    extra = '<gazebo><plugin name="ctl" filename="libgazebo_ros_control.so"><k>x</k></plugin></gazebo>'
    d = parse_description(robot(GOOD, joint_type="continuous", extra=extra))
    assert d.compliant_names == ("j1",)
    no_plugin = robot(GOOD).replace("libcompliant_actuator_plugin.so", "libother.so")
    assert parse_description(no_plugin).compliant == ()


BAD = [
    (robot(GOOD).replace("<robot", "<robo").replace("</robot>", "</robo>"), "expected <robot>"),
    ("<robot><link", "not well-formed XML"),
    (robot(GOOD).replace('name="bot"', ""), "no name attribute"),
    (robot("<actuator>sea</actuator><operationMode>3</operationMode>"), "missing required element <joint>"),
    (robot("<joint>j1</joint><operationMode>3</operationMode>"), "missing required element <actuator>"),
    (robot("<joint>j1</joint><actuator>sea</actuator>"), "missing required element <operationMode>"),
    (robot("<joint>j1</joint><actuator>sea</actuator><operationMode></operationMode>"),
     "missing required element <operationMode>"),
    (robot(GOOD.replace("qbmove", "magic")), "unknown actuator 'magic'"),
    (robot(GOOD.replace(">3<", ">7<")), "integer 0..6, got '7'"),
    (robot(GOOD.replace(">3<", ">3.5<")), "integer 0..6, got '3.5'"),
    (robot(GOOD.replace(">3<", ">three<")), "integer 0..6, got 'three'"),
    (robot(GOOD + "<k1>soft</k1>"), "parameter <k1> is not a number: 'soft'"),
    (robot(GOOD + "<k1/>"), "parameter <k1> is not a number: ''"),
    (robot(GOOD + "<k1>nan</k1>"), "<k1>nan</k1>: "),
    (robot(GOOD + "<k1>-1</k1>"), "<k1>-1</k1>: "),
    (robot(GOOD + "<stiffness>3</stiffness>"), "<stiffness>3</stiffness>: "),
    (robot(GOOD + "<k>3</k>"), "<k> is not a parameter of the qbmove model"),
    (robot(GOOD + "<pid_p>-5</pid_p>"), "<pid_p>-5</pid_p>: "),
    (robot(GOOD + "<k1>1</k1><k1>2</k1>"), "<k1> is given twice"),
    (robot(GOOD + "<k1><value>1</value></k1>"), "<k1> must hold a value"),
    (robot(GOOD.replace("<joint>j1", "<joint>j9")), "the URDF has no joint 'j9'"),
    (robot(GOOD, joint_type="prismatic"), "joint type is 'prismatic'"),
    (robot(GOOD, joint_type="fixed"), "joint type is 'fixed'"),
    (robot(GOOD + "<robotNamespace>my robot</robotNamespace>"), "not a valid ROS name"),
    (robot(GOOD).replace('damping="0.01"', 'damping="lots"'), "damping='lots' is not a number"),
    (robot(GOOD).replace('damping="0.01"', 'damping="-1"'), "damping must be a finite number >= 0"),
    (robot(GOOD).replace('effort="10"', 'effort="-1"'), "effort must be a finite number >= 0"),
    (robot(GOOD).replace('lower="-3"', 'lower="low"'), "lower='low' is not a number"),
    (robot(GOOD).replace('lower="-3"', 'lower="4"'), "lower 4 > upper 3"),
    (robot(GOOD, extra='<gazebo><plugin name="again" filename="libcompliant_actuator_plugin.so">'
                       + GOOD + "</plugin></gazebo>"), "more than one"),
]


@pytest.mark.parametrize("text, message", BAD, ids=[m for _, m in BAD])
def test_bad_descriptions_give_one_line_errors(text, message):
    with pytest.raises(DescriptionError) as info:
        parse_description(text, source="bad.urdf")
    text = str(info.value)
    assert message in text and "\n" not in text and text.startswith("bad.urdf: ")


def test_error_names_the_plugin_and_joint():
    with pytest.raises(DescriptionError, match=r"plugin 'j1_actuator' \(joint 'j1'\): .*k1"):
        parse_description(robot(GOOD + "<k1>-1</k1>"))


@pytest.mark.parametrize("actuator", ["sea", "qbmove", "bavs", "awas"])
def test_one_dof_for_every_actuator(actuator):
    d = load_description(os.path.join(URDF, "one_dof.urdf.xacro"), {"actuator": actuator})
    spec = d.spec("joint_1")
    assert (d.name, spec.actuator_type, spec.mode, spec.namespace) == ("one_dof", actuator, 3, "one_dof")
    assert spec.actuator_params == {} and d.urdf_joint("joint_1").damping == 0.065


def test_one_dof_xacro_args_reach_the_block():
    d = load_description(os.path.join(URDF, "one_dof.urdf.xacro"),
                         {"actuator": "sea", "mode": 0, "k": 200, "namespace": "fig8"})
    spec = d.spec("joint_1")
    assert (spec.mode, spec.namespace, spec.actuator_params) == (0, "fig8", {"k": 200.0})
    with pytest.raises(DescriptionError, match="<k1> is not a parameter of the sea model"):
        load_description(os.path.join(URDF, "one_dof.urdf.xacro"), {"actuator": "sea", "k1": 1})


def test_two_dof_carries_the_identified_parameters():
    d = load_description(os.path.join(URDF, "two_dof_qbmove.urdf.xacro"))
    assert d.compliant_names == ("joint_1", "joint_2")
    assert d.spec("joint_1").actuator_params == {"k1": 6.257, "a1": 0.01038, "k2": 3.9, "a2": 0.08918}
    assert d.spec("joint_2").actuator_params == {"k1": 3.383, "a1": 0.1015, "k2": 7.011, "a2": 0.05944}
    assert {d.spec(j).mode for j in d.compliant_names} == {6}
    assert load_description(os.path.join(URDF, "two_dof_qbmove.urdf.xacro"),
                            {"mode": 3}).spec("joint_2").mode == 3


def test_two_dof_holds_itself_without_saturating():
    """The sizing argument of two_dof_qbmove.urdf.xacro, checked with the core's model: the arm
    stretched horizontally needs spring deflections inside max_deflection at preset 0.2."""
    d = load_description(os.path.join(URDF, "two_dof_qbmove.urdf.xacro"))
    gravity = {"joint_1": 9.81 * (0.05 * 0.05 + 0.05 * 0.15), "joint_2": 9.81 * 0.05 * 0.05}
    for name, load in gravity.items():
        actuator = d.spec(name).actuator
        refs = actuator.references(0.0, 0.2)
        # link held at q = x below the equilibrium 0: spring torque must reach +load
        lo, hi = -0.6, 0.0
        assert actuator.torques(lo, refs.theta1, refs.theta2).link() > load
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            torque = actuator.torques(mid, refs.theta1, refs.theta2).link()
            lo, hi = (mid, hi) if torque > load else (lo, mid)
        assert max(abs(lo - refs.theta1), abs(lo - refs.theta2)) < 0.8 * actuator.max_deflection()


def test_five_dof_mixes_actuator_types():
    d = load_description(os.path.join(URDF, "five_dof_arm.urdf.xacro"))
    assert [d.spec(j).actuator_type for j in d.compliant_names] == \
        ["qbmove", "sea", "qbmove", "bavs", "qbmove"]
    assert {d.spec(j).mode for j in d.compliant_names} == {6}


@pytest.mark.parametrize("name", ["two_dof_qbmove", "five_dof_arm"])
def test_manager_configs_match_the_descriptions(name):
    with open(os.path.join(PKG, "config", f"{name}.yaml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    d = load_description(os.path.join(URDF, f"{name}.urdf.xacro"))
    assert config["robot"] == d.spec(d.compliant_names[0]).namespace == name
    assert [(j["name"], j["mode"]) for j in config["joints"]] == \
        [(s.joint, s.mode) for s in d.compliant]


@pytest.mark.parametrize("launch, args, robot_name, joints", [
    ("one_dof.launch", ["actuator:=qbmove"], "one_dof", ["joint_1"]),
    ("one_dof.launch", ["actuator:=awas", "mode:=6", "xacro_args:=ks:=20"], "one_dof", ["joint_1"]),
    ("two_dof_qbmove.launch", ["manager:=true"], "two_dof_qbmove", ["joint_1", "joint_2"]),
    ("five_dof_arm.launch", [], "five_dof_arm", [f"joint_{i}" for i in range(1, 6)]),
])
def test_launch_files_give_a_valid_description(launch, args, robot_name, joints):
    """roslaunch --dump-params runs the xacro command of each launch file (no master needed)."""
    params = launch_params(launch, *args, package="compliant_actuator_gazebo")
    d = parse_description(params["/robot_description"])
    assert d.name == robot_name and list(d.compliant_names) == joints
    for joint, inputs in params.get("/compliant_sim/initial_inputs", {}).items():
        assert joint in joints and all(math.isfinite(v) for v in inputs.values())
    assert params["/compliant_sim/physics_rate"] == 1000


def test_load_errors_are_one_line(tmp_path):
    with pytest.raises(DescriptionError, match="cannot read"):
        load_description(str(tmp_path / "missing.urdf"))
    bad = tmp_path / "bad.urdf.xacro"
    bad.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                   '<link name="${undefined_property}"/></robot>')
    with pytest.raises(DescriptionError, match="xacro failed") as info:
        load_description(str(bad))
    assert "\n" not in str(info.value)
    with pytest.raises(DescriptionError, match="xacro arguments given for a plain URDF"):
        load_description(str(tmp_path / "x.urdf"), {"a": 1})
