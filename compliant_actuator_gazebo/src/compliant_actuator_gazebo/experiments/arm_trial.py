"""One ILC trial (paper 003 §4.3) on a robot of the embedded simulation: the arm starts at rest,
its joints follow an equilibrium trajectory in operation mode 6 (or 3) with a fixed stiffness
preset, and the link positions are sampled on the trajectory's time grid. The spring deflections
d_i = q - theta_i of each trial are kept, to show where the springs saturate (|d_i| at the
actuator's max_deflection: the spring torque stops growing, reference sheet)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from compliant_actuator_gazebo.description import RobotDescription
from compliant_actuator_gazebo.embedded import EmbeddedSimulation
from compliant_actuator_gazebo.errors import CompliantError


@dataclass
class EmbeddedTrial:
    """Callable (T, joints) equilibria -> (T, joints) link positions, for :func:`ilc.run_ilc`.

    ``sample_rate`` is the rate of the trajectory grid (the equilibrium is held between
    samples, as a topic published at that rate would be); ``preset`` the stiffness preset of
    every joint (§4.3: 0.2 rad).
    """

    description: RobotDescription
    joints: Sequence[str]
    preset: float
    sample_rate: float = 100.0
    physics_rate: float = 1000.0
    initial_positions: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ratio = self.physics_rate / self.sample_rate
        if abs(ratio - round(ratio)) > 1e-9 or ratio < 1:
            raise CompliantError("physics_rate must be a multiple of sample_rate")
        self._every = int(round(ratio))
        self._sim = EmbeddedSimulation(self.description, physics_rate=self.physics_rate)
        self.trials = 0
        self.max_deflection = np.array([self.description.spec(j).make_joint().actuator().max_deflection()
                                        for j in self.joints])
        self.deflections = np.empty((0, len(self.joints), 2))   # (T, joints, springs), last trial
        self.saturation_history: list[np.ndarray] = []          # per trial: (joints,) fraction

    def saturated(self) -> np.ndarray:
        """(T, joints) True where a spring of the joint was at its deflection limit (last trial)."""
        return np.any(np.abs(self.deflections) >= self.max_deflection[None, :, None] - 1e-9, axis=2)

    def __call__(self, equilibria: np.ndarray) -> np.ndarray:
        equilibria = np.asarray(equilibria, dtype=float)
        if equilibria.ndim != 2 or equilibria.shape[1] != len(self.joints):
            raise CompliantError(f"equilibria must be (T, {len(self.joints)}), got {equilibria.shape}")
        sim = self._sim
        for joint, value in zip(self.joints, equilibria[0]):   # before reset: the motors then
            sim.set_input(joint, "stiffness_preset", self.preset)  # start at rest at these
            sim.set_input(joint, "equilibrium_position", value)    # references
        sim.reset(dict(self.initial_positions))
        out = np.empty_like(equilibria)
        deflections = np.empty((len(equilibria), len(self.joints), 2))
        for k, row in enumerate(equilibria):
            for joint, value in zip(self.joints, row):
                if not sim.set_input(joint, "equilibrium_position", value):
                    raise CompliantError(f"non-finite equilibrium for {joint} at sample {k}")
            for j, joint in enumerate(self.joints):
                s = sim.state(joint)
                out[k, j] = s.q
                deflections[k, j] = (s.q - s.output.motor1.position, s.q - s.output.motor2.position)
            sim.step(self._every)
        self.deflections = deflections
        self.saturation_history.append(np.mean(self.saturated(), axis=0))
        self.trials += 1
        return out

    def close(self) -> None:
        self._sim.close()
