"""In-process evaluation of a controller on the simulated platform (paper 004 §VI, Tables II-IV).

:func:`run_episode` runs one episode (the controller called at its ``rate_hz``, its torque held
in between, as on the robot; the cube pose through :class:`pose_filter.ObservationFilter`);
:func:`evaluate` runs ``trials`` seeded episodes, identical for every controller, and summarises
them (``mean``/``std`` over the trials without a drop as in Table II, ``mean_all``/``std_all``,
``drop_rate``, ``compute_us``). :class:`DropDetector` is Table II's "the cube is dropped".
Episodes last :data:`DEFAULT_SECONDS` (30 s, not the RRC's 120 s); a controller exception is
logged and stored in the record's ``error``. Results are simulation results.

Metrics, the drop rule, the summary and the episode length: README.md, "How the controllers
work", "Evaluation (`evaluation.py`)".
"""
from __future__ import annotations

import logging
import math
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

from trifinger_controllers import cube, task
from trifinger_controllers.controllers.base import Controller
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.perception import PerceptionConfig
from trifinger_controllers.physics import PhysicsRandomisation
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.pose_filter import ObservationFilter, PoseFilterConfig
from trifinger_controllers.types import N_JOINTS, PHYSICS_RATE, CubePose
from trifinger_controllers.errors import TrifingerError

LOG = logging.getLogger(__name__)

DEFAULT_SECONDS = 30.0
#: The cube is in the air while its lowest corner is higher than this [m].
LIFT_HEIGHT = 0.01
#: The cube is on the floor when its lowest corner is below this height [m].
FLOOR_TOLERANCE = 0.005
#: A fingertip (centre of its tip frame) this close [m] to the cube's surface is holding it.
HOLD_DISTANCE = 0.015
#: Zero-torque time [s] after a controller exception before the episode ends.
SETTLE_SECONDS = 1.0
#: Metrics summarised by :func:`evaluate`.
METRICS = ("reward", "cumulative_reward", "position_error_cm", "orientation_error_deg",
           "tracked_position_error_cm", "tracked_orientation_error_deg")

ProgressCallback = Callable[[int], None]


def _pose_dict(pose: CubePose) -> Dict[str, List[float]]:
    return {"position": np.asarray(pose.position, float).tolist(),
            "orientation": np.asarray(pose.orientation, float).tolist()}


@dataclass
class EpisodeRecord:
    """The outcome of one episode (see the module docstring for the definitions)."""

    level: int
    goal: CubePose
    initial: CubePose
    final: CubePose
    reward: float
    cumulative_reward: float
    position_error_cm: float
    orientation_error_deg: float
    drop: bool
    sim_seconds: float
    wall_seconds: float
    reset_seconds: float
    compute_calls: int
    compute_us_mean: float
    compute_us_p99: float
    tracked_position_error_cm: float = float("nan")
    tracked_orientation_error_deg: float = float("nan")
    tracker: Dict[str, int] = field(default_factory=dict)
    pose_filter: Dict[str, int] = field(default_factory=dict)
    physics: Dict[str, float] = field(default_factory=dict)
    error: Optional[str] = None
    compute_us: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    def to_dict(self) -> Dict[str, object]:
        """JSON-ready per-trial record (without the raw compute times)."""
        out = {k: v for k, v in asdict(self).items() if k not in ("compute_us", "goal", "initial", "final")}
        out.update(goal=_pose_dict(self.goal), initial=_pose_dict(self.initial), final=_pose_dict(self.final))
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


class DropDetector:
    """Table II's "the cube is dropped": the cube left the fingers in the air and fell to the
    floor. While its lowest corner is above :data:`LIFT_HEIGHT` it is in the air, and falling
    when fewer than two fingertips hold it; a falling cube whose lowest corner reaches
    :data:`FLOOR_TOLERANCE` is dropped. Pushing, rolling, flipping or turning the cube on the
    floor (a corner stays down) is never a drop. Feed it every step (the fingertips' forward
    kinematics run only while the cube is in the air or falling)."""

    def __init__(self, kinematics: FingerKinematics) -> None:
        self.kinematics = kinematics
        self.falling = False
        self.dropped = False

    def update(self, pose: CubePose, joint_positions: np.ndarray) -> bool:
        """Update with the true cube pose and the joint positions; True once dropped."""
        if self.dropped:
            return True
        low = cube.lowest_point(pose)
        if low > LIFT_HEIGHT:
            self.falling = holding_fingers(self.kinematics, pose, joint_positions) < 2
        elif self.falling:
            if low < FLOOR_TOLERANCE:
                self.dropped = True
            elif holding_fingers(self.kinematics, pose, joint_positions) >= 2:
                self.falling = False     # caught just above the floor
        return self.dropped


def holding_fingers(kinematics: FingerKinematics, pose: CubePose, joint_positions: np.ndarray) -> int:
    """Number of fingertips within :data:`HOLD_DISTANCE` of the cube's surface."""
    return cube.points_near_surface(pose, kinematics.tip_positions(joint_positions), HOLD_DISTANCE)


