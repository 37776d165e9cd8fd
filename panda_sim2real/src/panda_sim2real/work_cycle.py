"""A repeated task set (issue 17): one pick-and-place work cycle executed many times.

Paper 001 builds state-space kernels from repeated missions ("each trip is one mission", §4):
a kernel fires where the simulation revisits states the recorded missions went through. This
module plays such a mission on the Panda: home -> the poses of the cycle -> home, every repeat
the same poses plus a small seeded offset per pose (normal, truncated at VARIATION_BOUND std)
and a seeded speed factor c. Each repeat is one trajectory of kind 'task' that starts and ends
at home at rest, so repeats chain; a repeat that starts elsewhere first moves to home.

Timing is the random move generator's (:mod:`panda_sim2real.trajectory_generation`): between
consecutive poses a synchronised minimum-jerk segment, rest to rest, as short as keeps every
joint within c times its velocity and acceleration limits, on knots at ``knot_rate``. Every
repeat is checked exactly against the limits (:func:`check_motion_limits`) before it is returned.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from panda_sim2real.errors import ConfigError
from panda_sim2real.limits import CONFIG_DIR, JointLimits
from panda_sim2real.motion_limits import check_motion_limits
from panda_sim2real.trajectory import PlannedTrajectory
from panda_sim2real.trajectory_generation import (GeneratorSettings, TrajectoryGenerator,
                                                 checked_start, minimum_jerk,
                                                 minimum_jerk_duration)
from sim2real_checks import read_yaml

DEFAULT_WORK_CYCLE_FILE = os.path.join(CONFIG_DIR, "work_cycle.yaml")
TASK = "task"
VARIATION_BOUND = 3.0       # a pose's offset is truncated at this many std per joint
REQUIRED = ("home", "poses", "cycle", "variation_std")


@dataclass(frozen=True, eq=False)
class WorkCycleSettings:
    """A work cycle (config/work_cycle.yaml); joint vectors (dof,) [rad] in the limits' order."""

    home: np.ndarray                     # start and end of every repeat
    poses: Mapping[str, np.ndarray]      # named poses
    cycle: tuple[str, ...]               # pose names visited in order after home
    variation_std: np.ndarray            # std of each pose's per-repeat offset
    dwell: Mapping[str, float] = field(default_factory=dict)   # s held at a pose
    velocity_scaling: tuple[float, float] = (0.45, 0.55)       # range of c, drawn per repeat
    rest_before: float = 0.2             # s at the start pose
    rest_after: float = 0.5              # s at home at the end
    knot_rate: float = 100.0             # Hz
    margin: float = 0.1                  # rad every pose +- VARIATION_BOUND std keeps from limits

    def check(self, limits: JointLimits, source: str = "work cycle") -> None:
        """ConfigError (one line naming ``source`` and the entry) unless the settings are
        consistent and every pose, with its largest offset, lies inside the limits less margin."""
        def bad(why: str) -> ConfigError:
            return ConfigError(f"{source}: {why}")

        vectors = {"home": self.home, "variation_std": self.variation_std,
                   **{f"poses.{name}": q for name, q in self.poses.items()}}
        for key, vector in vectors.items():
            vector = np.asarray(vector, dtype=float)
            if vector.shape != (limits.dof,) or not np.all(np.isfinite(vector)):
                raise bad(f"'{key}' needs {limits.dof} finite numbers [rad], got {vector.tolist()}")
        if np.any(self.variation_std < 0.0):
            raise bad("'variation_std' must be >= 0")
        if not self.cycle:
            raise bad("'cycle' must name at least one pose")
        for key, names in (("cycle", self.cycle), ("dwell", tuple(self.dwell))):
            unknown = [n for n in names if n not in self.poses]
            if unknown:
                raise bad(f"'{key}' names unknown pose(s) {unknown}; poses are {list(self.poses)}")
        for name, seconds in self.dwell.items():
            if not (math.isfinite(seconds) and seconds >= 0.0):
                raise bad(f"'dwell.{name}' must be a number >= 0 [s], got {seconds}")
        for key in ("rest_before", "rest_after", "margin"):
            if not (math.isfinite(getattr(self, key)) and getattr(self, key) >= 0.0):
                raise bad(f"'{key}' must be a number >= 0")
        if not (math.isfinite(self.knot_rate) and self.knot_rate > 0.0):
            raise bad("'knot_rate' must be > 0")
        low, high = self.velocity_scaling
        if not 0.0 < low <= high <= 1.0:
            raise bad("'velocity_scaling' must be [min, max] with 0 < min <= max <= 1")
        reach = VARIATION_BOUND * self.variation_std
        lo, hi = limits.position_min + self.margin, limits.position_max - self.margin
        for name, q, spread in (("home", self.home, 0.0 * reach),
                                *((f"pose '{n}'", q, reach) for n, q in self.poses.items())):
            outside = (q - spread < lo) | (q + spread > hi)
            if np.any(outside):
                j = int(np.flatnonzero(outside)[0])
                varied = f" (+- {spread[j]:.4f} variation)" if spread[j] > 0.0 else ""
                raise bad(f"{name}: {limits.joint_names[j]} = {q[j]:.4f} rad{varied} is outside "
                          f"[{lo[j]:.4f}, {hi[j]:.4f}] (the position limits less margin "
                          f"{self.margin} rad)")

    @classmethod
    def from_yaml(cls, path: Optional[str] = None,
                  limits: Optional[JointLimits] = None) -> "WorkCycleSettings":
        """Read and :meth:`check` a work cycle file (default config/work_cycle.yaml)."""
        path = path or DEFAULT_WORK_CYCLE_FILE
        return cls.from_dict(read_yaml(path, "work cycle", ConfigError), f"work cycle {path}", limits)

    @classmethod
    def from_dict(cls, raw: Any, source: str = "work cycle",
                  limits: Optional[JointLimits] = None) -> "WorkCycleSettings":
        """The work cycle in the mapping ``raw`` (a file's content, or the mapping a launch file
        loaded onto a node's ``~work_cycle``), :meth:`check`-ed; ConfigError naming ``source``."""
        limits = limits or JointLimits.from_yaml()
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: expected a mapping with keys {list(REQUIRED)}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in raw if k not in known)
        missing = [k for k in REQUIRED if k not in raw]
        problems = ([f"missing key(s) {missing}"] if missing else []) + (
            [f"unknown key(s) {unknown}; expected some of {sorted(known)}"] if unknown else [])
        if problems:
            raise ConfigError(f"{source}: " + "; ".join(problems))
        values: dict[str, Any] = {}
        key = ""
        try:
            for key, value in raw.items():
                if key in ("home", "variation_std"):
                    values[key] = _vector(value)
                elif key == "poses":
                    if not isinstance(value, dict) or not value:
                        raise ValueError("needs a mapping name -> joint positions")
                    values[key] = {str(name): _vector(q) for name, q in value.items()}
                elif key == "cycle":
                    if not isinstance(value, list):
                        raise ValueError("needs a list of pose names")
                    values[key] = tuple(str(name) for name in value)
                elif key == "dwell":
                    if not isinstance(value, dict):
                        raise ValueError("needs a mapping pose name -> seconds")
                    values[key] = {str(name): float(s) for name, s in value.items()}
                elif key == "velocity_scaling":
                    pair = tuple(float(v) for v in value)
                    if len(pair) != 2:
                        raise ValueError("needs two numbers")
                    values[key] = pair
                else:
                    values[key] = float(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: '{key}' is malformed ({exc})") from exc
        settings = cls(**values)
        settings.check(limits, source)
        return settings


def _vector(value: Any) -> np.ndarray:
    if not isinstance(value, list):
        raise ValueError(f"needs a list of numbers, got {value!r}")
    return np.asarray([float(v) for v in value])


@dataclass(frozen=True, eq=False)
class TaskRepeat:
    """One repeat of the cycle: kind 'task', its index, speed factor c, the poses as varied for
    this repeat, and the trajectory (start=None, times from 0, knots at knot_rate, rests
    included)."""

    kind: str
    repeat: int
    velocity_scaling: float
    poses: Mapping[str, np.ndarray]
    trajectory: PlannedTrajectory


class WorkCycleGenerator:
    """Repeats of a work cycle from a seeded generator; the interface of TrajectoryGenerator
    (``next(start, kinds)``), with 'task' the only kind. The same limits, settings, seed and
    sequence of starts give identical repeats."""

    def __init__(self, limits: JointLimits, settings: Optional[WorkCycleSettings] = None,
                 seed: Optional[int] = None) -> None:
        self.limits = limits
        self.settings = settings or WorkCycleSettings.from_yaml(None, limits)
        self.settings.check(limits)
        self._rng = np.random.default_rng(seed)
        self._dt = 1.0 / self.settings.knot_rate
        self._repeats = 0

    def next(self, start: np.ndarray, kinds: Sequence[str] = (TASK,)) -> TaskRepeat:
        """The next repeat from ``start`` (joint positions inside the position limits): rest
        there, move to home unless already there, visit the cycle's poses, rest at home."""
        kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
        if kinds != (TASK,):
            raise ConfigError(f"the work cycle draws only kind '{TASK}', got {list(kinds)}")
        start = checked_start(self.limits, start)
        s = self.settings
        c = float(self._rng.uniform(*s.velocity_scaling))
        unit = np.clip(self._rng.standard_normal((len(s.poses), self.limits.dof)),
                       -VARIATION_BOUND, VARIATION_BOUND)
        poses = {name: q + s.variation_std * u for (name, q), u in zip(s.poses.items(), unit)}
        stops = [(start, s.rest_before)]
        if not np.array_equal(start, s.home):
            stops.append((s.home, 0.0))
        stops += [(poses[name], s.dwell.get(name, 0.0)) for name in s.cycle]
        stops.append((s.home, s.rest_after))
        trajectory = self._through(stops, c)
        check_motion_limits(trajectory, self.limits)
        self._repeats += 1
        return TaskRepeat(TASK, self._repeats - 1, c, poses, trajectory)

    def _through(self, stops: list[tuple[np.ndarray, float]], c: float) -> PlannedTrajectory:
        """Knots through ``stops`` (pose, seconds held there; the first one's hold comes before
        the motion): minimum-jerk segments from rest to rest."""
        first, hold = stops[0]
        positions = [np.repeat(first[None], self._steps(hold) + 1, axis=0)]
        velocities = [np.zeros_like(positions[0])]
        for (a, _), (b, hold) in zip(stops[:-1], stops[1:]):
            pos, vel = self._segment(a, b, c)
            positions += [pos[1:], np.repeat(b[None], self._steps(hold), axis=0)]
            velocities += [vel[1:], np.zeros((self._steps(hold), len(b)))]
        pos, vel = np.vstack(positions), np.vstack(velocities)
        return PlannedTrajectory(np.arange(len(pos)) * self._dt, pos, vel, None)

    def _segment(self, a: np.ndarray, b: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
        """Knots (positions, velocities) of the synchronised minimum-jerk move a -> b, the
        generator's rule: T = max_j max(15/8 |D_j| / (c v_j), sqrt(10/sqrt(3) |D_j| / (c a_j)))
        rounded up to whole knot intervals; ends exactly at a and b."""
        dist = b - a
        duration = minimum_jerk_duration(dist, c, self.limits)
        n = max(1, math.ceil(duration * self.settings.knot_rate - 1e-9))
        s, ds = minimum_jerk(np.arange(n + 1) / n)
        positions = a + np.outer(s, dist)
        positions[0], positions[-1] = a, b
        return positions, np.outer(ds, dist) / (n * self._dt)

    def _steps(self, seconds: float) -> int:
        return int(round(seconds * self.settings.knot_rate))


def make_generator(kinds: Sequence[str], seed: int, limits: JointLimits,
                   generator_config: Union[None, str, GeneratorSettings] = None,
                   work_cycle: Union[str, WorkCycleSettings] = DEFAULT_WORK_CYCLE_FILE) -> Any:
    """The moves of a collection or a pair runner: the work cycle (settings, or the path of
    their file) for kinds == (TASK,), else the random move generator (TrajectoryGenerator) over
    ``kinds`` with ``generator_config`` (settings, or the path of their file; None: the
    defaults); ConfigError if TASK is mixed with other kinds. Both have ``next(start_q, kinds)``."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if TASK in kinds:
        if kinds != (TASK,):
            raise ConfigError(f"kind '{TASK}' (the work cycle) cannot be mixed with other "
                              f"kinds, got {list(kinds)}")
        if not isinstance(work_cycle, WorkCycleSettings):
            work_cycle = WorkCycleSettings.from_yaml(work_cycle, limits)
        return WorkCycleGenerator(limits, work_cycle, seed)
    if isinstance(generator_config, GeneratorSettings):
        settings = generator_config
    else:
        settings = GeneratorSettings.from_yaml(generator_config) if generator_config else GeneratorSettings()
    return TrajectoryGenerator(limits, settings, seed)
