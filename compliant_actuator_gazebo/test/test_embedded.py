"""Embedded simulation (PyBullet + core) against closed-form physics; no ROS master needed.

Convention of the example robots: axis y horizontal, q = 0 hanging down, so the Fig. 8 link
(m = 0.2 kg at l = 0.04 m) feels the gravity torque -m g l sin q. Static positions are the roots of
the torque balance written here from the reference sheet, independently of the core.
"""
import math
import os

import pytest

from compliant_actuator_gazebo.description import load_description, parse_description
from compliant_actuator_gazebo.embedded import EmbeddedSimulation

URDF = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "urdf")
MGL = 0.2 * 9.81 * 0.04
INERTIA = 0.2 * 0.04 ** 2 + 0.2 * (3 * 0.01 ** 2 + 0.02 ** 2) / 12   # one_dof link about its axis


def one_dof(actuator="sea", **args):
    return load_description(os.path.join(URDF, "one_dof.urdf.xacro"), {"actuator": actuator, **args})


def bisect(f, lo, hi):
    """Root of a decreasing f on [lo, hi]."""
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) > 0.0 else (lo, mid)
    return 0.5 * (lo + hi)


# Link torque of each model at link position q for (equilibrium, preset), reference sheet.
def sea(q, eq, preset, k=10.0):
    return -k * (q - eq)


def qbmove(q, eq, preset, k=0.0019, a=8.9992):
    return -k * math.sinh(a * (q - eq - preset)) - k * math.sinh(a * (q - eq + preset))


def bavs(q, eq, preset, a=1.21e-6, b=2.38e-6, k=1.6e5, ke=8.71):
    d1, d2 = eq + preset - q, eq - preset - q
    return (k * (b * math.exp(ke * d1) - a * math.exp(-ke * d1))
            + k * (a * math.exp(ke * d2) - b * math.exp(-ke * d2)))


def awas(q, eq, preset, ks=10.0, lever=0.05, r_t=0.015):
    d = q - eq
    return -2 * ks * ((lever / r_t) * preset / (lever - preset)) ** 2 * math.sin(d) * math.cos(d)


@pytest.mark.parametrize("k, eq", [(1.0, 0.5), (10.0, 0.5), (1.0, math.pi / 2), (10.0, 2.0)])
def test_sea_static_deflection_under_gravity(k, eq):
    """k (eq - q) = m g l sin q. Tolerance 1e-6 rad (<= 1e-4 of the deflections here, 3e-3 to
    0.08 rad): at rest PyBullet's semi-implicit step and the core's update are exactly at the
    torque balance, so only the decayed transient remains (slowest pole >= 18/s over 4 s)."""
    with EmbeddedSimulation(one_dof("sea", k=k)) as sim:
        sim.set_input("joint_1", "equilibrium_position", eq)
        sim.step(4000)
        s = sim.state("joint_1")
    expected = bisect(lambda q: sea(q, eq, 0.0, k) - MGL * math.sin(q), 0.0, math.pi)
    assert abs(eq - expected) > 2e-3                       # a real deflection
    assert s.q == pytest.approx(expected, abs=1e-6)
    assert s.output.link_torque == pytest.approx(MGL * math.sin(s.q), abs=1e-6)
    assert s.output.stiffness == pytest.approx(k)
    assert s.output.deflection == pytest.approx(s.q - eq, abs=1e-9)


@pytest.mark.parametrize("actuator, model, preset", [
    ("sea", sea, 0.0), ("qbmove", qbmove, 0.6), ("bavs", bavs, 0.1), ("awas", awas, 0.02)])
def test_mode3_step_response_reaches_the_equilibrium(actuator, model, preset):
    """Paper Fig. 8: a 0.8 rad step of the equilibrium in mode 3; the link comes to rest at the
    torque balance of the model (1e-5 rad) and moved most of the way within 0.3 s."""
    with EmbeddedSimulation(one_dof(actuator),
                            initial_inputs={"joint_1": {"stiffness_preset": preset}}) as sim:
        sim.set_input("joint_1", "equilibrium_position", 0.8)
        sim.step(300)
        early = sim.state("joint_1").q
        sim.step(2700)
        s = sim.state("joint_1")
    expected = bisect(lambda q: model(q, 0.8, preset) - MGL * math.sin(q), -0.5, 1.5)
    assert 0.5 < expected < 0.8
    assert s.q == pytest.approx(expected, abs=1e-5)
    assert abs(s.qd) < 1e-4
    assert abs(early - expected) < 0.1 * expected


