"""Physics checks of the compliant-actuator core against analytic solutions (issue 5, "Physics
checks"; paper 003 §3.1; reference sheet compliant_actuators.md), through the Python bindings.

Every test compares with an independent analytic or numerical fact (finite differences of the
model, conservation of energy, sqrt(k/J), the static spring law, a naive integrator written here)
so that a wrong model, a wrong sign or a wrong integrator makes it fail.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import compliant_actuator_gazebo as cag

H = 1e-6  # central-difference step [rad]


def model_cases() -> list[tuple[str, cag.Actuator, list[float]]]:
    """Every model with presets over its domain (paper 003 §4.1 soft/stiff, §4.3 identified)."""
    return [
        ("sea", cag.Sea(), [0.0]),
        ("sea_stiff", cag.Sea(k=400.0), [0.0]),
        ("qbmove", cag.QbMove(), [0.0, 0.2, 0.6, 0.8]),
        ("qbmove_identified_j1", cag.QbMove(k1=6.257, a1=0.01038, k2=3.9, a2=0.08918), [0.0, 0.2]),
        ("qbmove_identified_j2", cag.QbMove(k1=3.383, a1=0.1015, k2=7.011, a2=0.05944), [0.2]),
        ("bavs", cag.Bavs(), [0.0, 0.001, 0.1, 0.22, 0.27]),
        ("awas", cag.Awas(), [0.0, 0.005, 0.02, 0.04, 0.0499]),
        ("template", cag.TemplateActuator(), [0.0]),
    ]


def grid(model: cag.Actuator, presets: list[float]):
    """(q, theta1, theta2) points, inside and beyond max_deflection, away from the kinks at
    exactly +-max_deflection where the torque is not differentiable."""
    md = model.max_deflection()
    for preset in presets:
        for eq in (-0.7, 0.0, 0.4):
            refs = model.references(eq, preset)
            for q in np.linspace(eq - 2.0 * md - 0.3, eq + 2.0 * md + 0.3, 41):
                deflections = [q - refs.theta1] + ([q - refs.theta2] if model.type() in
                                                   ("qbmove", "bavs") else [])
                if any(abs(abs(d) - md) < 10 * H for d in deflections):
                    continue
                yield float(q), refs.theta1, refs.theta2


@pytest.mark.parametrize("name,model,presets", model_cases(), ids=[c[0] for c in model_cases()])
def test_analytic_stiffness_equals_finite_difference_of_link_torque(name, model, presets):
    saturated = 0
    for q, t1, t2 in grid(model, presets):
        fd = -(model.torques(q + H, t1, t2).link() - model.torques(q - H, t1, t2).link()) / (2 * H)
        sigma = model.stiffness(q, t1, t2)
        assert sigma == pytest.approx(fd, rel=1e-5, abs=1e-6 * max(1.0, abs(sigma))), (q, t1, t2)
        saturated += sigma == 0.0 and fd == 0.0
    assert saturated > 0, "the grid must reach the saturated region (stiffness 0)"


@pytest.mark.parametrize("name,model,presets", model_cases(), ids=[c[0] for c in model_cases()])
def test_minus_energy_gradient_equals_link_torque(name, model, presets):
    for q, t1, t2 in grid(model, presets):
        fd = -(model.energy(q + H, t1, t2) - model.energy(q - H, t1, t2)) / (2 * H)
        tau = model.torques(q, t1, t2).link()
        assert fd == pytest.approx(tau, rel=1e-5, abs=1e-7 * max(1.0, abs(tau))), (q, t1, t2)
        assert model.energy(q, t1, t2) >= 0.0


def sea_joint(mode: int, k: float = 10.0, frictionless: bool = True, **joint) -> cag.CompliantJoint:
    params = cag.make_joint_params(mode, joint)
    if frictionless:
        for motor in (params.motor1, params.motor2):
            motor.friction = cag.FrictionParams(viscous=0.0, coulomb=0.0, bristle_stiffness=0.0)
            motor.velocity_limit = 1e3
    return cag.CompliantJoint(cag.Sea(k=k), params)


def test_energy_conserved_within_0p1_percent_over_10_s_without_damping_and_friction():
    """SEA + link inertia, mode 4 with zero motor torques, gravity off. With one motor sub-step per
    world step (max_substep = dt) the link/motor pair is integrated by symplectic Euler, whose
    energy error stays bounded (no drift) with amplitude ~ omega dt / 2 of the energy; omega =
    sqrt(k (1/J_link + 1/J_motor)) = 25 rad/s, so dt = 1e-5 s gives ~1.3e-4 < 1e-3."""
    dt = 1e-5
    joint = sea_joint(4, max_substep=dt)
    joint.reset(0.0)
    link = cag.OneDofLink(inertia=0.05, gravity=0.0)
    trace = cag.simulate_one_dof(joint, link, q0=0.3, qd0=0.0, dt=dt, duration=10.0)
    energy = trace["energy"]
    assert energy[0] == pytest.approx(0.5 * 10.0 * 0.3**2, rel=1e-12)
    drift = np.max(np.abs(energy - energy[0])) / energy[0]
    assert drift < 1e-3, drift
    # The energy really sloshes between link, spring and motor (the check is not vacuous).
    assert np.max(np.abs(trace["qd"])) > 1.0


def crossing_period(t: np.ndarray, x: np.ndarray) -> float:
    """Mean period from the upward zero crossings of x (linear interpolation)."""
    idx = np.nonzero((x[:-1] < 0.0) & (x[1:] >= 0.0))[0]
    crossings = t[idx] - x[idx] * (t[idx + 1] - t[idx]) / (x[idx + 1] - x[idx])
    assert len(crossings) >= 5
    return float(np.mean(np.diff(crossings)))


def test_sea_natural_frequency_with_fixed_motor_is_sqrt_k_over_j_link():
    """Mode 3 holds the motor at the equilibrium: omega = sqrt(k / J_link)."""
    k, inertia = 10.0, 0.01
    joint = sea_joint(3, k=k)
    joint.reset(0.0)
    trace = cag.simulate_one_dof(joint, cag.OneDofLink(inertia=inertia, gravity=0.0),
                                 q0=0.2, qd0=0.0, dt=1e-4, duration=2.0)
    period = crossing_period(trace["time"], trace["q"])
    assert period == pytest.approx(2 * math.pi / math.sqrt(k / inertia), rel=1e-2)


def test_sea_natural_frequency_with_free_motor_is_sqrt_k_over_j_eff():
    """Mode 4, zero motor torque, no friction: link and motor oscillate against each other with
    omega = sqrt(k / J_eff), J_eff = J_link J_motor / (J_link + J_motor), about their fixed
    centre of inertia."""
    k, j_link, j_motor = 10.0, 0.05, 0.0233
    joint = sea_joint(4, k=k, max_substep=1e-4)
    joint.reset(0.0)
    trace = cag.simulate_one_dof(joint, cag.OneDofLink(inertia=j_link, gravity=0.0),
                                 q0=0.3, qd0=0.0, dt=1e-4, duration=3.0)
    centre = j_link * 0.3 / (j_link + j_motor)
    period = crossing_period(trace["time"], trace["q"] - centre)
    j_eff = j_link * j_motor / (j_link + j_motor)
    assert period == pytest.approx(2 * math.pi / math.sqrt(k / j_eff), rel=1e-2)


def static_equilibrium(model: cag.Actuator, refs: cag.MotorReferences, mgl: float,
                       q: float) -> float:
    """Newton on tau_spring(q) = m g l sin q (analytic stiffness as the derivative)."""
    for _ in range(100):
        residual = model.torques(q, refs.theta1, refs.theta2).link() - mgl * math.sin(q)
        slope = -model.stiffness(q, refs.theta1, refs.theta2) - mgl * math.cos(q)
        q -= residual / slope
        if abs(residual) < 1e-15:
            break
    return q


@pytest.mark.parametrize("model,preset", [
    (cag.Sea(), 0.0), (cag.QbMove(), 0.6), (cag.Bavs(), 0.22), (cag.Awas(), 0.04),
], ids=["sea", "qbmove", "bavs", "awas"])
def test_static_deflection_under_gravity_matches_spring_law(model, preset):
    """Paper 003 Fig. 8 link (0.2 kg at 0.04 m) at rest in mode 3 with equilibrium 1 rad: the
    spring torque balances gravity, k d = m g l sin q for the SEA, within 1e-6 rad."""
    mass, length, g = 0.2, 0.04, 9.81
    params = cag.make_joint_params(3, {})
    joint = cag.CompliantJoint(model, params)
    joint.set_input(cag.Input.EquilibriumPosition, 1.0)
    joint.set_input(cag.Input.StiffnessPreset, preset)
    joint.reset(1.0)
    link = cag.OneDofLink(inertia=mass * length**2, mass_length=mass * length, damping=0.01,
                          gravity=g)
    trace = cag.simulate_one_dof(joint, link, q0=1.0, qd0=0.0, dt=1e-4, duration=3.0)
    refs = model.references(1.0, preset)
    expected = static_equilibrium(model, refs, mass * length * g, 1.0)
    assert trace["q"][-1] == pytest.approx(expected, abs=1e-6)
    if model.type() == "sea":
        deflection = refs.theta1 - trace["q"][-1]
        assert 10.0 * deflection == pytest.approx(mass * g * length * math.sin(trace["q"][-1]),
                                                  abs=1e-5)
        assert deflection > 1e-3  # gravity visibly deflects the spring


def naive_release_motor(dt: float, duration: float, reference: float, k: float = 10.0) -> np.ndarray:
    """The reference release's motor update, re-implemented ONLY here as the comparison: one
    explicit (forward) Euler step of eq. 10 per world step, PID P125 D4.5 on the motor position
    (derivative of the error, no filter), J 0.0233, D 0.2698, torque saturated at 6 N m, SEA
    spring k to a link held at q = 0."""
    j, d, p_gain, d_gain, tau_max = 0.0233, 0.2698, 125.0, 4.5, 6.0
    theta, omega, out = 0.0, 0.0, []
    for _ in range(int(round(duration / dt))):
        error, error_rate = reference - theta, -omega
        tau = min(max(p_gain * error + d_gain * error_rate, -tau_max), tau_max)
        spring_on_link = -k * (0.0 - theta)
        theta, omega = theta + dt * omega, omega + dt / j * (tau - d * omega - spring_on_link)
        out.append(theta)
    return np.array(out)


def joint_motor_trace(world_dt: float, duration: float, reference: float) -> np.ndarray:
    joint = cag.CompliantJoint(cag.Sea(), cag.make_joint_params(5, {}))  # reference defaults
    joint.set_input(cag.Input.Reference1, reference)
    joint.reset(0.0)
    joint.update(0.0, 0.0, 0.0)  # the first update after reset only computes
    out = []
    for n in range(1, int(round(duration / world_dt)) + 1):
        joint.update(n * world_dt, 0.0, 0.0)
        out.append(joint.output().motor1.position)
    return np.array(out)


def test_25ms_world_step_is_stable_in_mode5_where_the_release_explicit_euler_is_not():
    """Reference defaults (P125 D4.5, J 0.0233, D 0.2698): explicit Euler is stable only for
    dt < 2J/(D + Kd) ~ 9.8 ms. At 25 ms the release's update oscillates/diverges; the joint's
    internal 1 ms sub-steps give the same trajectory as a 1 ms world step."""
    reference, duration = 0.5, 3.0
    naive_1ms = naive_release_motor(1e-3, duration, reference)
    naive_25ms = naive_release_motor(25e-3, duration, reference)
    ours_1ms = joint_motor_trace(1e-3, duration, reference)
    ours_25ms = joint_motor_trace(25e-3, duration, reference)
    # steady state of P control against the spring: P (r - theta) = k theta
    steady = 125.0 * reference / (125.0 + 10.0)
    assert abs(naive_1ms[-1] - steady) < 1e-3           # the naive integrator is right at 1 ms...
    tail = naive_25ms[-40:]                             # ...and unstable at 25 ms
    assert not np.all(np.isfinite(tail)) or np.ptp(tail) > 0.1
    assert abs(ours_25ms[-1] - steady) < 2e-3            # bristle friction: +-tau_s / P
    assert np.ptp(ours_25ms[-40:]) < 1e-6
    # With the link held still, 25 sub-steps of 1 ms are exactly 25 world steps of 1 ms.
    np.testing.assert_allclose(ours_25ms, ours_1ms[24::25], rtol=0, atol=1e-12)


def test_25ms_world_step_stable_with_a_moving_link_in_mode5():
    """The same at 25 ms with the link free (SEA, J_link 0.05, link damping 0.05, gravity off):
    the link oscillation decays second by second like the 1 ms run's, and both runs agree."""
    def run(dt: float) -> np.ndarray:
        joint = cag.CompliantJoint(cag.Sea(), cag.make_joint_params(5, {}))
        joint.set_input(cag.Input.Reference1, 0.5)
        joint.reset(0.0)
        link = cag.OneDofLink(inertia=0.05, damping=0.05, gravity=0.0)
        return cag.simulate_one_dof(joint, link, q0=0.0, qd0=0.0, dt=dt, duration=10.0)["q"]

    q25 = run(25e-3)
    q1 = run(1e-3)[::25]
    assert np.all(np.isfinite(q25))
    per_second_ptp = [np.ptp(q25[i * 40:(i + 1) * 40]) for i in range(10)]
    assert all(b < a for a, b in zip(per_second_ptp, per_second_ptp[1:])), per_second_ptp
    assert per_second_ptp[-1] < 0.01 * per_second_ptp[0]
    assert q25[-1] == pytest.approx(0.5, abs=5e-3)
    assert np.max(np.abs(q25 - q1)) < 0.05


def test_first_step_at_absolute_time_1000_s_does_not_jump():
    """The release's first dt was the absolute sim time; here the first update only computes."""
    joint = cag.CompliantJoint(cag.Sea(), cag.make_joint_params(6, {}))
    joint.set_input(cag.Input.EquilibriumPosition, 0.5)
    joint.reset(0.0)
    tau0 = joint.update(1000.0, 0.0, 0.0)
    assert joint.output().motor1.position == 0.0 and joint.output().motor1.velocity == 0.0
    assert tau0 == 0.0
    joint.update(1000.001, 0.0, 0.0)
    motor = joint.output().motor1
    assert 0.0 < motor.position < 1e-3 and abs(motor.velocity) < 1.0
