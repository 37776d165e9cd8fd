"""The engines an experiment of this package runs on: the embedded simulation (PyBullet,
embedded.py) or Gazebo 11 (gazebo_engine.py), behind one interface (``set_input``, ``step``,
``state``, ``time``, ``stability_report``, a context manager), and how results of each are
labelled."""
from __future__ import annotations

from typing import Mapping, Optional, Union

from compliant_actuator_gazebo.description import RobotDescription
from compliant_actuator_gazebo.embedded import EmbeddedSimulation
from compliant_actuator_gazebo.gazebo_engine import GazeboSimulation
from compliant_actuator_gazebo.errors import CompliantError

ENGINES = ("embedded", "gazebo")
LABELS = {"embedded": "embedded simulation (PyBullet)", "gazebo": "Gazebo 11 simulation (ODE)"}
"""How results of each engine are labelled (simulation, not a real robot)."""

Simulation = Union[EmbeddedSimulation, GazeboSimulation]


def make_simulation(engine: str, description: RobotDescription, physics_rate: float,
                    sample_rate: Optional[float] = None,
                    initial_inputs: Optional[Mapping[str, Mapping[str, float]]] = None) -> Simulation:
    """``description`` on ``engine`` at ``physics_rate``; Gazebo publishes the states at
    ``sample_rate`` (the embedded simulation's are read at any step)."""
    if engine == "embedded":
        return EmbeddedSimulation(description, physics_rate=physics_rate, initial_inputs=initial_inputs)
    if engine == "gazebo":
        return GazeboSimulation(description, physics_rate=physics_rate, sample_rate=sample_rate,
                                initial_inputs=initial_inputs)
    raise CompliantError(f"unknown engine {engine!r} (engines: {', '.join(ENGINES)})")
