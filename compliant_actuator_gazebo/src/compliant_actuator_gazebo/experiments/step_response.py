"""Step responses of the 1-DoF structures of paper 003 Fig. 8 (§4.1) in the embedded simulation
or in Gazebo (``engine``).

Each structure is urdf/one_dof.urdf.xacro (0.2 kg at 0.04 m from the axis, under gravity) on one
actuator in operation mode 3 (compliance model driven by the equilibrium position and the
stiffness preset, no motor dynamics): the equilibrium steps by 0.8 rad from the hanging pose,
with the soft and the stiff preset of §4.1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from compliant_actuator_gazebo.description import load_description
from compliant_actuator_gazebo.engines import make_simulation
from compliant_actuator_gazebo.resources import package_file
from compliant_actuator_gazebo.experiments.step_metrics import StepMetrics, step_metrics
from compliant_actuator_gazebo.errors import CompliantError

ACTUATORS = ("sea", "awas", "bavs", "qbmove")      # Fig. 8 panels (i)-(iv)
BEHAVIOURS = ("soft", "stiff")


@dataclass(frozen=True)
class Preset:
    """One compliant behaviour of §4.1: the stiffness preset input, or for the SEA (which has
    none) its spring constant k as a description parameter."""

    preset: float = 0.0
    description_args: tuple[tuple[str, str], ...] = ()
    label: str = ""


# §4.1: "k = 200 Nm/rad for the SEA; sigma = 0.005 m for the AwAS II; theta_sr = 0.001 rad for
# the BAVS and theta_sr = 0.2 rad for the qbMove Advanced [soft]; k = 400 Nm/rad, sigma = 0.04 m,
# theta_sr = 0.22 rad, theta_sr = 0.6 rad [stiff]".
FIG8_PRESETS: dict[str, dict[str, Preset]] = {
    "sea": {"soft": Preset(0.0, (("k", "200"),), "k = 200 N m/rad"),
            "stiff": Preset(0.0, (("k", "400"),), "k = 400 N m/rad")},
    "awas": {"soft": Preset(0.005, (), "pivot 0.005 m"), "stiff": Preset(0.04, (), "pivot 0.04 m")},
    "bavs": {"soft": Preset(0.001, (), "preset 0.001 rad"), "stiff": Preset(0.22, (), "preset 0.22 rad")},
    "qbmove": {"soft": Preset(0.2, (), "preset 0.2 rad"), "stiff": Preset(0.6, (), "preset 0.6 rad")},
}


@dataclass
class StepResponse:
    actuator: str
    behaviour: str
    preset: Preset
    physics_rate: float
    time: np.ndarray          # s, from the step
    position: np.ndarray      # rad, link
    stiffness: np.ndarray     # N m/rad, the joint's stiffness sigma along the response
    metrics: StepMetrics


def run_step_response(actuator: str, behaviour: str, amplitude: float = 0.8,
                      duration: float = 0.6, settle: float = 0.5, physics_rate: float = 20000.0,
                      sample_rate: float = 10000.0, xacro_path: Optional[str] = None,
                      engine: str = "embedded") -> StepResponse:
    """Hold the equilibrium at 0 for ``settle`` s, step it to ``amplitude`` and record the link.

    ``physics_rate`` defaults to 20 kHz: the stiff AwAS-II (sigma ~ 3.6e3 N m/rad on a link of
    3.3e-4 kg m^2) needs omega dt < 2 (embedded.EmbeddedSimulation.stability_report), and Gazebo's
    ODE loses energy at omega dt = 0.33 (10 kHz: overshoot 77 % against the converged 84 %).
    """
    if actuator not in FIG8_PRESETS or behaviour not in BEHAVIOURS:
        raise CompliantError(f"unknown actuator/behaviour {actuator}/{behaviour}")
    preset = FIG8_PRESETS[actuator][behaviour]
    args = {"actuator": actuator, "mode": 3, **dict(preset.description_args)}
    description = load_description(xacro_path or package_file("urdf", "one_dof.urdf.xacro"), args)
    every = max(1, int(round(physics_rate / sample_rate)))
    with make_simulation(engine, description, physics_rate, sample_rate=sample_rate) as sim:
        joint = description.compliant[0].joint
        sim.set_input(joint, "stiffness_preset", preset.preset)
        sim.set_input(joint, "equilibrium_position", 0.0)
        sim.step(int(round(settle * physics_rate)))
        sim.set_input(joint, "equilibrium_position", amplitude)
        times, positions, stiffness = [], [], []
        for _ in range(int(round(duration * sample_rate))):
            s = sim.state(joint)
            times.append(s.time - settle)
            positions.append(s.q)
            stiffness.append(s.output.stiffness)
            sim.step(every)
        unstable = sim.stability_report()
    if unstable:
        raise RuntimeError(f"{actuator}/{behaviour}: {'; '.join(unstable)}")
    t, q = np.asarray(times), np.asarray(positions)
    return StepResponse(actuator, behaviour, preset, physics_rate, t, q, np.asarray(stiffness),
                        step_metrics(t, q, amplitude))
