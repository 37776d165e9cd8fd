"""Compliance models of the core (reference sheet compliant_actuators.md table; paper 003 §3.1.3
and §3.3): torque laws, reference maps, saturation, t2 = 0 where unused, energies, the template
actuator, the factory, a Python-defined actuator and the bindings' documentation."""
from __future__ import annotations

import math

import pytest

import compliant_actuator_gazebo as cag


def test_sea_torque_law_and_unused_second_spring_is_exactly_zero():
    sea = cag.Sea(k=10.0)
    t = sea.torques(0.3, 0.1, 123.0)
    assert t.t1 == pytest.approx(-10.0 * 0.2) and t.t2 == 0.0 and t.link() == t.t1
    assert sea.stiffness(0.3, 0.1) == 10.0
    assert sea.energy(0.3, 0.1) == pytest.approx(0.5 * 10.0 * 0.04)
    assert sea.motors() == 1 and sea.type() == "sea"
    r = sea.references(0.4, 0.7)
    assert (r.theta1, r.theta2) == (0.4, 0.0)


def test_qbmove_torque_law_and_reference_map():
    p = cag.QbMoveParams(k1=6.257, a1=0.01038, k2=3.9, a2=0.08918)  # paper 003 §4.3 joint 1
    qb = cag.QbMove(p)
    q, t1, t2 = 0.3, 0.5, -0.2
    t = qb.torques(q, t1, t2)
    assert t.t1 == pytest.approx(-p.k1 * math.sinh(p.a1 * (q - t1)))
    assert t.t2 == pytest.approx(-p.k2 * math.sinh(p.a2 * (q - t2)))
    assert qb.stiffness(q, t1, t2) == pytest.approx(
        p.a1 * p.k1 * math.cosh(p.a1 * (q - t1)) + p.a2 * p.k2 * math.cosh(p.a2 * (q - t2)))
    r = qb.references(0.4, 0.2)
    assert (r.theta1, r.theta2) == pytest.approx((0.6, 0.2))


def test_bavs_torque_law_reference_map_and_balanced_equilibrium():
    p = cag.BavsParams()
    bavs = cag.Bavs()
    q, th1, th2 = 0.1, 0.25, -0.05
    d1, d2 = th1 - q, th2 - q
    t = bavs.torques(q, th1, th2)
    assert t.t1 == pytest.approx(p.k * (p.b * math.exp(p.ke * d1) - p.a * math.exp(-p.ke * d1)))
    assert t.t2 == pytest.approx(p.k * (p.a * math.exp(p.ke * d2) - p.b * math.exp(-p.ke * d2)))
    r = bavs.references(0.3, 0.22)
    assert (r.theta1, r.theta2) == pytest.approx((0.52, 0.08))
    # at the equilibrium the two pre-loaded springs cancel, whatever the preset
    for preset in (0.0, 0.1, 0.22):
        r = bavs.references(0.3, preset)
        assert bavs.torques(0.3, r.theta1, r.theta2).link() == pytest.approx(0.0, abs=1e-12)
        assert bavs.torques(0.3, r.theta1, r.theta2).t1 != 0.0
    # stiffness grows with the preset (it is a variable-stiffness actuator)
    sig = [bavs.stiffness(0.0, *_pair(bavs.references(0.0, p_))) for p_ in (0.001, 0.1, 0.22)]
    assert sig[0] < sig[1] < sig[2]


def _pair(r: cag.MotorReferences) -> tuple[float, float]:
    return r.theta1, r.theta2


def test_awas_torque_law_pivot_map_and_unused_second_spring():
    p = cag.AwasParams()
    awas = cag.Awas()
    pivot = 0.02
    c = (p.lever_length / p.r_t) * pivot / (p.lever_length - pivot)
    d = 0.1
    t = awas.torques(0.5 + d, 0.5, pivot)
    assert t.t1 == pytest.approx(-2 * p.ks * c * c * math.sin(d) * math.cos(d))
    assert t.t2 == 0.0
    assert awas.stiffness(0.5 + d, 0.5, pivot) == pytest.approx(2 * p.ks * c * c * math.cos(2 * d))
    r = awas.references(0.4, 0.03)
    assert (r.theta1, r.theta2) == (0.4, 0.03)
    # pivot 0 -> no stiffness; stiffness grows towards the lever's end
    assert awas.stiffness(0.0, 0.0, 0.0) == 0.0
    assert awas.stiffness(0.0, 0.0, 0.005) < awas.stiffness(0.0, 0.0, 0.04)


@pytest.mark.parametrize("model", [cag.Sea(), cag.QbMove(), cag.Bavs(), cag.Awas(),
                                   cag.TemplateActuator()],
                         ids=["sea", "qbmove", "bavs", "awas", "template"])
