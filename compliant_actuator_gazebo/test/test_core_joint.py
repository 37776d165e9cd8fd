"""CompliantJoint (paper 003 §3.1, Fig. 4-5): the seven operation modes through one step function,
inputs per mode, external torque in every mode, sub-stepping, the first-call / dt <= 0 guard,
reset, and Python-defined actuators."""
from __future__ import annotations

import gc
import math

import pytest

import compliant_actuator_gazebo as cag

I = cag.Input


def joint_for(model: cag.Actuator, mode: int, **params) -> cag.CompliantJoint:
    return cag.CompliantJoint(model, cag.make_joint_params(mode, params))


def run_fixed_link(joint: cag.CompliantJoint, q: float, duration: float, dt: float = 1e-3) -> None:
    t0 = joint.output().time
    joint.update(t0, q, 0.0)
    for n in range(1, int(round(duration / dt)) + 1):
        joint.update(t0 + n * dt, q, 0.0)


def test_mode_inputs_and_topic_names():
    expected = {
        0: ["torque_command"], 1: ["link_command"], 2: ["reference_1", "reference_2"],
        3: ["equilibrium_position", "stiffness_preset"], 4: ["motor_1_command", "motor_2_command"],
        5: ["reference_1", "reference_2"], 6: ["equilibrium_position", "stiffness_preset"]}
    for mode, names in expected.items():
        assert [cag.input_name(i) for i in cag.mode_inputs(mode)] == names + ["external_torque"]
        assert cag.has_motor_dynamics(mode) == (mode >= 4)
    for i in I.__members__.values():
        assert cag.input_from_name(cag.input_name(i)) == i
    assert cag.mode_inputs(cag.Mode.MotorPid) == cag.mode_inputs(5)


def test_mode0_link_torque_is_the_torque_command():
    joint = joint_for(cag.Sea(), 0)
    joint.set_input(I.TorqueCommand, 1.25)
    assert joint.update(0.0, 0.3, 1.0) == 1.25
    out = joint.output()
    assert out.stiffness == 0.0 and out.spring.t1 == 0.0 and out.motor1.position == 0.0


def test_mode1_link_torque_is_the_link_pid_on_link_position():
    joint = joint_for(cag.Sea(), 1, link_pid_p=2.0, link_pid_d=0.5, link_pid_filter=0.0)
    joint.set_input(I.LinkCommand, 0.5)
    joint.reset(0.1)
    assert joint.update(0.0, 0.1, 0.0) == pytest.approx(2.0 * 0.4)
    # derivative on the measured link position: q moves by 0.01 in 10 ms -> 1 rad/s
    assert joint.update(0.01, 0.11, 1.0) == pytest.approx(2.0 * 0.39 - 0.5 * 1.0)
    assert joint.output().stiffness == 2.0


def test_mode2_motor_positions_are_the_references():
    qb = cag.QbMove()
    joint = joint_for(qb, 2)
    joint.set_input(I.Reference1, 0.5)
    joint.set_input(I.Reference2, -0.1)
    tau = joint.update(0.0, 0.2, 0.0)
    expected = qb.torques(0.2, 0.5, -0.1)
    assert tau == pytest.approx(expected.link())
    out = joint.output()
    assert (out.motor1.position, out.motor2.position) == (0.5, -0.1)
    assert (out.reference_1, out.reference_2) == (0.5, -0.1)
    assert out.spring.t1 == expected.t1 and out.spring.t2 == expected.t2
    assert out.deflection == pytest.approx(0.2 - 0.5)
    assert out.stiffness == pytest.approx(qb.stiffness(0.2, 0.5, -0.1))
    joint.set_input(I.Reference1, 0.6)
    joint.update(0.01, 0.2, 0.0)
    assert joint.output().motor1.velocity == pytest.approx(10.0)  # kinematic: finite difference


@pytest.mark.parametrize("model,preset", [(cag.Sea(), 0.0), (cag.QbMove(), 0.3),
                                          (cag.Bavs(), 0.1), (cag.Awas(), 0.02)],
                         ids=["sea", "qbmove", "bavs", "awas"])
def test_mode3_references_come_from_the_equilibrium_preset_map(model, preset):
    joint = joint_for(model, 3)
    joint.set_input(I.EquilibriumPosition, 0.4)
    joint.set_input(I.StiffnessPreset, preset)
    refs = model.references(0.4, preset)
    tau = joint.update(0.0, 0.1, 0.0)
    assert tau == pytest.approx(model.torques(0.1, refs.theta1, refs.theta2).link())
    assert tau > 0.0  # pulls towards the equilibrium
    out = joint.output()
    assert out.reference_1 == refs.theta1
    assert out.reference_2 == (refs.theta2 if model.motors() == 2 else 0.0)
    if model.type() in ("sea", "awas"):
        assert out.spring.t2 == 0.0


