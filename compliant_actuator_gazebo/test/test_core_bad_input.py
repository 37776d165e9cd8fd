"""Bad input to the core (issue 5, "Bad input"; reference sheet defects "NaN efforts at position
limits"): a clear ValueError naming the item, or a clamped value the caller can warn about; never
a crash or a NaN."""
from __future__ import annotations

import math

import pytest

import compliant_actuator_gazebo as cag

I = cag.Input
NON_FINITE = (math.nan, math.inf, -math.inf)


def finite_output(joint: cag.CompliantJoint) -> bool:
    o = joint.output()
    values = [o.link_torque, o.spring.t1, o.spring.t2, o.stiffness, o.deflection, o.reference_1,
              o.reference_2]
    for m in (o.motor1, o.motor2):
        values += [m.position, m.velocity, m.anchor, m.torque]
    return all(math.isfinite(v) for v in values)


@pytest.mark.parametrize("inp", list(I.__members__.values()), ids=list(I.__members__))
def test_non_finite_inputs_are_rejected_and_the_old_value_kept(inp):
    joint = cag.CompliantJoint(cag.QbMove(), cag.JointParams(mode=6))
    assert joint.set_input(inp, 0.1)
    for bad in NON_FINITE:
        assert joint.set_input(inp, bad) is False
        assert joint.input(inp) == 0.1


@pytest.mark.parametrize("args", [(0.0, math.nan, 0.0), (0.0, 0.0, math.inf),
                                  (math.nan, 0.0, 0.0), (math.inf, 0.1, 0.0)])
def test_update_with_non_finite_state_raises_value_error(args):
    joint = cag.CompliantJoint(cag.Sea(), cag.JointParams(mode=6))
    with pytest.raises(ValueError, match="finite"):
        joint.update(*args)
    with pytest.raises(ValueError):
        joint.reset(math.nan)


def test_unknown_actuator_type_names_it_and_the_known_types():
    with pytest.raises(ValueError, match=r"unknown actuator type 'spring'.*sea, qbmove, bavs, awas"):
        cag.make_actuator("spring", {})
    with pytest.raises(ValueError, match="unknown actuator type"):
        cag.actuator_parameter_names("")


@pytest.mark.parametrize("mode", [7, -1, 100])
def test_mode_outside_0_to_6_is_rejected(mode):
    with pytest.raises(ValueError, match="0..6"):
        cag.make_joint_params(mode, {})
    with pytest.raises(ValueError, match="0..6"):
        cag.JointParams(mode=mode)
    with pytest.raises(ValueError, match="0..6"):
        cag.mode_inputs(mode)


def test_unknown_parameter_names_are_rejected_by_name():
    with pytest.raises(ValueError, match=r"unknown sea parameter 'k1' \(known: k, max_deflection\)"):
        cag.make_actuator("sea", {"k1": 3.0})
    with pytest.raises(ValueError, match="unknown joint parameter 'motor3_inertia'"):
        cag.make_joint_params(3, {"motor3_inertia": 0.1})
    with pytest.raises(ValueError, match="unknown joint parameter 'k'"):
        cag.make_joint_params(3, {"k": 10.0})  # actuator names go to make_actuator
    with pytest.raises(TypeError, match="stiffness"):
        cag.SeaParams(stiffness=3.0)
    with pytest.raises(TypeError):
        cag.Sea(kk=3.0)


@pytest.mark.parametrize("type_,name", [
    ("sea", "k"), ("sea", "max_deflection"), ("qbmove", "k1"), ("qbmove", "a2"), ("bavs", "k"),
    ("bavs", "ke"), ("awas", "ks"), ("awas", "lever_length"), ("awas", "r_t")])
def test_negative_or_non_finite_model_parameters_are_rejected(type_, name):
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match=name):
            cag.make_actuator(type_, {name: bad})


@pytest.mark.parametrize("name", ["motor1_inertia", "motor2_inertia", "motor1_viscous",
                                  "motor2_coulomb", "motor1_bristle_stiffness",
                                  "motor1_torque_limit", "motor2_velocity_limit", "pid_p",
                                  "link_pid_d", "pid_output_limit", "max_substep"])
def test_negative_joint_parameters_are_rejected(name):
    with pytest.raises(ValueError):
        cag.make_joint_params(5, {name: -1.0})
    with pytest.raises(ValueError):
        cag.make_joint_params(5, {name: math.nan})


