"""The simulation options every tool shares: the camera (the object tracker model or the ideal
camera) and the physics (randomised or nominal), as command-line flags (``--camera``,
``--physics``) and as the trifinger_sim node's parameters (``~camera``, ``~physics``)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Tuple, Union

from trifinger_controllers.perception import PerceptionConfig
from trifinger_controllers.physics import PhysicsRandomisation

DEFAULT_CAMERA = "tracker"
DEFAULT_PHYSICS = "randomised"
CAMERA_NAMES = ("tracker", "ideal")
PHYSICS_NAMES = ("randomised", "nominal")

Choice = Union[str, Mapping[str, Any]]


@dataclass(frozen=True)
class SimOptions:
    """What the simulated platform models beyond trifinger_simulation's defaults."""

    perception: PerceptionConfig
    physics: PhysicsRandomisation

    @classmethod
    def named(cls, camera: str = DEFAULT_CAMERA, physics: str = DEFAULT_PHYSICS) -> "SimOptions":
        """``camera``: ``tracker`` (config/perception.yaml), ``ideal`` or a YAML path;
        ``physics``: ``randomised`` (config/physics_randomisation.yaml), ``nominal`` or a YAML
        path. ValueError with one line on a bad name or file."""
        return cls(PerceptionConfig.named(camera), PhysicsRandomisation.named(physics))

    @classmethod
    def from_values(cls, camera: Choice, physics: Choice,
                    sources: Tuple[str, str] = ("camera", "physics")) -> "SimOptions":
        """:meth:`named` for names and paths; a mapping (a model file's content, loaded onto the
        node's parameter by the launch file) is read as its file would be, errors naming
        ``sources`` (camera's, physics'). ValueError with one line."""
        perception = (PerceptionConfig.from_dict(dict(camera), sources[0])
                      if isinstance(camera, Mapping) else PerceptionConfig.named(str(camera)))
        ranges = (PhysicsRandomisation.from_dict(dict(physics), sources[1])
                  if isinstance(physics, Mapping) else PhysicsRandomisation.named(str(physics)))
        return cls(perception, ranges)

    def describe(self) -> Dict[str, object]:
        """JSON-ready record of both (result files keep it)."""
        return {"perception": self.perception.to_dict(), "physics": self.physics.to_dict()}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--camera`` and ``--physics`` to a tool's parser."""
    parser.add_argument("--camera", default=DEFAULT_CAMERA, metavar="tracker|ideal|FILE.yaml",
                        help="cube pose: the object tracker model (default, config/perception.yaml), "
                             "the ideal camera, or a tracker model file")
    parser.add_argument("--physics", default=DEFAULT_PHYSICS, metavar="randomised|nominal|FILE.yaml",
                        help="cube mass and friction: randomised per trial (default, "
                             "config/physics_randomisation.yaml), nominal, or a ranges file")


def from_arguments(args: argparse.Namespace) -> SimOptions:
    """The options of parsed ``--camera``/``--physics`` (ValueError on a bad value)."""
    return SimOptions.named(args.camera, args.physics)