def test_mode4_motors_feel_minus_the_spring_torques_and_follow_their_commands():
    qb = cag.QbMove(k1=1.0, a1=1.0, k2=1.0, a2=1.0)
    joint = joint_for(qb, 4)
    joint.reset(0.0)           # motors at 0 (preset 0)
    run_fixed_link(joint, 0.3, 0.05)
    out = joint.output()
    assert out.spring.t1 < 0 and out.spring.t2 < 0  # the link is pulled back...
    assert out.motor1.position > 0 and out.motor2.position > 0  # ...the motors forward
    joint.set_input(I.Motor1Command, 0.5)
    joint.set_input(I.Motor2Command, -0.5)
    run_fixed_link(joint, 0.3, 0.1)
    out = joint.output()
    assert out.motor1.position > out.motor2.position
    assert (out.motor1.torque, out.motor2.torque) == (0.5, -0.5)


@pytest.mark.parametrize("mode", [5, 6])
def test_modes5_and_6_motor_pids_reach_their_references(mode):
    qb = cag.QbMove()
    joint = joint_for(qb, mode)
    if mode == 5:
        joint.set_input(I.Reference1, 0.5)
        joint.set_input(I.Reference2, 0.1)
        refs = (0.5, 0.1)
    else:
        joint.set_input(I.EquilibriumPosition, 0.3)
        joint.set_input(I.StiffnessPreset, 0.2)
        refs = (0.5, 0.1)
    joint.reset(0.3)
    run_fixed_link(joint, 0.3, 2.0)
    out = joint.output()
    # soft springs and bristle friction: P control error below a few mrad
    assert out.motor1.position == pytest.approx(refs[0], abs=3e-3)
    assert out.motor2.position == pytest.approx(refs[1], abs=3e-3)
    assert (out.reference_1, out.reference_2) == pytest.approx(refs)


def test_awas_motor2_positions_the_pivot_and_feels_no_spring_reaction():
    pivots = []
    for q in (0.0, 0.25):  # different link positions -> different spring loads on motor 1
        joint = joint_for(cag.Awas(), 6)
        joint.set_input(I.EquilibriumPosition, 0.0)
        joint.set_input(I.StiffnessPreset, 0.03)
        joint.reset(0.0)
        run_fixed_link(joint, q, 1.0)
        out = joint.output()
        assert out.spring.t2 == 0.0
        pivots.append(out.motor2.position)
    assert pivots[0] == pivots[1]
    assert pivots[0] == pytest.approx(0.03, abs=1e-3)


@pytest.mark.parametrize("mode", range(7))
def test_external_torque_is_added_in_every_mode(mode):
    outputs = []
    for external in (0.0, 0.7):
        joint = joint_for(cag.QbMove(), mode)
        for i, v in ((I.TorqueCommand, 0.2), (I.LinkCommand, 0.3), (I.Reference1, 0.3),
                     (I.Reference2, 0.1), (I.EquilibriumPosition, 0.2), (I.StiffnessPreset, 0.1),
                     (I.Motor1Command, 0.1), (I.Motor2Command, -0.1), (I.ExternalTorque, external)):
            joint.set_input(i, v)
        joint.reset(0.0)
        run_fixed_link(joint, 0.05, 0.02)
        outputs.append(joint.output().link_torque)
    assert outputs[1] - outputs[0] == pytest.approx(0.7, abs=1e-12)


def test_one_long_world_step_equals_its_sub_steps():
    """update() over dt runs ceil(dt / max_substep) equal sub-steps: with the link held still,
    one 10 ms step equals ten 1 ms steps, and 2.5 ms with max_substep 1 ms equals three steps of
    2.5/3 ms."""
    def make():
        j = joint_for(cag.Bavs(), 6)
        j.set_input(I.EquilibriumPosition, 0.4)
        j.set_input(I.StiffnessPreset, 0.1)
        j.reset(0.0)
        j.update(0.0, 0.0, 0.0)
        return j
    a, b = make(), make()
    a.update(0.01, 0.0, 0.0)
    for n in range(1, 11):
        b.update(n * 1e-3, 0.0, 0.0)
    assert a.output().motor1.position == pytest.approx(b.output().motor1.position, abs=1e-14)
    assert a.output().motor2.velocity == pytest.approx(b.output().motor2.velocity, abs=1e-12)
    c, d = make(), make()
    c.update(2.5e-3, 0.0, 0.0)
    for n in range(1, 4):
        d.update(n * 2.5e-3 / 3, 0.0, 0.0)
    assert c.output().motor1.position == pytest.approx(d.output().motor1.position, abs=1e-14)


