"""One ILC trial (paper 003 §4.3) on a robot of the embedded simulation: the arm starts at rest,
its joints follow an equilibrium trajectory in operation mode 6 (or 3) with a fixed stiffness
preset, and the link positions are sampled on the trajectory's time grid."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from compliant_actuator_gazebo.description import RobotDescription
from compliant_actuator_gazebo.embedded import EmbeddedSimulation


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
            raise ValueError("physics_rate must be a multiple of sample_rate")
        self._every = int(round(ratio))
        self._sim = EmbeddedSimulation(self.description, physics_rate=self.physics_rate)
        self.trials = 0

    def __call__(self, equilibria: np.ndarray) -> np.ndarray:
        equilibria = np.asarray(equilibria, dtype=float)
        if equilibria.ndim != 2 or equilibria.shape[1] != len(self.joints):
            raise ValueError(f"equilibria must be (T, {len(self.joints)}), got {equilibria.shape}")
        sim = self._sim
        for joint, value in zip(self.joints, equilibria[0]):   # before reset: the motors then
            sim.set_input(joint, "stiffness_preset", self.preset)  # start at rest at these
            sim.set_input(joint, "equilibrium_position", value)    # references
        sim.reset(dict(self.initial_positions))
        out = np.empty_like(equilibria)
        for k, row in enumerate(equilibria):
            for joint, value in zip(self.joints, row):
                if not sim.set_input(joint, "equilibrium_position", value):
                    raise ValueError(f"non-finite equilibrium for {joint} at sample {k}")
            out[k] = [sim.state(joint).q for joint in self.joints]
            sim.step(self._every)
        self.trials += 1
        return out

    def close(self) -> None:
        self._sim.close()
