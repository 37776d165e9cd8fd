"""The simulator's configuration with identified parameters: what an identification (diffnea_ros,
paper 002) hands back to the simulator. This package owns the simulator's config format, so an
identifier writes it through :func:`write_identified_config`, never by editing the YAML itself.

The identified config is the shipped ``config/sim/panda_sim.yaml`` with the identified URDF
(inertials, viscous damping), the identified sigmoid joint friction (applied like the robot's,
Gaz et al.'s model), the identified torque-sensor offset (the reported torques carry it, as the
robot's sensor does; no noise) and the physics rate the simulator's PID is stable at on that
model (:func:`~panda_sim2real.stability.stable_physics_rate`)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import yaml

from panda_sim2real.errors import ConfigError
from panda_sim2real.robot_config import SIM_CONFIG_FILE, RobotConfig
from sim2real_checks import atomic_path

IDENTIFIED_LABEL = "simulation (identified)"
FRICTION_KEYS = ("phi1", "phi2", "phi3")


@dataclass(frozen=True)
class JointIdentification:
    """What an identification found at the joints besides the URDF, in the limits' joint order:
    the sigmoid friction (phi1, phi2, phi3) and the torque sensor's offset [N m] per joint."""

    friction: Optional[Sequence[Sequence[float]]] = None
    offset: Optional[Sequence[float]] = None


def identified_sim_config(urdf: str, physics_rate: float, joints: JointIdentification,
                      base: str = SIM_CONFIG_FILE) -> dict[str, Any]:
    """The simulator's configuration mapping (``base``'s schema) with the identified model."""
    with open(base, encoding="utf-8") as f:
        raw = yaml.safe_load(f)
    raw.update(urdf=os.path.abspath(urdf), physics_rate=float(physics_rate), label=IDENTIFIED_LABEL)
    if joints.friction:
        raw["friction"] = {name: [float(phi[k]) for phi in joints.friction]
                           for k, name in enumerate(FRICTION_KEYS)}
    if joints.offset:
        raw["torque_sensor"] = {"offset": [float(b) for b in joints.offset],
                                "noise_std": [0.0] * len(joints.offset)}
    return {k: v for k, v in raw.items() if v is not None}   # a launch file loads it: no null


def stable_rate(urdf: str, joints: JointIdentification, configurations: np.ndarray,
                base: str = SIM_CONFIG_FILE) -> float:
    """The lowest physics rate at which the simulator's PID is stable on the identified model,
    over ``configurations`` (joint positions, one row each)."""
    from panda_sim2real.stability import stable_physics_rate
    config = RobotConfig.from_dict(identified_sim_config(urdf, 1000.0, joints, base), "identified model")
    return stable_physics_rate(config, configurations)


def write_identified_config(urdf: str, joints: JointIdentification, out: str,
                            physics_rate: Optional[float] = None,
                            configurations: Optional[np.ndarray] = None,
                            source: str = "an identification") -> float:
    """Write the identified config to ``out`` if the simulator accepts it (else ConfigError,
    nothing written); ``physics_rate`` None: :func:`stable_rate` over ``configurations``.
    Returns the physics rate written."""
    if physics_rate is None:
        if configurations is None:
            raise ConfigError("an identified config needs a physics rate or the configurations "
                              "to find a stable one at")
        physics_rate = stable_rate(urdf, joints, configurations)
    raw = identified_sim_config(urdf, physics_rate, joints)
    text = (f"# The simulator with the model identified by {source}\n"
            f"# (panda_sim2real config/sim/panda_sim.yaml otherwise).\n"
            + yaml.safe_dump(raw, sort_keys=False, default_flow_style=None))
    with atomic_path(out) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        RobotConfig.from_yaml(tmp)      # refuse what the simulator would refuse
    return float(physics_rate)