def control_period(controller: Controller) -> int:
    """Physics steps between two controller calls (``1000 / rate_hz``, at least 1)."""
    rate = float(controller.rate_hz)
    if not rate > 0:
        raise TrifingerError(f"{controller.name}: rate_hz must be positive, got {rate}")
    return max(1, int(round(PHYSICS_RATE / rate)))


def run_episode(
    platform: SimulatedPlatform,
    controller: Controller,
    level: int,
    goal: CubePose,
    initial: CubePose,
    seconds: float = DEFAULT_SECONDS,
    progress: Optional[ProgressCallback] = None,
    kinematics: Optional[FingerKinematics] = None,
    pose_filter: Optional[PoseFilterConfig] = None,
) -> EpisodeRecord:
    """Run ``controller`` for ``seconds`` of simulated time from ``initial`` towards ``goal``;
    the controller sees the cube through :class:`ObservationFilter` (``pose_filter`` tunes it).

    ``progress`` (e.g. a tqdm bar's ``update``) is called with the number of steps done since
    its last call, every simulated second."""
    task.check_level(level)
    task.check_goal(goal)
    if not seconds > 0:
        raise TrifingerError(f"episode length must be positive, got {seconds} s")
    kinematics = kinematics or FingerKinematics()
    total_steps = int(round(seconds * PHYSICS_RATE))
    period = control_period(controller)
    wall_start = time.perf_counter()

    estimator = ObservationFilter(pose_filter)
    obs = estimator(platform.reset(initial, goal))
    reset_start = time.perf_counter()
    error: Optional[str] = None
    try:
        controller.reset(obs)
    except Exception as exc:  # recorded below, the episode runs on with zero torque
        error = _describe(controller, "reset", exc)
    reset_seconds = time.perf_counter() - reset_start

    detector = DropDetector(kinematics)
    positions = np.empty((total_steps, 3))
    orientations = np.empty((total_steps, 4))
    durations: List[float] = []
    torque = np.zeros(N_JOINTS)
    stop_at = total_steps if error is None else min(total_steps, int(SETTLE_SECONDS * PHYSICS_RATE))
    reported = 0
    steps = 0
    while steps < stop_at:
        if error is None and steps % period == 0:
            start = time.perf_counter_ns()
            try:
                torque = controller.compute(obs)
            except Exception as exc:
                error = _describe(controller, f"compute at t={obs.robot.time:.3f} s", exc)
                torque = np.zeros(N_JOINTS)
                stop_at = min(total_steps, steps + int(SETTLE_SECONDS * PHYSICS_RATE))
            durations.append((time.perf_counter_ns() - start) / 1e3)
        obs = estimator(platform.step(torque))
        truth = platform.true_cube_pose()
        positions[steps] = truth.position
        orientations[steps] = truth.orientation
        detector.update(truth, obs.robot.position)
        steps += 1
        if progress is not None and steps % 1000 == 0:
            progress(steps - reported)
            reported = steps
    if progress is not None and steps > reported:
        progress(steps - reported)
    if steps < total_steps and progress is not None:  # keep a bar's total consistent
        progress(total_steps - steps)

    final = platform.true_cube_pose()
    step_rewards = task.rewards(level, goal, positions[:steps], orientations[:steps])
    compute_us = np.asarray(durations)
    return EpisodeRecord(
        level=level,
        goal=goal,
        initial=initial,
        final=final,
        reward=task.reward(level, goal, final),
        cumulative_reward=float(step_rewards.sum()),
        position_error_cm=100.0 * task.position_error(goal, final),
        orientation_error_deg=float(np.rad2deg(task.orientation_error(goal, final))),
        drop=detector.dropped,
        sim_seconds=steps / PHYSICS_RATE,
        wall_seconds=time.perf_counter() - wall_start,
        reset_seconds=reset_seconds,
        compute_calls=int(compute_us.size),
        compute_us_mean=float(compute_us.mean()) if compute_us.size else float("nan"),
        compute_us_p99=float(np.percentile(compute_us, 99)) if compute_us.size else float("nan"),
        pose_filter=asdict(estimator.filter.counts),
        error=error,
        **platform_record(platform, goal),
        compute_us=compute_us,
    )


def platform_record(platform: SimulatedPlatform, goal: CubePose) -> Dict[str, object]:
    """What the simulated platform knows of an episode beyond the ground truth (shared with the
    trifinger_sim node's result): the final errors as the tracker sees them (its last report; a
    miss repeats the last detection), the tracker's counts and the trial's physics sample."""
    tracked = platform.camera_cube_pose()
    return {
        "tracked_position_error_cm": 100.0 * task.position_error(goal, tracked),
        "tracked_orientation_error_deg": float(np.rad2deg(task.orientation_error(goal, tracked))),
        "tracker": asdict(platform.tracker.counts),
        "physics": platform.physics_sample.to_dict(),
    }


