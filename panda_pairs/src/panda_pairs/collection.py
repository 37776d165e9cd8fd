"""Set-up of an in-process pair collection: both robots and the generator from their files."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from tqdm import tqdm

from panda_sim2real import (ConfigError, DEFAULT_WORK_CYCLE_FILE, JointLimits, KINDS, REALITY_CONFIG_FILE,
                            RobotConfig, SIMS, SIM_CONFIG_FILE, SimulatedRobot, TASK, make_generator)
from panda_pairs.pairs import CollectionSummary, LockStepRobot, PairBagWriter, collect_pairs


@dataclass(frozen=True)
class CollectionRequest:
    """What ``rosrun panda_pairs collect`` asks for. ``kinds`` either a subset of KINDS (the
    random moves) or only TASK: repeats of the work cycle in ``work_cycle``."""

    out: str
    trajectories: int
    seed: int = 0
    kinds: Sequence[str] = KINDS
    sim_config: str = SIM_CONFIG_FILE
    reality_config: str = REALITY_CONFIG_FILE
    generator_config: Optional[str] = None
    work_cycle: str = DEFAULT_WORK_CYCLE_FILE
    rate: Optional[float] = None       # publish rate of both robots [Hz]; None: their configs'
    show_progress: bool = True
    sim: str = "pybullet"              # the simulator: the sim config's engine, or gazebo (SIMS)


@dataclass(frozen=True)
class CollectionResult:
    summary: CollectionSummary
    wall_seconds: float
    label: str
    figures: dict = field(default_factory=dict)


def load_robot(path: str, limits: JointLimits, seed: int, rate: Optional[float]) -> SimulatedRobot:
    """A robot from its config file; the collection seed shifts its noise seed."""
    config = RobotConfig.from_yaml(path)
    return SimulatedRobot(config.with_overrides(publish_rate=rate, seed=config.seed + 7919 * seed), limits)


def load_simulator(sim: str, path: str, limits: JointLimits, seed: int,
                   rate: Optional[float]) -> LockStepRobot:
    """The simulator of ``path`` (a simulator config): on its own engine (``sim`` 'pybullet'),
    or in Gazebo 11 (``sim`` 'gazebo', gazebo_robot.py; the Gazebo image must exist)."""
    if sim not in SIMS:
        raise ConfigError(f"unknown simulator {sim!r}; expected one of {', '.join(SIMS)}")
    if sim == "pybullet":
        return load_robot(path, limits, seed, rate)
    from panda_sim2real import GazeboRobot
    config = RobotConfig.from_yaml(path)
    return GazeboRobot(config.with_overrides(publish_rate=rate), limits)


def run_collection(request: CollectionRequest, limits: Optional[JointLimits] = None) -> CollectionResult:
    """Build both robots and the generator, collect the pairs into ``request.out``."""
    limits = limits or JointLimits.from_yaml()
    generator = make_generator(request.kinds, request.seed, limits, request.generator_config,
                               request.work_cycle)
    real = load_robot(request.reality_config, limits, request.seed, request.rate)
    try:
        sim = load_simulator(request.sim, request.sim_config, limits, request.seed, request.rate)
    except BaseException:
        real.close()
        raise
    try:
        wall = time.perf_counter()
        with PairBagWriter(request.out, limits.joint_names, real.label) as writer, \
                tqdm(total=request.trajectories, unit="traj", disable=not request.show_progress,
                     desc="collect") as bar:
            summary = collect_pairs(sim, real, generator, request.trajectories, request.kinds,
                                    writer, progress=bar.update)
        wall = time.perf_counter() - wall
    finally:
        sim.close()
        real.close()
    figures = {"bag": request.out, "trajectories": summary.trajectories, "kinds": summary.kinds,
               "simulated_seconds": summary.simulated_seconds, "wall_seconds": wall,
               "real_time_factor": summary.simulated_seconds / wall if wall > 0 else None,
               "label": real.label, "seed": request.seed, "sim": request.sim,
               "sim_label": sim.label}
    if tuple(request.kinds) == (TASK,):
        figures["work_cycle"] = request.work_cycle
    return CollectionResult(summary, wall, real.label, figures)