def passive_pair(damping=0.0, friction=0.0):
    """A compliant SEA pendulum and a passive pendulum (no plugin block) on one base."""
    text = load_description(os.path.join(URDF, "one_dof.urdf.xacro"), {"actuator": "sea"}).urdf
    passive = f"""<link name="free_link"><inertial><origin xyz="0 0 -0.04"/><mass value="0.2"/>
      <inertia ixx="1.2e-5" iyy="1.2e-5" izz="1e-5" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="free" type="revolute"><parent link="base_link"/><child link="free_link"/>
      <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="100"/>
      <dynamics damping="{damping}" friction="{friction}"/></joint></robot>"""
    return parse_description(text.replace("</robot>", passive))


def test_passive_joint_coulomb_friction_dissipates_friction_times_path():
    """A joint without plugin is free; its URDF friction f (ignored by PyBullet itself) acts as a
    Coulomb friction: released at q0 = 1 it stops at q1 with m g l (cos q1 - cos q0) = f (q0 - q1)
    (it stops before the bottom for f = 0.05 > m g l sin q1) and stays there."""
    f = 0.05
    with EmbeddedSimulation(passive_pair(friction=f), initial_positions={"free": 1.0}) as sim:
        assert sim.joints == ("joint_1",) and sim.movable_joints == ("joint_1", "free")
        sim.step(1500)
        q1, qd1 = sim.joint_positions()["free"]
        sim.step(500)
        q2, _ = sim.joint_positions()["free"]
    expected = bisect(lambda q: f * (1.0 - q) - MGL * (math.cos(q) - math.cos(1.0)), 0.05, 0.99)
    assert q1 == pytest.approx(expected, abs=2e-3)
    assert abs(qd1) < 1e-6 and q2 == q1


def test_urdf_damping_is_applied_once():
    """Overdamped creep of a passive pendulum: c qd = -m g l sin q (inertia term < 1e-3 here).
    PyBullet would apply the URDF damping itself; this checks it is neither lost nor doubled."""
    c = 0.2
    with EmbeddedSimulation(passive_pair(damping=c), initial_positions={"free": 1.0}) as sim:
        sim.step(200)
        q, qd = sim.joint_positions()["free"]
    assert qd == pytest.approx(-MGL * math.sin(q) / c, rel=1e-2)


def test_state_calls_do_not_change_the_trajectory():
    """state() brings the cores to the current time; the next step then only recomputes, so
    observing the simulation does not change it (mode 6: motor dynamics + PID)."""
    def run(observe):
        with EmbeddedSimulation(one_dof("qbmove", mode=6),
                                initial_inputs={"joint_1": {"stiffness_preset": 0.4}}) as sim:
            sim.set_input("joint_1", "equilibrium_position", 0.8)
            for i in range(400):
                sim.step()
                if observe and i % 7 == 0:
                    sim.state("joint_1")
            s = sim.state("joint_1")
            return s.q, s.qd, s.output.motor1.position, s.output.motor2.position
    assert run(False) == run(True)


def test_inputs_and_bad_values():
    with EmbeddedSimulation(one_dof("qbmove")) as sim:
        assert sim.set_input("joint_1", "equilibrium_position", 0.3)
        assert not sim.set_input("joint_1", "equilibrium_position", float("nan"))
        assert not sim.set_input("joint_1", "external_torque", float("inf"))
        assert sim.input("joint_1", "equilibrium_position") == 0.3
        assert sim.set_input("joint_1", "stiffness_preset", 5.0)       # beyond max_deflection
        assert sim.clamped_preset("joint_1") and sim.input("joint_1", "stiffness_preset") == 0.8
        with pytest.raises(KeyError, match="not a compliant joint"):
            sim.set_input("joint_9", "equilibrium_position", 0.0)
        with pytest.raises(ValueError, match="unknown input 'equilibrium'"):
            sim.set_input("joint_1", "equilibrium", 0.0)
        sim.step(500)
        s = sim.state("joint_1")
        assert all(math.isfinite(v) for v in (s.q, s.qd, s.output.link_torque))
    with pytest.raises(ValueError, match="must be finite"):
        EmbeddedSimulation(one_dof(), initial_inputs={"joint_1": {"equilibrium_position": math.nan}})
    with pytest.raises(KeyError, match="unknown or fixed joints"):
        EmbeddedSimulation(one_dof(), initial_positions={"joint_7": 0.1})
    with pytest.raises(ValueError, match="physics_rate"):
        EmbeddedSimulation(one_dof(), physics_rate=0.0)


