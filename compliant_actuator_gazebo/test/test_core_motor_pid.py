"""Motor block (paper 003 §3.1.1, eq. 7-8) and PID block (§3.1.2, eq. 11) of the core, with the
fixes of the reference sheet: semi-implicit integration, configurable bristle/Coulomb/viscous
friction, torque and velocity limits, end stops, never NaN; PID with anti-windup, filtered
derivative on the measurement, output limits."""
from __future__ import annotations

import math

import numpy as np
import pytest

import compliant_actuator_gazebo as cag


def frictionless(**kw) -> cag.MotorParams:
    p = cag.MotorParams(**kw)
    p.friction = cag.FrictionParams(viscous=0.0, coulomb=0.0, bristle_stiffness=0.0)
    return p


def run(motor: cag.Motor, torque: float, spring: float, dt: float, steps: int) -> None:
    for _ in range(steps):
        motor.step(torque, spring, dt)


def test_viscous_decay_follows_the_implicit_euler_solution_and_the_exponential():
    """J thdd = -D thd: implicit Euler gives v_n = v_0 / (1 + dt D / J)^n -> v_0 e^{-D t / J}."""
    p = cag.MotorParams(friction=cag.FrictionParams(viscous=0.2698, bristle_stiffness=0.0),
                        velocity_limit=100.0)
    motor = cag.Motor(p)
    motor.reset(0.0)
    run(motor, 0.2698 * 5.0, 0.0, 1e-3, 20000)  # steady velocity tau / D = 5 rad/s
    assert motor.state().velocity == pytest.approx(5.0, rel=1e-9)
    dt, n = 1e-4, 1000
    run(motor, 0.0, 0.0, dt, n)
    j, d = p.inertia, p.friction.viscous
    assert motor.state().velocity == pytest.approx(5.0 / (1 + dt * d / j) ** n, rel=1e-12)
    assert motor.state().velocity == pytest.approx(5.0 * math.exp(-d * n * dt / j), rel=1e-3)


def test_constant_torque_accelerates_like_j_thetadd_equals_tau():
    motor = cag.Motor(frictionless(velocity_limit=1e3))
    motor.reset(0.0)
    run(motor, 1.0, 0.0, 1e-4, 1000)  # 0.1 s
    assert motor.state().velocity == pytest.approx(1.0 / 0.0233 * 0.1, rel=1e-9)
    assert motor.state().position == pytest.approx(0.5 / 0.0233 * 0.01, rel=2e-3)


def test_spring_torque_is_felt_with_opposite_sign():
    """spring_torque is the spring's torque on the link; the motor feels minus it."""
    motor = cag.Motor(frictionless())
    motor.reset(0.0)
    motor.step(0.0, -3.0, 1e-3)  # the link is pulled back -> the motor is pulled forward
    assert motor.state().velocity > 0.0


def test_torque_and_velocity_limits():
    motor = cag.Motor(cag.MotorParams(torque_limit=6.0, velocity_limit=6.0))
    motor.reset(0.0)
    run(motor, 1e12, 0.0, 1e-3, 500)
    assert motor.state().torque == 6.0
    assert motor.state().velocity == pytest.approx(6.0)
    run(motor, -1e300, 0.0, 1e-3, 2000)
    assert motor.state().torque == -6.0 and motor.state().velocity == pytest.approx(-6.0)


def test_end_stops_stop_the_motor_and_never_produce_nan():
    motor = cag.Motor(cag.MotorParams(position_min=-0.5, position_max=0.5, velocity_limit=1e6,
                                      torque_limit=math.inf))
    motor.reset(0.0)
    for torque in (1e300, -1e300, 1e300):
        for _ in range(200):
            motor.step(torque, -1e300, 1e-3)
            s = motor.state()
            assert all(math.isfinite(v) for v in (s.position, s.velocity, s.anchor, s.torque))
            assert -0.5 <= s.position <= 0.5
    motor.step(10.0, 0.0, 1e-3)
    assert motor.state().position == 0.5 and motor.state().velocity == 0.0
    motor.reset(3.0)  # reset outside the stops is clamped
    assert motor.state().position == 0.5


def test_non_finite_step_arguments_leave_the_state_unchanged():
    motor = cag.Motor()
    motor.reset(0.2)
    for args in ((math.nan, 0.0, 1e-3), (0.0, math.inf, 1e-3), (1.0, 0.0, math.nan),
                 (1.0, 0.0, -1e-3), (1.0, 0.0, 0.0)):
        motor.step(*args)
        assert motor.state().position == 0.2 and motor.state().velocity == 0.0


def test_bristle_friction_holds_below_static_torque_and_slips_above():
    """Eq. 8: the anchor follows theta within tau_s / K. A torque below tau_s / 2 (so that even the
    undamped step overshoot of the bristle stays below tau_s) only deflects the bristle; one
    below tau_s slips a few tau_s / K while the lightly damped bristle rings, then holds; one
    above tau_s makes the motor slide."""
    f = cag.FrictionParams(bristle_stiffness=1000.0, bristle_torque=0.02)  # default viscous
    reach = 0.02 / 1000.0
    motor = cag.Motor(cag.MotorParams(friction=f))
    motor.reset(0.0)
    run(motor, 0.009, 0.0, 1e-4, 50000)  # 5 s
    assert motor.state().anchor == 0.0 and abs(motor.state().position) <= reach
    motor.reset(0.0)
    run(motor, 0.019, 0.0, 1e-4, 50000)
    held = motor.state().position
    run(motor, 0.019, 0.0, 1e-4, 50000)
    assert abs(held) < 10 * reach and motor.state().position == pytest.approx(held, abs=1e-9)
    motor.reset(0.0)
    run(motor, 0.05, 0.0, 1e-4, 10000)
    assert motor.state().position > 0.01
    assert abs(motor.state().position - motor.state().anchor) <= reach + 1e-12


