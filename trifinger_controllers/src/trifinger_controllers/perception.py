"""A model of the TriFinger object tracker: what the controllers see of the cube (paper 004 §II:
"a vision-based tracking system provides the pose of the manipulated object at a frequency of
10 Hz"; §IV-C: "the measurement noise that is present in the vision-based estimate").

trifinger_simulation delivers the true pose of the cube, 10 times a second and 90 ms late
(:mod:`platform`). :class:`TrackerModel` turns each of those images into what the robot's
tracker (``trifinger_object_tracking``: three cameras, colour segmentation of the cube's faces)
reports for it:

* Gaussian position noise, ``position_noise_m`` per axis;
* Gaussian orientation noise, a rotation vector with ``orientation_noise_deg`` per axis;
* missed detections: the object is not found in an image (occluded by the fingers, motion
  blur); the tracker then repeats the previous pose with confidence 0. Misses come in runs (a
  two-state Markov chain): ``miss_rate`` is the long-run fraction of images missed and
  ``miss_burst_images`` the mean length of a run;
* wrong-face errors: the cube is symmetric, so a wrong assignment of its faces gives a pose with
  the right geometry and an orientation off by one of the cube's 23 non-trivial symmetry
  rotations (90, 120 or 180 deg), with probability ``flip_rate`` per detection;
* ``confidence`` of a detection uniform in ``confidence_range`` (the tracker does not know it
  made a wrong-face error: a flip carries an ordinary confidence).

The values and their sources are in ``config/perception.yaml``; :meth:`PerceptionConfig.ideal`
is the perfect camera of trifinger_simulation (the pose at the camera's rate and delay only).
Every draw comes from the model's own seeded generator: the same seed and images give the same
reports.
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np
from trifinger_controllers import cube
from trifinger_controllers.types import CubePose
from trifinger_controllers.yaml_files import read_mapping
from trifinger_controllers.errors import ConfigurationError

#: The package's configuration directory (``config/`` next to ``src/``).
CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
DEFAULT_CONFIG = CONFIG_DIR / "perception.yaml"


def _symmetry_rotations() -> np.ndarray:
    """The 23 non-identity rotations (xyzw) that map the cube onto itself."""
    rotations = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            m = np.zeros((3, 3))
            for row, (col, sign) in enumerate(zip(perm, signs)):
                m[row, col] = sign
            if np.linalg.det(m) > 0 and not np.allclose(m, np.eye(3)):
                rotations.append(cube.from_matrix(m))
    return np.array(rotations)


#: The cube's proper symmetries other than the identity (9 face, 8 vertex, 6 edge rotations).
SYMMETRIES = _symmetry_rotations()


@dataclass(frozen=True)
class PerceptionConfig:
    """Parameters of the tracker model (module docstring). All probabilities are per image."""

    name: str = "tracker"
    position_noise_m: float = 0.0
    orientation_noise_deg: float = 0.0
    miss_rate: float = 0.0
    miss_burst_images: float = 1.0
    flip_rate: float = 0.0
    confidence_range: Tuple[float, float] = (1.0, 1.0)
    sources: Dict[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        checks = {
            "position_noise_m": 0.0 <= self.position_noise_m <= 0.05,
            "orientation_noise_deg": 0.0 <= self.orientation_noise_deg <= 45.0,
            "miss_rate": 0.0 <= self.miss_rate < 1.0,
            "miss_burst_images": self.miss_burst_images >= 1.0,
            "flip_rate": 0.0 <= self.flip_rate <= 1.0,
            "confidence_range": (len(self.confidence_range) == 2
                                 and 0.0 < self.confidence_range[0] <= self.confidence_range[1] <= 1.0),
        }
        for key, ok in checks.items():
            value = getattr(self, key)
            if not ok or not np.all(np.isfinite(np.asarray(value, dtype=float))):
                raise ConfigurationError(f"perception config {self.name!r}: invalid {key} {value!r}")
        burst = self.miss_burst_images
        if self.miss_rate > burst / (burst + 1.0):   # P(miss | detected) would exceed 1
            raise ConfigurationError(f"perception config {self.name!r}: miss_rate {self.miss_rate} is not"
                             f" reachable with runs of {burst} images on average (at most"
                             f" {burst / (burst + 1.0):.3f})")
        object.__setattr__(self, "confidence_range", tuple(float(c) for c in self.confidence_range))

    @classmethod
    def ideal(cls) -> "PerceptionConfig":
        """trifinger_simulation's camera: the true pose at the camera rate and delay."""
        return cls(name="ideal")

    @property
    def is_ideal(self) -> bool:
        return (self.position_noise_m == 0 and self.orientation_noise_deg == 0
                and self.miss_rate == 0 and self.flip_rate == 0)

    @classmethod
    def from_yaml(cls, path: Union[str, Path] = DEFAULT_CONFIG) -> "PerceptionConfig":
        """The config in the file ``path`` (:meth:`from_dict`)."""
        return cls.from_dict(read_mapping(path, "perception config"), str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str) -> "PerceptionConfig":
        """The config in the mapping ``data`` (a file's content, or the mapping a launch file loaded
        onto trifinger_sim's ``~camera``): each parameter as ``{value: ..., source: "..."}`` (or a
        bare value); ValueError naming ``source`` on a missing, unknown or invalid entry."""
        if not isinstance(data, dict):
            raise ConfigurationError(f"{source}: expected a mapping (the perception config)")
        known = {f.name for f in fields(cls)} - {"sources"}
        values, sources = {}, {}
        for key, entry in data.items():
            if key not in known:
                raise ConfigurationError(f"{source}: unknown perception parameter {key!r} (known: {sorted(known)})")
            if isinstance(entry, dict):
                if "value" not in entry:
                    raise ConfigurationError(f"{source}: {key} has no 'value'")
                values[key], sources[key] = entry["value"], str(entry.get("source", ""))
            else:
                values[key] = entry
        try:
            if "confidence_range" in values:
                values["confidence_range"] = tuple(values["confidence_range"])
            return cls(**values, sources=sources)
        except (TypeError, ValueError) as error:
            raise ConfigurationError(f"{source}: {error}") from None

    @classmethod
    def named(cls, name: str) -> "PerceptionConfig":
        """``ideal``, ``tracker`` (config/perception.yaml) or the path of a YAML file."""
        if name == "ideal":
            return cls.ideal()
        if name == "tracker":
            return cls.from_yaml(DEFAULT_CONFIG)
        return cls.from_yaml(name)

    def to_dict(self) -> Dict[str, object]:
        out = asdict(self)
        out["confidence_range"] = list(self.confidence_range)
        return out


