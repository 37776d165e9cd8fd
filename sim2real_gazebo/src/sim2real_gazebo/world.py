"""The world file gzserver loads: an empty world with the physics a run asks for (no ground, no
model:// include, so nothing is downloaded). The robot comes from the ROS API plugin's ~spawn."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class WorldConfig:
    """``physics_rate`` steps per simulated second (ODE, ``max_step_size`` = 1 / rate);
    ``real_time_factor`` 1 paces the world against wall time, 0 runs it as fast as it can
    (real_time_update_rate 0); ``solver`` ODE's "world" (direct, exact for small chains) or
    "quick" (iterative, Gazebo's default)."""

    physics_rate: float = 1000.0
    real_time_factor: float = 1.0
    gravity: float = 9.81
    solver: str = "world"
    iterations: int = 50

    def __post_init__(self) -> None:
        if not (math.isfinite(self.physics_rate) and self.physics_rate > 0.0):
            raise ValueError(f"physics_rate must be a finite number > 0, got {self.physics_rate}")
        if not (math.isfinite(self.real_time_factor) and self.real_time_factor >= 0.0):
            raise ValueError(f"real_time_factor must be a finite number >= 0, got "
                             f"{self.real_time_factor}")
        if not math.isfinite(self.gravity):
            raise ValueError(f"gravity must be finite, got {self.gravity}")
        if self.solver not in ("world", "quick"):
            raise ValueError(f"solver must be 'world' or 'quick', got {self.solver!r}")

    def sdf(self) -> str:
        """The world as SDF 1.6 text."""
        update_rate = self.physics_rate * self.real_time_factor
        return f"""<?xml version="1.0"?>
<sdf version="1.6">
  <world name="default">
    <gravity>0 0 {-self.gravity!r}</gravity>
    <physics name="ode" type="ode" default="true">
      <max_step_size>{1.0 / self.physics_rate!r}</max_step_size>
      <real_time_factor>{self.real_time_factor if self.real_time_factor > 0 else 1.0!r}</real_time_factor>
      <real_time_update_rate>{update_rate!r}</real_time_update_rate>
      <ode><solver><type>{self.solver}</type><iters>{self.iterations}</iters></solver></ode>
    </physics>
  </world>
</sdf>
"""