def _describe(controller: Controller, where: str, exc: Exception) -> str:
    LOG.error("controller %s raised in %s:\n%s", controller.name, where,
              "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    return f"{controller.name} {where}: {type(exc).__name__}: {exc}"


def _summary(records: List[EpisodeRecord], reducer: Callable[[np.ndarray], float]) -> Dict[str, Optional[float]]:
    out: Dict[str, Optional[float]] = {}
    for key in METRICS:
        values = np.array([getattr(r, key) for r in records], dtype=float)
        out[key] = float(reducer(values)) if values.size else None
    return out


def summarise(records: List[EpisodeRecord]) -> Dict[str, object]:
    """``mean``/``std`` over non-dropped trials, ``mean_all``/``std_all`` over all, ``drop_rate``
    and the controller's compute time over all calls."""
    kept = [r for r in records if not r.drop]
    durations = np.concatenate([r.compute_us for r in records]) if records else np.zeros(0)
    return {
        "mean": _summary(kept, np.mean),
        "std": _summary(kept, np.std),
        "mean_all": _summary(records, np.mean),
        "std_all": _summary(records, np.std),
        "drop_rate": float(np.mean([r.drop for r in records])) if records else None,
        "errors": sum(r.error is not None for r in records),
        "compute_us": {
            "mean": float(durations.mean()) if durations.size else None,
            "p99": float(np.percentile(durations, 99)) if durations.size else None,
            "calls": int(durations.size),
        },
        "wall_seconds": float(sum(r.wall_seconds for r in records)),
    }


def episode_specs(level: int, trials: int, seed: int, orientation_error_deg: Optional[float] = None,
                  goal: Optional[CubePose] = None) -> List[tuple]:
    """(goal, initial pose, platform seed) of each trial, from ``seed`` only: trial ``i`` uses
    the ``i``-th child of ``numpy.random.SeedSequence(seed)``. A given ``goal`` is used for every
    trial (initial poses from :func:`task.initial_pose`)."""
    task.check_level(level)
    if goal is not None:
        task.check_goal(goal)
    specs = []
    for child in np.random.SeedSequence(seed).spawn(trials):
        rng = np.random.default_rng(child)
        if goal is None:
            trial_goal, initial = task.sample_episode(level, rng, orientation_error_deg)
        else:
            trial_goal, initial = goal, task.initial_pose(goal, level, rng, orientation_error_deg)
        specs.append((trial_goal, initial, int(child.generate_state(1)[0])))
    return specs


def evaluate(
    controller_factory: Callable[[], Controller],
    level: int,
    trials: int,
    seed: int,
    seconds: float = DEFAULT_SECONDS,
    orientation_error_deg: Optional[float] = None,
    progress: bool = True,
    goal: Optional[CubePose] = None,
    description: str = "",
    perception: Optional[PerceptionConfig] = None,
    physics: Optional[PhysicsRandomisation] = None,
) -> Dict[str, object]:
    """Evaluate a fresh controller from ``controller_factory()`` on ``trials`` seeded episodes;
    returns the JSON-ready result (keys ``trials``, ``mean``, ``std``, ``drop_rate``, ...,
    ``label`` "simulation"). ``perception`` defaults to the tracker model
    (``config/perception.yaml``), ``physics`` to the randomisation of
    ``config/physics_randomisation.yaml``, both seeded by the trial."""
    if trials < 1:
        raise TrifingerError(f"trials must be >= 1, got {trials}")
    specs = episode_specs(level, trials, seed, orientation_error_deg, goal)
    perception = perception if perception is not None else PerceptionConfig.from_yaml()
    physics = physics if physics is not None else PhysicsRandomisation.from_yaml()
    kinematics = FingerKinematics()
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=int(round(trials * seconds)) * 1000, unit="step", unit_scale=True,
                   desc=description or f"level {level}", dynamic_ncols=True)
    records: List[EpisodeRecord] = []
    name = ""
    try:
        for trial_goal, initial, platform_seed in specs:
            controller = controller_factory()
            name = controller.name
            platform = SimulatedPlatform(seed=platform_seed, perception=perception, physics=physics)
            try:
                records.append(run_episode(platform, controller, level, trial_goal, initial, seconds,
                                           bar.update if bar is not None else None, kinematics))
            finally:
                platform.close()
            if bar is not None:
                last = records[-1]
                bar.set_postfix(pos_cm=f"{last.position_error_cm:.2f}", drop=last.drop)
    finally:
        if bar is not None:
            bar.close()
    result: Dict[str, object] = {
        "label": "simulation",
        "controller": name,
        "level": level,
        "seed": seed,
        "seconds": seconds,
        "orientation_error_deg": orientation_error_deg,
        "perception": perception.to_dict(),
        "physics": physics.to_dict(),
        "trials": [dict(trial=i, **r.to_dict()) for i, r in enumerate(records)],
    }
    result.update(summarise(records))
    return result