def test_torque_saturates_beyond_max_deflection(model):
    md = model.max_deflection()
    refs = model.references(0.0, model.check_preset(0.02))
    inside = model.torques(md * 0.999, refs.theta1, refs.theta2).t1
    edge = model.torques(md + 1e-9 + max(refs.theta1, 0.0), refs.theta1, refs.theta2)
    far = model.torques(md + 5.0 + max(refs.theta1, 0.0), refs.theta1, refs.theta2)
    assert far.t1 == pytest.approx(edge.t1, rel=1e-12)
    assert math.isfinite(far.t1) and abs(far.t1) >= 0.9 * abs(inside) - 1e-12
    assert model.stiffness(md + 5.0 + max(refs.theta1, 0.0), refs.theta1, refs.theta2) == 0.0


@pytest.mark.parametrize("model", [cag.Sea(), cag.QbMove(), cag.Awas(), cag.TemplateActuator()],
                         ids=["sea", "qbmove", "awas", "template"])
def test_energy_zero_at_zero_deflection(model):
    theta2 = 0.3 if model.type() == "qbmove" else 0.02  # second spring / AwAS pivot
    assert model.energy(0.3, 0.3, theta2) == 0.0
    assert model.energy(0.35, 0.3, theta2) > 0.0


def test_bavs_energy_is_zero_at_each_springs_unloaded_length():
    """BAVS springs are pre-loaded at zero deflection; each spring's energy is 0 where its torque
    vanishes, d* = ln(a/b) / (2 ke) for spring 1, and positive elsewhere."""
    p = cag.BavsParams()
    bavs = cag.Bavs()
    d_star = math.log(p.a / p.b) / (2 * p.ke)
    # spring 1 alone: put spring 2 at its own unloaded length too (d2* = -d_star)
    q = 0.1
    e = bavs.energy(q, q + d_star, q - d_star)
    assert e == pytest.approx(0.0, abs=1e-12)
    assert bavs.torques(q, q + d_star, q - d_star).t1 == pytest.approx(0.0, abs=1e-9)
    assert bavs.energy(q, q + 0.1, q - 0.1) > 0.0


def test_presets_are_clamped_into_each_models_domain():
    assert cag.QbMove().check_preset(-0.1) == 0.0
    assert cag.QbMove().check_preset(2.0) == cag.QbMove().max_deflection()
    assert cag.Bavs().check_preset(0.5) == 0.27
    awas = cag.Awas()
    assert awas.check_preset(0.05) == pytest.approx(0.05 * (1 - 1e-3))
    assert awas.check_preset(1.0) < awas.params.lever_length
    assert awas.check_preset(0.02) == 0.02
    assert cag.Sea().check_preset(3.0) == 3.0  # unused by the SEA


def test_awas_pivot_at_or_beyond_the_lever_length_never_reaches_the_singularity():
    awas = cag.Awas()
    for pivot in (0.05, 0.07, 1e9, -1.0):
        t = awas.torques(0.2, 0.0, pivot)
        assert math.isfinite(t.t1) and math.isfinite(awas.stiffness(0.2, 0.0, pivot))
    assert awas.torques(0.2, 0.0, 0.05).t1 == awas.torques(0.2, 0.0, awas.max_pivot()).t1


def test_template_actuator_is_a_working_user_model():
    """template_actuator.hpp (compiled into the module) is a cubic-spring SEA."""
    tmpl = cag.TemplateActuator(k=10.0, k3=50.0)
    d = 0.3
    assert tmpl.torques(d, 0.0).t1 == pytest.approx(-(10.0 * d + 50.0 * d**3))
    assert tmpl.torques(d, 0.0).t2 == 0.0
    assert tmpl.stiffness(d, 0.0) == pytest.approx(10.0 + 150.0 * d**2)
    assert tmpl.type() == "template" and tmpl.motors() == 1
    joint = cag.CompliantJoint(tmpl, cag.JointParams(mode=3))
    joint.set_input(cag.Input.EquilibriumPosition, 0.2)
    joint.reset(0.0)
    assert joint.update(0.0, 0.0, 0.0) == pytest.approx(10.0 * 0.2 + 50.0 * 0.2**3)


def test_factory_builds_each_type_with_named_parameters():
    assert cag.actuator_types() == ["sea", "qbmove", "bavs", "awas"]
    names = {t: cag.actuator_parameter_names(t) for t in cag.actuator_types()}
    assert names == {"sea": ["k", "max_deflection"],
                     "qbmove": ["k1", "a1", "k2", "a2", "max_deflection"],
                     "bavs": ["a", "b", "k", "ke", "max_deflection"],
                     "awas": ["ks", "lever_length", "r_t", "max_deflection"]}
    qb = cag.make_actuator("qbmove", {"k1": 3.383, "a1": 0.1015, "k2": 7.011, "a2": 0.05944})
    assert isinstance(qb, cag.QbMove) and qb.params.k2 == 7.011
    assert cag.make_actuator("sea", {}).params == cag.SeaParams()
    params = cag.make_joint_params(5, {"motor1_inertia": 0.01, "pid_p": 50, "link_pid_d": 0.1,
                                       "motor2_viscous": 0.0, "max_substep": 5e-4})
    assert params.mode == cag.Mode.MotorPid
    assert params.motor1.inertia == 0.01 and params.motor_pid.p == 50.0
    assert params.link_pid.d == 0.1 and params.motor2.friction.viscous == 0.0
    assert params.max_substep == 5e-4
    assert set(cag.joint_parameter_names()) >= {
        "motor1_inertia", "motor1_viscous", "motor1_coulomb", "motor1_bristle_stiffness",
        "motor1_bristle_torque", "motor1_torque_limit", "motor1_velocity_limit",
        "motor1_position_min", "motor1_position_max", "motor2_inertia", "pid_p", "pid_i", "pid_d",
        "pid_filter", "pid_output_limit", "pid_integral_limit", "link_pid_p", "link_pid_i",
        "link_pid_d", "link_pid_filter", "link_pid_output_limit", "max_substep"}