def test_bristle_stiffness_is_configurable_and_can_be_switched_off():
    stiff = cag.Motor(cag.MotorParams(friction=cag.FrictionParams(bristle_stiffness=5000.0)))
    off = cag.Motor(cag.MotorParams(friction=cag.FrictionParams(bristle_stiffness=0.0)))
    for m in (stiff, off):
        m.reset(0.0)
        run(m, 0.01, 0.0, 1e-4, 20000)
    assert abs(stiff.state().position) <= 0.02 / 5000.0 + 1e-12
    assert off.state().position > 0.01


def test_coulomb_friction_sets_the_steady_velocity():
    """D v + c tanh(v / v_c) = tau -> v ~ (tau - c) / D for v >> v_c, stable at dt = 1 ms even
    with a sharp tanh (secant-implicit Coulomb)."""
    f = cag.FrictionParams(viscous=0.1, coulomb=0.3, coulomb_velocity=1e-4, bristle_stiffness=0.0)
    motor = cag.Motor(cag.MotorParams(friction=f, velocity_limit=100.0))
    motor.reset(0.0)
    run(motor, 0.5, 0.0, 1e-3, 5000)
    assert motor.state().velocity == pytest.approx((0.5 - 0.3) / 0.1, rel=1e-4)
    assert motor.friction_torque() == pytest.approx(0.5, rel=1e-4)
    motor.reset(0.0)
    velocities = []
    for _ in range(2000):  # below the Coulomb level: stays (nearly) still, no chatter
        motor.step(0.2, 0.0, 1e-3)
        velocities.append(motor.state().velocity)
    assert max(abs(v) for v in velocities) < 1e-3


# ------------------------------------------------------------------ PID


def test_pid_proportional_and_output_limit():
    pid = cag.Pid(cag.PidGains(p=2.0, output_limit=1.0))
    pid.reset(0.0)
    assert pid.update(0.3, 0.0, 1e-3) == pytest.approx(0.6)
    assert pid.update(5.0, 0.0, 1e-3) == 1.0
    assert pid.update(-5.0, 0.0, 1e-3) == -1.0


def test_derivative_on_measurement_has_no_kick_on_reference_steps():
    pid = cag.Pid(cag.PidGains(p=1.0, d=10.0))
    pid.reset(0.0)
    assert pid.update(0.0, 0.0, 1e-3) == 0.0
    assert pid.update(1.0, 0.0, 1e-3) == pytest.approx(1.0)  # only p * step


def test_derivative_filter_is_first_order_with_the_given_time_constant():
    tau_f, dt, slope = 0.01, 1e-4, 2.0
    pid = cag.Pid(cag.PidGains(d=1.0, derivative_filter=tau_f))
    pid.reset(0.0)
    out = [pid.update(0.0, slope * (n + 1) * dt, dt) for n in range(2000)]
    # response to a ramp measurement: -slope (1 - e^{-t/tau_f})
    t = (np.arange(2000) + 1) * dt
    np.testing.assert_allclose(out, -slope * (1 - np.exp(-t / tau_f)), atol=0.01 * slope)
    unfiltered = cag.Pid(cag.PidGains(d=1.0))
    unfiltered.reset(0.0)
    assert unfiltered.update(0.0, slope * dt, dt) == pytest.approx(-slope)


def test_integral_gain_is_outside_the_integral():
    """u_I = i * integral(e dt): the stored integral does not depend on i."""
    a, b = cag.Pid(cag.PidGains(i=1.0)), cag.Pid(cag.PidGains(i=3.0))
    for pid in (a, b):
        pid.reset(0.0)
        for _ in range(100):
            last = pid.update(0.5, 0.0, 1e-2)
    assert a.integral() == pytest.approx(0.5) and b.integral() == pytest.approx(0.5)
    assert last == pytest.approx(3.0 * 0.5)


def test_anti_windup_conditional_integration_and_integral_clamp():
    # conditional integration: saturated for 10 s, the integral does not wind up
    pid = cag.Pid(cag.PidGains(p=1.0, i=1.0, output_limit=1.0))
    pid.reset(0.0)
    for _ in range(1000):
        assert pid.update(5.0, 0.0, 1e-2) == 1.0
    assert pid.integral() == 0.0
    assert pid.update(0.0, 0.0, 1e-2) == 0.0  # recovers immediately when the error vanishes
    # integral clamp: |i * integral| <= integral_limit
    pid = cag.Pid(cag.PidGains(i=2.0, integral_limit=0.5))
    pid.reset(0.0)
    for _ in range(1000):
        u = pid.update(1.0, 0.0, 1e-2)
    assert u == pytest.approx(0.5) and pid.integral() == pytest.approx(0.25)


def test_pid_dt_zero_only_computes():
    pid = cag.Pid(cag.PidGains(p=1.0, i=1.0, d=1.0))
    pid.reset(0.0)
    pid.update(1.0, 0.0, 0.1)
    state = (pid.integral(), pid.derivative())
    u = pid.update(1.0, 0.5, 0.0)
    assert (pid.integral(), pid.derivative()) == state
    assert u == pytest.approx(0.5 + pid.integral() - pid.derivative())


def test_pid_rejects_non_finite_input_and_bad_gains():
    pid = cag.Pid(cag.PidGains(p=1.0))
    with pytest.raises(ValueError):
        pid.update(math.nan, 0.0, 1e-3)
    with pytest.raises(ValueError):
        pid.update(0.0, math.inf, 1e-3)
    for bad in (dict(p=-1.0), dict(d=math.nan), dict(output_limit=0.0), dict(derivative_filter=-1)):
        with pytest.raises(ValueError):
            cag.Pid(cag.PidGains(**bad))
