"""Physics randomisation of the simulated platform: cube mass and friction within published
ranges (``config/physics_randomisation.yaml``, Allshire et al. 2022), so that one tuning does not
overfit one cube (paper 004 §VI compares policies across the RRC's robots and cubes).

:class:`PhysicsRandomisation` holds the ranges; :meth:`PhysicsRandomisation.sample` draws one
:class:`PhysicsSample` from a seed (the trial's platform seed), and `apply_physics` sets it on a
trifinger_simulation platform through PyBullet's ``changeDynamics``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Tuple, Union

import numpy as np

from trifinger_controllers.perception import CONFIG_DIR
from trifinger_controllers.yaml_files import read_mapping
from trifinger_controllers.errors import ConfigurationError

DEFAULT_CONFIG = CONFIG_DIR / "physics_randomisation.yaml"
Range = Tuple[float, float]


@dataclass(frozen=True)
class PhysicsSample:
    """Factors on the nominal values of one trial (all 1: trifinger_simulation as it is)."""

    cube_mass_scale: float = 1.0
    cube_friction_scale: float = 1.0
    floor_friction_scale: float = 1.0

    def to_dict(self) -> Dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class PhysicsRandomisation:
    """Uniform ranges of the factors of :class:`PhysicsSample` ((1, 1): nominal)."""

    name: str = "randomised"
    cube_mass_scale: Range = (1.0, 1.0)
    cube_friction_scale: Range = (1.0, 1.0)
    floor_friction_scale: Range = (1.0, 1.0)

    def __post_init__(self) -> None:
        for key in ("cube_mass_scale", "cube_friction_scale", "floor_friction_scale"):
            value = tuple(float(v) for v in getattr(self, key))
            if len(value) != 2 or not (np.all(np.isfinite(value)) and 0.0 < value[0] <= value[1] <= 10.0):
                raise ConfigurationError(f"physics randomisation {self.name!r}: invalid {key} {value!r}"
                                 " (expected [low, high] with 0 < low <= high <= 10)")
            object.__setattr__(self, key, value)

    @classmethod
    def nominal(cls) -> "PhysicsRandomisation":
        return cls(name="nominal")

    @classmethod
    def from_yaml(cls, path: Union[str, Path] = DEFAULT_CONFIG) -> "PhysicsRandomisation":
        """The ranges in the file ``path`` (:meth:`from_dict`)."""
        return cls.from_dict(read_mapping(path, "physics randomisation"), str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str) -> "PhysicsRandomisation":
        """The ranges in the mapping ``data`` (a file's content, or the mapping a launch file
        loaded onto trifinger_sim's ``~physics``); ValueError naming ``source``."""
        if not isinstance(data, dict):
            raise ConfigurationError(f"{source}: expected a mapping (the physics randomisation)")
        known = ("cube_mass_scale", "cube_friction_scale", "floor_friction_scale")
        for key, value in data.items():
            if key not in known:
                raise ConfigurationError(f"{source}: unknown physics parameter {key!r} (known: {list(known)})")
            if not (isinstance(value, (list, tuple)) and len(value) == 2):
                raise ConfigurationError(f"{source}: {key} must be [low, high], got {value!r}")
        try:
            return cls(**{k: tuple(v) for k, v in data.items()})
        except (TypeError, ValueError) as error:
            raise ConfigurationError(f"{source}: {error}") from None

    @classmethod
    def named(cls, name: str) -> "PhysicsRandomisation":
        """``nominal``, ``randomised`` (config/physics_randomisation.yaml) or a YAML path."""
        if name == "nominal":
            return cls.nominal()
        if name == "randomised":
            return cls.from_yaml(DEFAULT_CONFIG)
        return cls.from_yaml(name)

    @property
    def is_nominal(self) -> bool:
        return all(r == (1.0, 1.0) for r in (self.cube_mass_scale, self.cube_friction_scale,
                                              self.floor_friction_scale))

    def sample(self, seed: int) -> PhysicsSample:
        """The factors of the trial with platform seed ``seed`` (its own stream: the tracker's
        noise does not change them)."""
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x70687973]))
        return PhysicsSample(*(float(rng.uniform(*r)) for r in
                               (self.cube_mass_scale, self.cube_friction_scale, self.floor_friction_scale)))

    def to_dict(self) -> Dict[str, object]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _body(obj) -> int:
    return int(getattr(obj, "_object_id", obj))


def apply_physics(platform, sample: PhysicsSample) -> None:
    """Set ``sample`` on a trifinger_simulation ``TriFingerPlatform`` (cube mass and lateral
    friction, the table's lateral friction; PyBullet multiplies the two bodies' frictions at a
    contact)."""
    import pybullet  # here, not at import: the tools parse their flags before PyBullet's banner

    client = platform.simfinger._pybullet_client_id
    cube_id = _body(platform.cube)
    mass, friction = pybullet.getDynamicsInfo(cube_id, -1, physicsClientId=client)[:2]
    pybullet.changeDynamics(cube_id, -1, mass=mass * sample.cube_mass_scale,
                            lateralFriction=friction * sample.cube_friction_scale, physicsClientId=client)
    table_id = _body(platform.simfinger._table_id)
    table_friction = pybullet.getDynamicsInfo(table_id, -1, physicsClientId=client)[1]
    pybullet.changeDynamics(table_id, -1, lateralFriction=table_friction * sample.floor_friction_scale,
                            physicsClientId=client)