def test_reference_defaults_of_the_params_structs():
    assert cag.SeaParams() == cag.SeaParams(k=10.0, max_deflection=0.8)
    assert cag.QbMoveParams().a1 == 8.9992 and cag.QbMoveParams().k2 == 0.0019
    assert (cag.BavsParams().k, cag.BavsParams().ke, cag.BavsParams().max_deflection) == (
        1.6e5, 8.71, 0.27)
    assert cag.AwasParams().lever_length == 0.05 and cag.AwasParams().r_t == 0.015
    jp = cag.JointParams()
    assert jp.mode == cag.Mode.EquilibriumPreset
    assert (jp.motor1.inertia, jp.motor1.friction.viscous, jp.motor1.torque_limit,
            jp.motor1.velocity_limit, jp.motor1.friction.bristle_torque) == (
        0.0233, 0.2698, 6.0, 6.0, 0.02)
    assert (jp.motor_pid.p, jp.motor_pid.i, jp.motor_pid.d) == (125.0, 0.0, 4.5)
    assert (jp.link_pid.p, jp.link_pid.d) == (0.8, 0.2)


class PyLinear(cag.Actuator):
    """A user model written in Python: a linear SEA with stiffness 5, one motor."""

    def type(self) -> str:
        return "py_linear"

    def motors(self) -> int:
        return 1

    def torques(self, q, theta1, theta2):
        return cag.SpringTorques(t1=-5.0 * (q - theta1), t2=0.0)

    def stiffness(self, q, theta1, theta2):
        return 5.0

    def energy(self, q, theta1, theta2):
        return 2.5 * (q - theta1) ** 2

    def references(self, equilibrium, preset):
        return (equilibrium, 0.0)

    def check_preset(self, preset):
        return preset

    def max_deflection(self):
        return 1.0


def test_python_subclass_of_actuator_drives_a_compliant_joint():
    joint = cag.CompliantJoint(PyLinear(), cag.JointParams(mode=6))  # temporary: kept alive
    joint.set_input(cag.Input.EquilibriumPosition, 0.4)
    joint.reset(0.0)
    assert joint.actuator().type() == "py_linear"
    for n in range(2001):
        joint.update(n * 1e-3, 0.0, 0.0)
    out = joint.output()
    # the motor PID moves motor 1 towards 0.4 against the Python spring: P (0.4 - th) = 5 th
    assert out.motor1.position == pytest.approx(125 * 0.4 / 130, abs=2e-3)
    assert out.link_torque == pytest.approx(5.0 * out.motor1.position)
    assert out.stiffness == 5.0


def test_docstrings_and_reprs_are_informative():
    for obj in (cag.Sea, cag.QbMove, cag.Bavs, cag.Awas, cag.TemplateActuator, cag.Motor, cag.Pid,
                cag.CompliantJoint, cag.CompliantJoint.update, cag.simulate_one_dof,
                cag.make_actuator, cag.Actuator.torques, cag.JointParams, cag.PidGains):
        assert obj.__doc__ and len(obj.__doc__) > 20, obj
    assert "paper 003" in cag.CompliantJoint.__doc__
    assert repr(cag.Sea(k=3.0)) == "Sea(k=3.0, max_deflection=0.8)"
    assert repr(cag.PidGains(p=2.0)).startswith("PidGains(p=2.0, i=0.0, d=0.0")
    assert "mode=3" in repr(cag.JointParams())
    assert "link_torque=" in repr(cag.CompliantJoint(cag.Sea()).output())
    assert set(cag.__all__) >= {"Sea", "QbMove", "Bavs", "Awas", "Motor", "MotorParams",
                                "FrictionParams", "Pid", "PidGains", "Mode", "Input", "input_name",
                                "mode_inputs", "JointParams", "CompliantJoint", "make_actuator",
                                "make_joint_params", "actuator_types", "actuator_parameter_names",
                                "OneDofLink", "simulate_one_dof", "Actuator", "TemplateActuator"}


def test_generated_messages_import_next_to_the_core():
    from compliant_actuator_gazebo.msg import LinkState, MotorState  # noqa: F401
    assert "stiffness" in LinkState.__slots__
