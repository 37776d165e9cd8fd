"""The compliant joints' physical bounds (bounds.py) from the example robots' descriptions, and
the input checks built on them (checks.py): what each input and state message accepts, and the
reason code of each rejection."""
import math
import os

import genpy
import pytest
from sim2real_checks import Rejected, hostile_cases

from compliant_actuator_gazebo.bounds import (CONTINUOUS_RANGE, POSITION_MARGIN, RATE_FACTOR,
                                              STATE_LIMIT, joint_bounds, robot_bounds)
from compliant_actuator_gazebo.checks import check_input, check_state
from compliant_actuator_gazebo.description import load_description, parse_description
from compliant_actuator_gazebo.msg import LinkState, MotorState

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM = load_description(os.path.join(PACKAGE, "urdf", "five_dof_arm.urdf.xacro"))
BOUNDS = robot_bounds(ARM)


def reason(check, *args) -> str:
    with pytest.raises(Rejected) as caught:
        check(*args)
    return caught.value.reason


def test_the_arms_bounds_come_from_its_urdf_limits_and_actuator_models():
    qb = BOUNDS["joint_1"]                    # qbMove: range ±3.1, max deflection 0.8
    assert (qb.inputs["link_command"].low, qb.inputs["link_command"].high) == (-3.1, 3.1)
    assert qb.inputs["equilibrium_position"] == qb.inputs["link_command"]
    assert qb.inputs["reference_1"].high == pytest.approx(3.1 + 0.8)
    assert qb.inputs["torque_command"].high == 100.0 == qb.inputs["external_torque"].high
    assert qb.inputs["motor_1_command"].high == 6.0
    assert (qb.preset_domain.low, qb.preset_domain.high) == (0.0, 0.8)
    assert (qb.inputs["stiffness_preset"].low, qb.inputs["stiffness_preset"].high) == \
        pytest.approx((-0.8, 1.6))                # beyond the domain: clamped; further: refused
    assert qb.position.high == pytest.approx(3.1 + POSITION_MARGIN)
    assert qb.velocity == RATE_FACTOR * 100.0 and qb.effort == RATE_FACTOR * 100.0
    assert qb.motor_velocity == (RATE_FACTOR * 6.0, RATE_FACTOR * 6.0)      # mode 6: dynamic
    assert BOUNDS["joint_4"].preset_domain.high == pytest.approx(0.27)      # BAVS
    sea = BOUNDS["joint_2"]                   # a SEA has no preset: the others' convention
    assert (sea.preset_domain.low, sea.preset_domain.high) == (0.0, 0.8)


def test_awas_pivot_kinematic_motors_and_continuous_joints():
    urdf = """<robot name="r">
      <link name="base"/><link name="l1"/><link name="l2"/>
      <joint name="j1" type="continuous"><parent link="base"/><child link="l1"/></joint>
      <joint name="j2" type="revolute"><parent link="base"/><child link="l2"/>
        <limit lower="-1" upper="1" effort="5" velocity="2"/></joint>
      <gazebo><plugin name="a" filename="libcompliant_actuator_plugin.so">
        <joint>j1</joint><actuator>awas</actuator><operationMode>3</operationMode></plugin>
      </gazebo>
      <gazebo><plugin name="b" filename="libcompliant_actuator_plugin.so">
        <joint>j2</joint><actuator>qbmove</actuator><operationMode>2</operationMode></plugin>
      </gazebo></robot>"""
    description = parse_description(urdf)
    awas = joint_bounds(description.spec("j1"), description.urdf_joint("j1"))
    assert awas.inputs["link_command"].high == CONTINUOUS_RANGE
    assert awas.inputs["torque_command"].high == 12.0          # no <limit>: the two motors'
    assert awas.inputs["reference_2"] == awas.preset_domain     # motor 2 moves the pivot
    assert awas.preset_domain.low == 0.0 and 0.0 < awas.preset_domain.high < 0.05
    assert awas.velocity == STATE_LIMIT
    qb = joint_bounds(description.spec("j2"), description.urdf_joint("j2"))
    assert qb.motor_velocity == (None, None)                  # mode 2: kinematic motors
    assert qb.effort == RATE_FACTOR * 5.0 and qb.velocity == RATE_FACTOR * 2.0


