"""The pipeline's settings: config/pipeline.yaml, overridden by the tool's options."""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import yaml

from sim2real_pipeline.errors import PipelineError

CONFIG_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config",
                           "pipeline.yaml")


def default_reality_config() -> str:
    from panda_sim2real import REALITY_CONFIG_FILE
    return REALITY_CONFIG_FILE


def recording_files(path: str, what: str = "recording") -> list[str]:
    """The bag files of the recording ``path``: a bag, or the name ``rosbag record --split`` was
    given (``pairs.bag`` for pairs_0.bag, pairs_1.bag, ...), as panda_pairs reads it.
    PipelineError of the stage "settings" when there is none."""
    from panda_pairs import BagError, resolve_bags
    try:
        return list(resolve_bags(path).all_files)
    except BagError as exc:
        raise PipelineError("settings", f"{what} not found: {path} ({exc})") from None


@dataclass(frozen=True)
class KernelSettings:
    """paper 001 Algorithm 1 settings (kernel_manager_ros GenerationConfig) and the replay."""

    step: float = 0.01
    settle: float = 2.0
    rollouts: int = 2000
    max_rollout_length: int = 300
    sigma: float = 0.008
    epsilon_p: float = 0.2
    fit_length: int = 3


@dataclass(frozen=True)
class PipelineSettings:
    out: str
    reality_config: str = field(default_factory=default_reality_config)
    trajectories: int = 200
    task_repeats: int = 60
    seed: int = 0
    pairs_bag: Optional[str] = None       # recorded pairs (e.g. through fci_bridge): no collect
    tasks_bag: Optional[str] = None       # recorded task repeats
    models_from: Optional[str] = None     # another run's work directory: its models, not learnt
    parametrisation: str = "cov"
    identify_epochs: int = 60
    identify_friction: bool = True
    identify_offset: bool = True
    identify_bounds: bool = True          # the Panda's plausible inertials (diffnea_ros)
    identify_prior: bool = True           # Gaz et al.'s published model as a prior (diffnea_ros)
    identified_physics_rate: Optional[float] = None   # Hz; None: the lowest stable one
    train_minutes: float = 6.0
    task_train: float = 0.6
    task_validation: float = 0.2
    random_split: tuple[float, float, float] = (0.7, 0.15, 0.15)   # joint-space moves (splits.py)
    kernels: KernelSettings = KernelSettings()
    quiet: bool = False
    sim: str = "pybullet"                 # the nominal simulator of collect and resimulate

    def check(self) -> None:
        """PipelineError('settings', ...) for values no stage could use."""
        def bad(why: str) -> PipelineError:
            return PipelineError("settings", why)
        if self.pairs_bag is None and self.trajectories < 10:
            raise bad(f"trajectories must be at least 10 (training, validation and test "
                      f"trajectories), got {self.trajectories}")
        if self.tasks_bag is None and self.task_repeats < 5:
            raise bad(f"task_repeats must be at least 5, got {self.task_repeats}")
        if not (0.0 < self.task_train < 1.0 and 0.0 < self.task_validation < 1.0
                and self.task_train + self.task_validation < 1.0):
            raise bad("task_split train and validation must be in (0, 1) with a sum below 1")
        from panda_pairs import check_fractions
        from panda_sim2real import PandaError
        try:
            check_fractions(self.random_split)
        except PandaError as exc:
            raise bad(f"random_split: {exc}") from None
        for name in ("train_minutes", "identified_physics_rate"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0.0):
                raise bad(f"{name} must be a positive number, got {value}")
        if self.sim not in ("pybullet", "gazebo"):
            raise bad(f"sim must be pybullet or gazebo, got {self.sim!r}")
        if self.identify_epochs < 1:
            raise bad(f"identify epochs must be at least 1, got {self.identify_epochs}")
        k = self.kernels
        if not (k.step > 0.0 and k.settle >= 0.0 and k.rollouts >= 1 and k.sigma > 0.0):
            raise bad(f"kernel settings out of range: {k}")
        if (self.pairs_bag is None) != (self.tasks_bag is None):
            raise bad("recorded pairs and a recorded task set go together: give both "
                      "--pairs-bag and --tasks-bag, or neither")
        if self.models_from is not None and not os.path.isdir(self.models_from):
            raise bad(f"models from: no work directory {self.models_from}")
        if self.reality_config is not None and not os.path.isfile(self.reality_config):
            raise bad(f"reality config not found: {self.reality_config}")
        for name in ("pairs_bag", "tasks_bag"):
            if getattr(self, name) is not None:
                recording_files(getattr(self, name), name.replace("_", " "))

    @property
    def recorded(self) -> bool:
        """True when the pairs come from the user's bags rather than from collect."""
        return self.pairs_bag is not None


_DEFAULT_KERNELS = dataclasses.asdict(KernelSettings())


def load_settings(path: Optional[str], **overrides: Any) -> PipelineSettings:
    """Settings from ``path`` (default config/pipeline.yaml) with ``overrides`` (None values are
    ignored). PipelineError('settings', ...) for a missing, unreadable or malformed file."""
    path = path or CONFIG_FILE
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise PipelineError("settings", f"cannot read {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise PipelineError("settings", f"{path} is not a mapping")
    try:
        values: dict[str, Any] = {
            "trajectories": int(raw["collect"]["trajectories"]),
            "task_repeats": int(raw["collect"]["task_repeats"]),
            "parametrisation": str(raw["identify"]["parametrisation"]),
            "identify_epochs": int(raw["identify"]["epochs"]),
            "identify_friction": bool(raw["identify"]["friction"]),
            "identify_offset": bool(raw["identify"]["offset"]),
            "identify_bounds": bool(raw["identify"].get("bounds", True)),
            "identify_prior": bool(raw["identify"].get("prior", True)),
            "identified_physics_rate": (None if raw["identify"]["physics_rate"] == "auto"
                                        else float(raw["identify"]["physics_rate"])),
            "train_minutes": float(raw["realeasy"]["max_minutes"]),
            "task_train": float(raw["task_split"]["train"]),
            "task_validation": float(raw["task_split"]["validation"]),
            "random_split": tuple(float(raw["random_split"][k])
                                  for k in ("train", "validation", "test")),
            "kernels": KernelSettings(**{name: type(default)(raw["kernels"][name])
                                         for name, default in _DEFAULT_KERNELS.items()}),
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise PipelineError("settings", f"{path}: missing or malformed key {exc}") from exc
    values.update({k: v for k, v in overrides.items() if v is not None})
    settings = PipelineSettings(**values)
    settings.check()
    return settings
