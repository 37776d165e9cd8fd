"""The 2-DoF qbMove experiments of paper 003 §4.2.2 (Figs. 12 and 13) in the embedded simulation.

The arm is urdf/two_dof_paper.urdf.xacro (0.2 kg links) on the reference sheet's default qbMove
Advanced springs (``springs="default"``: 0.106 / 3.78 N m/rad at the soft / stiff preset; the
springs identified in §4.3, ``"identified"``, are nearly linear and the preset hardly changes
their stiffness, so they cannot show the soft/stiff contrast of Figs. 12-13) in operation mode 6
(motors + PID to the references of the equilibrium and the preset), damping 0.065 N m s/rad and
static friction 0.025 N m, with the soft (0.2 rad) and stiff (0.6 rad) presets of §4.2:

* step (Fig. 12): arm horizontal (no gravity torque), the equilibrium of each joint steps by the
  0.8 rad of §4.1;
* sinusoid (Fig. 13): arm vertical (q = 0 hanging), theta_eq(t) = H sin(w t) on each joint, eq. 12,
  H = 0.8 rad, w = 0.8 rad/s, open loop.

Recorded per joint: the commanded equilibrium, the equilibrium the motors realise,
(theta_1 + theta_2) / 2 (the reference map of the qbMove, reference sheet), the link position and
the joint stiffness.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np

from compliant_actuator_gazebo.description import load_description
from compliant_actuator_gazebo.engines import Simulation, make_simulation
from compliant_actuator_gazebo.resources import package_file
from compliant_actuator_gazebo.experiments.step_metrics import StepMetrics, step_metrics
from compliant_actuator_gazebo.errors import CompliantError

JOINTS = ("joint_1", "joint_2")
PRESETS = {"soft": 0.2, "stiff": 0.6}          # §4.2: theta_sr = 0.2 rad / 0.6 rad
EXPERIMENTS = {"step": "horizontal", "sinusoid": "vertical"}


@dataclass
class TwoDofRun:
    """One experiment with one preset: (T,) time and (T, 2) traces."""

    experiment: str
    behaviour: str
    preset: float
    springs: str               # "default" or "identified" (the xacro's springs)
    rest_offset: np.ndarray    # (2,) rad, unloaded link rest minus equilibrium (rest_offset())
    time: np.ndarray           # s (the step at 0; the sinusoid starts at 0)
    command: np.ndarray        # rad, commanded equilibrium
    equilibrium: np.ndarray    # rad, realised by the motors, (theta_1 + theta_2) / 2
    position: np.ndarray       # rad, link
    stiffness: np.ndarray      # N m/rad


@dataclass(frozen=True)
class SinusoidMetrics:
    """Tracking of eq. 12 by one joint over the last full period."""

    equilibrium_max_error: float   # rad, max |realised equilibrium - command|
    link_max_error: float          # rad, max |q - command|
    link_rms_error: float          # rad
    link_amplitude: float          # rad, of the fitted first harmonic
    link_offset: float             # rad, mean of the fit (gravity sag < 0 on a lifted arm)
    link_lag: float                # s, phase lag of the first harmonic / w

    def as_dict(self) -> dict:
        return asdict(self)


def run_two_dof(experiment: str, behaviour: str, duration: Optional[float] = None, amplitude: float = 0.8,
                omega: float = 0.8, settle: float = 0.5, physics_rate: float = 1000.0,
                sample_rate: float = 200.0, springs: str = "default", engine: str = "embedded") -> TwoDofRun:
    """Run the ``step`` or ``sinusoid`` experiment with the ``soft`` or ``stiff`` preset.

    ``duration`` defaults to 4 s after the step, or two periods of eq. 12 (2 * 2 pi / w)."""
    if experiment not in EXPERIMENTS or behaviour not in PRESETS:
        raise CompliantError(f"unknown experiment/behaviour {experiment}/{behaviour}")
    if duration is None:
        duration = 4.0 if experiment == "step" else 4.0 * math.pi / omega
    args = {"orientation": EXPERIMENTS[experiment], "mode": 6, "springs": springs}
    description = load_description(package_file("urdf", "two_dof_paper.urdf.xacro"), args)
    preset = PRESETS[behaviour]
    every = max(1, int(round(physics_rate / sample_rate)))
    inputs = {j: {"stiffness_preset": preset, "equilibrium_position": 0.0} for j in JOINTS}
    rows = []
    with make_simulation(engine, description, physics_rate, sample_rate=sample_rate,
                         initial_inputs=inputs) as sim:
        start = 0.0
        if experiment == "step":
            sim.step(int(round(settle * physics_rate)))
            start = settle
        for k in range(int(round(duration * sample_rate)) + 1):
            t = sim.time - start
            if experiment == "step":
                command = amplitude if t >= 0.0 else 0.0
                if k == 0:                                  # one sample at rest before the step
                    rows.append(_sample(sim, t - 1e-9, 0.0))
            else:
                command = amplitude * math.sin(omega * t)   # eq. 12
            for joint in JOINTS:
                sim.set_input(joint, "equilibrium_position", command)
            rows.append(_sample(sim, t, command))
            sim.step(every)
        unstable = sim.stability_report()
    if unstable:
        raise RuntimeError(f"2-DoF {experiment}/{behaviour}: {'; '.join(unstable)}")
    data = np.array(rows)                                     # (T, 1 + 4 * 2)
    rest = [rest_offset(description.spec(j).make_joint().actuator(), preset) for j in JOINTS]
    return TwoDofRun(experiment, behaviour, preset, springs, np.array(rest), data[:, 0], data[:, 1:3], data[:, 3:5],
                     data[:, 5:7], data[:, 7:9])


def rest_offset(actuator, preset: float) -> float:
    """q - theta_eq where the spring torque t1 + t2 vanishes (the unloaded link's rest): 0 for
    symmetric springs, -0.69 p for the identified joint_1 (reference map theta_{1,2} = eq +- p)."""
    refs = actuator.references(0.0, preset)

    def torque(x: float) -> float:
        return actuator.torques(x, refs.theta1, refs.theta2).link()

    lo, hi = -actuator.max_deflection(), actuator.max_deflection()
    if torque(lo) * torque(hi) > 0.0:
        raise CompliantError(f"no rest position within +-{hi} rad of the equilibrium")
    for _ in range(60):                     # bisection: the torque decreases with x
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if torque(mid) > 0.0 else (lo, mid)
    return 0.5 * (lo + hi)


def _sample(sim: Simulation, t: float, command: float) -> list[float]:
    states = [sim.state(j) for j in JOINTS]
    return ([t, command, command]
            + [0.5 * (s.output.motor1.position + s.output.motor2.position) for s in states]
            + [s.q for s in states] + [s.output.stiffness for s in states])


def step_figures(run: TwoDofRun) -> dict[str, dict[str, StepMetrics]]:
    """Step metrics (step_metrics.py) of the link and of the realised equilibrium, per joint."""
    return {joint: {"link": step_metrics(run.time, run.position[:, j], run.command[-1, j]),
                    "equilibrium": step_metrics(run.time, run.equilibrium[:, j], run.command[-1, j])}
            for j, joint in enumerate(JOINTS)}


def sinusoid_figures(run: TwoDofRun, omega: float = 0.8) -> dict[str, SinusoidMetrics]:
    """Tracking of eq. 12 per joint over the last full period of the run."""
    period = 2.0 * math.pi / omega
    last = run.time >= run.time[-1] - period
    if run.time[-1] < period:
        raise CompliantError(f"the run ({run.time[-1]:.2f} s) is shorter than one period ({period:.2f} s)")
    t = run.time[last]
    basis = np.column_stack([np.sin(omega * t), np.cos(omega * t), np.ones_like(t)])
    out = {}
    for j, joint in enumerate(JOINTS):
        cmd, q = run.command[last, j], run.position[last, j]
        (a, b, c), *_ = np.linalg.lstsq(basis, q, rcond=None)
        # q ~ A sin(w t - phi) + c with A cos(phi) = a, -A sin(phi) = b
        phase = math.atan2(-b, a)
        out[joint] = SinusoidMetrics(
            equilibrium_max_error=float(np.max(np.abs(run.equilibrium[last, j] - cmd))),
            link_max_error=float(np.max(np.abs(q - cmd))),
            link_rms_error=float(np.sqrt(np.mean((q - cmd) ** 2))),
            link_amplitude=float(math.hypot(a, b)), link_offset=float(c), link_lag=phase / omega)
    return out