def test_invalid_params_structs_are_rejected_where_they_are_used():
    with pytest.raises(ValueError, match="inertia"):
        cag.Motor(cag.MotorParams(inertia=0.0))
    with pytest.raises(ValueError, match="end stops"):
        cag.Motor(cag.MotorParams(position_min=1.0, position_max=-1.0))
    params = cag.JointParams(mode=5)
    params.motor2.inertia = -0.1
    with pytest.raises(ValueError, match="motor2 inertia"):
        cag.CompliantJoint(cag.QbMove(), params)
    with pytest.raises(ValueError, match="max_substep"):
        cag.CompliantJoint(cag.Sea(), cag.JointParams(max_substep=0.0))
    with pytest.raises(ValueError, match="OneDofLink"):
        cag.simulate_one_dof(cag.CompliantJoint(cag.Sea()), cag.OneDofLink(inertia=0.0), 0, 0,
                             1e-3, 1.0)


@pytest.mark.parametrize("pivot", [0.05, 0.06, 10.0])
def test_awas_pivot_at_or_beyond_lever_length_is_clamped_and_flagged(pivot):
    awas = cag.Awas()
    joint = cag.CompliantJoint(awas, cag.JointParams(mode=6))
    assert joint.set_input(I.StiffnessPreset, pivot)
    assert joint.clamped_preset()
    assert joint.input(I.StiffnessPreset) == pytest.approx(0.05 * (1 - 1e-3))
    joint.set_input(I.EquilibriumPosition, 0.3)
    joint.reset(0.0)
    for n in range(500):
        joint.update(n * 1e-3, 0.0, 0.0)
        assert finite_output(joint)
    assert joint.set_input(I.StiffnessPreset, 0.02) and not joint.clamped_preset()


@pytest.mark.parametrize("model,bad,clamped", [(cag.QbMove(), -0.2, 0.0), (cag.QbMove(), 1.5, 0.8),
                                               (cag.Bavs(), 0.3, 0.27), (cag.Bavs(), -1.0, 0.0),
                                               (cag.Awas(), -0.01, 0.0)],
                         ids=["qbmove_neg", "qbmove_high", "bavs_high", "bavs_neg", "awas_neg"])
def test_presets_outside_the_domain_are_clamped(model, bad, clamped):
    joint = cag.CompliantJoint(model, cag.JointParams(mode=3))
    assert joint.set_input(I.StiffnessPreset, bad) and joint.clamped_preset()
    assert joint.input(I.StiffnessPreset) == clamped
    with pytest.raises(ValueError):
        model.check_preset(math.nan)


def test_motor_at_end_stop_never_produces_nan_in_a_joint():
    params = cag.make_joint_params(4, {"motor1_position_min": -0.2, "motor1_position_max": 0.2,
                                       "motor2_position_min": -0.2, "motor2_position_max": 0.2,
                                       "motor1_torque_limit": 1e6, "motor1_velocity_limit": 1e6})
    joint = cag.CompliantJoint(cag.Bavs(), params)
    joint.set_input(I.Motor1Command, 1e300)
    joint.set_input(I.Motor2Command, -1e300)
    joint.reset(0.0)
    for n in range(300):
        joint.update(n * 1e-3, 5.0 * math.sin(n * 0.1), 0.0)  # link far beyond max deflection
        assert finite_output(joint)
    o = joint.output()
    assert o.motor1.position == 0.2 and o.motor2.position == -0.2
    assert o.motor1.velocity == 0.0


def test_huge_torque_commands_are_saturated():
    joint = cag.CompliantJoint(cag.QbMove(), cag.JointParams(mode=4))
    joint.set_input(I.Motor1Command, 1e300)
    joint.set_input(I.Motor2Command, -1e300)
    joint.reset(0.0)
    for n in range(200):
        joint.update(n * 1e-3, 0.0, 0.0)
    o = joint.output()
    assert (o.motor1.torque, o.motor2.torque) == (6.0, -6.0)
    assert abs(o.motor1.velocity) <= 6.0 and abs(o.motor2.velocity) <= 6.0
    assert finite_output(joint)


def test_huge_external_torque_and_clock_jumps_stay_finite():
    joint = cag.CompliantJoint(cag.Sea(), cag.JointParams(mode=6))
    joint.set_input(I.ExternalTorque, 1e300)
    joint.reset(0.0)
    joint.update(0.0, 0.0, 0.0)
    assert joint.update(0.001, 0.0, 0.0) == pytest.approx(1e300)
    joint.set_input(I.ExternalTorque, 0.0)
    joint.set_input(I.EquilibriumPosition, 0.5)
    before = joint.output().motor1.position
    joint.update(1e9, 0.0, 0.0)  # a clock jump of ~30 years: compute only, no 1e12 sub-steps
    assert joint.output().motor1.position == before and finite_output(joint)


def test_python_actuator_missing_methods_raise_instead_of_crashing():
    class Incomplete(cag.Actuator):
        def type(self):
            return "incomplete"

        def motors(self):
            return 1

    with pytest.raises(RuntimeError, match="references"):  # the constructor's reset() needs it
        cag.CompliantJoint(Incomplete(), cag.JointParams(mode=3))
    with pytest.raises(RuntimeError, match="torques"):
        Incomplete().torques(0.0, 0.0)