def test_external_torque_deflects_the_link():
    """Mode 3, SEA k = 10 at eq = 0: tau_ext = k (q - eq) + m g l sin q at rest."""
    with EmbeddedSimulation(one_dof("sea")) as sim:
        sim.set_input("joint_1", "external_torque", 0.5)
        sim.step(3000)
        s = sim.state("joint_1")
    expected = bisect(lambda q: 0.5 + sea(q, 0.0, 0.0) - MGL * math.sin(q), -1.0, 1.5)
    assert s.q == pytest.approx(expected, abs=1e-6) and expected > 0.04


def test_awas_preset_at_the_singularity_is_clamped_and_reported():
    """AwAS-II pivot at L: clamped below L (finite stiffness), and stability_report names the
    joint whose stiffness the 1 kHz step cannot resolve; nothing becomes NaN."""
    with EmbeddedSimulation(one_dof("awas"), initial_inputs={"joint_1": {"stiffness_preset": 0.01}}) as sim:
        assert sim.stability_report() == []
        sim.set_input("joint_1", "equilibrium_position", 0.3)
        sim.step(1000)
        assert sim.set_input("joint_1", "stiffness_preset", 0.05)
        assert sim.clamped_preset("joint_1") and sim.input("joint_1", "stiffness_preset") < 0.05
        report = sim.stability_report()     # right after the change, before a step
        assert len(report) == 1 and "joint 'joint_1'" in report[0] and "omega dt" in report[0]
        sim.step(200)
        s = sim.state("joint_1")
        assert all(math.isfinite(v) for v in (s.q, s.qd, s.output.link_torque, s.output.stiffness))


def test_stiffness_and_inertia_of_the_report():
    """The report's omega dt uses the joint's mass-matrix entry: SEA k = 4 I / dt^2 sits at the
    stability limit omega dt = 2."""
    k = 4 * INERTIA / 1e-6
    with EmbeddedSimulation(one_dof("sea", k=k)) as sim:
        report = sim.stability_report(limit=1.99)
        assert len(report) == 1 and "omega dt = 2.00" in report[0]
        assert sim.stability_report(limit=2.01) == []


def test_two_dof_arm_holds_itself_horizontal_without_saturation():
    """two_dof_qbmove: mode 6, preset 0.2 rad, equilibrium of joint 1 at 2.0 rad lifts link 1 to
    about horizontal; every spring deflection stays inside max_deflection (0.8 rad)."""
    with EmbeddedSimulation(load_description(os.path.join(URDF, "two_dof_qbmove.urdf.xacro")),
                            initial_inputs={j: {"stiffness_preset": 0.2}
                                            for j in ("joint_1", "joint_2")}) as sim:
        sim.set_input("joint_1", "equilibrium_position", 2.0)
        sim.step(4000)
        s1, s2 = sim.state("joint_1"), sim.state("joint_2")
    assert s1.q > 1.3 and abs(s2.q) < 0.1
    for s in (s1, s2):
        d1, d2 = s.q - s.output.motor1.position, s.q - s.output.motor2.position
        assert max(abs(d1), abs(d2)) < 0.75, (s.joint, d1, d2)


def test_five_dof_arm_runs_and_times_the_core():
    pre = {"joint_1": 0.3, "joint_3": 0.3, "joint_4": 0.1, "joint_5": 0.5}
    with EmbeddedSimulation(load_description(os.path.join(URDF, "five_dof_arm.urdf.xacro")),
                            initial_inputs={j: {"stiffness_preset": p} for j, p in pre.items()}) as sim:
        assert sim.stability_report() == []
        targets = dict(zip(sim.joints, (0.5, 0.4, 0.6, 0.3, 0.5)))
        for joint, eq in targets.items():
            sim.set_input(joint, "equilibrium_position", eq)
        sim.step(3000)
        assert 0.0 < sim.core_seconds < sim.step_seconds
        for joint, eq in targets.items():
            s = sim.state(joint)
            assert abs(s.q - eq) < 0.2 and abs(s.qd) < 0.05, (joint, s.q, s.qd)