def test_first_call_and_non_positive_dt_only_compute():
    joint = joint_for(cag.Sea(), 6)
    joint.set_input(I.EquilibriumPosition, 0.5)
    joint.reset(0.0, time=5.0)
    joint.update(7.0, 0.0, 0.0)  # first call: compute only, whatever the time
    assert joint.output().motor1.position == 0.0 and joint.output().time == 7.0
    joint.update(7.001, 0.0, 0.0)
    moved = joint.output().motor1.position
    assert moved > 0.0
    for t in (7.001, 7.0005, 0.0):  # dt = 0, dt < 0 (clock reset): compute only, re-sync
        joint.update(t, 0.0, 0.0)
        assert joint.output().motor1.position == moved
    joint.update(0.001, 0.0, 0.0)  # after the clock reset: normal 1 ms step
    assert 0.0 < joint.output().motor1.position - moved < 1e-2


def test_reset_puts_motors_at_rest_where_the_link_is_at_equilibrium():
    for model, preset in ((cag.Sea(), 0.0), (cag.QbMove(), 0.3), (cag.Bavs(), 0.2),
                          (cag.Awas(), 0.03)):
        joint = joint_for(model, 4)
        joint.set_input(I.StiffnessPreset, preset)
        joint.reset(0.7)
        assert joint.update(0.0, 0.7, 0.0) == pytest.approx(0.0, abs=1e-12)
        refs = model.references(0.7, preset)
        assert joint.output().motor1.position == refs.theta1
        assert joint.input(I.StiffnessPreset) == preset  # inputs are kept


def test_one_motor_actuators_leave_motor2_untouched():
    joint = joint_for(cag.Sea(), 5)
    joint.set_input(I.Reference1, 0.2)
    joint.set_input(I.Reference2, 0.9)
    joint.reset(0.0)
    run_fixed_link(joint, 0.0, 0.2)
    out = joint.output()
    assert out.motor2.position == 0.0 and out.motor2.velocity == 0.0 and out.spring.t2 == 0.0
    assert out.reference_2 == 0.0 and joint.dynamic_motors() == 1


def test_input_by_topic_name():
    joint = joint_for(cag.Sea(), 3)
    assert joint.set_input("equilibrium_position", 0.3)
    assert joint.input("equilibrium_position") == 0.3 == joint.input(I.EquilibriumPosition)


class PyCubic(cag.Actuator):
    def type(self):
        return "py_cubic"

    def motors(self):
        return 1

    def torques(self, q, theta1, theta2):
        d = q - theta1
        return (-(2.0 * d + 4.0 * d**3), 0.0)  # a tuple is accepted too

    def stiffness(self, q, theta1, theta2):
        return 2.0 + 12.0 * (q - theta1) ** 2

    def energy(self, q, theta1, theta2):
        d = q - theta1
        return d**2 + d**4

    def references(self, equilibrium, preset):
        return cag.MotorReferences(theta1=equilibrium, theta2=0.0)

    def check_preset(self, preset):
        return min(max(preset, 0.0), 1.0)

    def max_deflection(self):
        return 1.0


def test_python_actuator_survives_garbage_collection_inside_a_joint():
    joint = cag.CompliantJoint(PyCubic(), cag.JointParams(mode=3))
    gc.collect()
    joint.set_input(I.EquilibriumPosition, 0.5)
    assert joint.set_input(I.StiffnessPreset, 3.0) and joint.clamped_preset()
    assert joint.input(I.StiffnessPreset) == 1.0
    assert joint.update(0.0, 0.0, 0.0) == pytest.approx(2.0 * 0.5 + 4.0 * 0.125)
    assert joint.output().stiffness == pytest.approx(2.0 + 12.0 * 0.25)
    trace = cag.simulate_one_dof(joint, cag.OneDofLink(inertia=0.01, gravity=0.0), 0.0, 0.0,
                                 1e-4, 0.5)
    assert math.isfinite(trace["q"][-1])
    # energy of the Python spring enters the trace (conserved up to symplectic Euler's O(w dt))
    assert trace["energy"].max() - trace["energy"].min() < 1e-2 * trace["energy"].max()