def test_inputs():
    qb = BOUNDS["joint_1"]
    assert check_input(0.5, qb, "joint_1", "equilibrium_position") == 0.5
    assert check_input(1.5, qb, "joint_1", "stiffness_preset") == 1.5    # the core clamps it
    for value, name, expected in ((math.nan, "equilibrium_position", "non_finite"),
                                  (math.inf, "torque_command", "non_finite"),
                                  (3.2, "link_command", "bounds"),
                                  (1.7, "stiffness_preset", "bounds"),
                                  (-6.5, "motor_2_command", "bounds"),
                                  (1e308, "external_torque", "bounds")):
        assert reason(check_input, value, qb, "joint_1", name) == expected, (name, value)
    assert check_input(1e6, None, "j", "torque_command") == 1e6            # no description
    assert reason(check_input, math.nan, None, "j", "torque_command") == "non_finite"


def link_state(position=0.1, velocity=0.0, effort=0.0, stiffness=3.0):
    msg = LinkState(position=position, velocity=velocity, effort=effort, stiffness=stiffness)
    msg.header.stamp = genpy.Time(5, 7)
    return msg


def test_states():
    qb = BOUNDS["joint_1"]
    sample = check_state(link_state(stiffness=3.5), "link_state", "joint_1", qb)
    assert (sample.stamp, sample.position, sample.stiffness) == (5_000_000_007, 0.1, 3.5)
    motor = MotorState(position=3.9, velocity=-12.0, effort=6.0)
    assert check_state(motor, "motor_2_state", "joint_1", qb).effort == 6.0
    for msg, stream, expected in ((link_state(position=math.nan), "link_state", "non_finite"),
                                  (link_state(stiffness=2 * STATE_LIMIT), "link_state", "bounds"),
                                  (link_state(position=3.4), "link_state", "bounds"),
                                  (link_state(velocity=-201.0), "link_state", "bounds"),
                                  (link_state(effort=1e6), "link_state", "bounds"),
                                  (MotorState(position=4.2), "motor_1_state", "bounds"),
                                  (MotorState(velocity=13.0), "motor_1_state", "bounds"),
                                  (MotorState(effort=-13.0), "motor_2_state", "bounds")):
        assert reason(check_state, msg, stream, "joint_1", qb) == expected, (stream, msg)
    assert check_state(link_state(position=50.0), "link_state", "j", None).position == 50.0


@pytest.mark.parametrize("good, stream", [(link_state(), "link_state"),
                                          (MotorState(position=0.1), "motor_1_state")])
def test_hostile_variants_raise_nothing_but_rejected(good, stream):
    rejected = 0
    for case in hostile_cases(good):
        try:
            check_state(case.message, stream, "joint_1", BOUNDS["joint_1"])
        except Rejected:
            rejected += 1
    assert rejected >= len(hostile_cases(good)) - 1          # all but the far-future stamp


@pytest.mark.parametrize("xacro, args", [
    ("five_dof_arm.urdf.xacro", {}),
    ("one_dof.urdf.xacro", {"actuator": "awas"}),
    ("one_dof.urdf.xacro", {"actuator": "bavs", "mode": "6"}),
    ("two_dof_qbmove.urdf.xacro", {}),
])
def test_the_gazebo_plugins_bounds_equal_bounds_py(xacro, args):
    """cag.input_bounds (input_bounds.hpp, the Gazebo plugin's checks) gives every input the
    range bounds.py gives compliant_sim, from the same URDF limits."""
    import compliant_actuator_gazebo as cag
    description = load_description(os.path.join(PACKAGE, "urdf", xacro), args)
    for spec in description.compliant:
        urdf = description.urdf_joint(spec.joint)
        lower = urdf.lower if urdf.lower is not None else math.nan
        upper = urdf.upper if urdf.upper is not None else math.nan
        cpp = cag.input_bounds(spec.actuator, spec.params, lower, upper, urdf.effort or 0.0)
        python = joint_bounds(spec, urdf).inputs
        assert set(cpp) == set(python)
        for name, (low, high) in cpp.items():
            assert (low, high) == pytest.approx((python[name].low, python[name].high)), (spec.joint, name)


def test_the_gazebo_plugins_bounds_of_a_continuous_joint():
    import compliant_actuator_gazebo as cag
    sea = cag.make_actuator("sea", {})
    params = cag.make_joint_params(3, {})
    wide = cag.input_bounds(sea, params, -1e16, 1e16, -1.0)      # Gazebo's continuous joint
    assert wide["link_command"] == (-CONTINUOUS_RANGE, CONTINUOUS_RANGE)
    assert wide["torque_command"] == (-12.0, 12.0)                # no effort limit: the motors'