@dataclass
class TrackerCounts:
    """What the model did so far (for tests and the episode record)."""

    images: int = 0
    missed: int = 0
    flipped: int = 0


class TrackerModel:
    """Turns each camera image's true pose into the tracker's report (module docstring)."""

    def __init__(self, config: PerceptionConfig, seed: int = 0) -> None:
        self.config = config
        self._rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x7261636B]))
        self._previous: Optional[CubePose] = None
        self._missing = False
        self.counts = TrackerCounts()
        p_exit = 1.0 / config.miss_burst_images
        rate = config.miss_rate
        #: P(miss | previous image detected), so that the stationary miss fraction is miss_rate.
        self._p_enter = min(1.0, rate * p_exit / (1.0 - rate)) if rate > 0 else 0.0
        self._p_exit = p_exit

    def observe(self, truth: CubePose) -> CubePose:
        """The tracker's report of one image whose true pose is ``truth`` (stamped with the time
        the image was taken). The first image is always detected."""
        config = self.config
        self.counts.images += 1
        if self._previous is not None:
            self._missing = self._rng.random() < ((1.0 - self._p_exit) if self._missing else self._p_enter)
        if self._missing:
            self.counts.missed += 1
            report = CubePose(self._previous.position.copy(), self._previous.orientation.copy(),
                              truth.stamp, 0.0)
            return report
        position = np.asarray(truth.position, dtype=float) + self._rng.normal(0.0, config.position_noise_m, 3)
        noise = self._rng.normal(0.0, np.deg2rad(config.orientation_noise_deg), 3)
        orientation = cube.multiply(cube.from_rotation_vector(noise), np.asarray(truth.orientation, dtype=float))
        if config.flip_rate > 0 and self._rng.random() < config.flip_rate:
            self.counts.flipped += 1
            orientation = cube.multiply(orientation, SYMMETRIES[self._rng.integers(len(SYMMETRIES))])
        confidence = float(self._rng.uniform(*config.confidence_range))
        self._previous = CubePose(position, cube.normalize(orientation), truth.stamp, confidence)
        return self._previous
