"""Per-stage errors against the robot: per-joint MSE of position, velocity and torque.

Random trajectories (the data sets of panda_pairs, aligned pairs at 100 Hz, physical units):
``simulation`` is the nominal simulator's side of the collected pairs, ``identified`` the
re-simulated side with the identified URDF, ``identified+realeasy`` that side corrected by the
Realeasy network, X + NN(X) (paper 000 eq. 9), each against the robot's side.

Task repeats (raw streams at the kernel step): every stage is a replay of the repeat's command in
a simulator put at rest at its start (kernel_manager_ros.panda.replay), the nominal one for
``simulation``, the identified one for the others, with the Realeasy correction applied to the
replayed stream where that stage is in the chain and the kernel manager (paper 001 §3.2: motor
kernels set the simulator's state, sensor kernels the reported one) for the kernel stage. All
stages of a set are compared on the same samples of the robot's stream.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from sim2real_pipeline.errors import PipelineError

KEYS = ("position_mse", "velocity_mse", "torque_mse")
Errors = dict[str, list[float]]           # KEYS -> per-joint MSE


def mse(pred: Sequence[np.ndarray], real: Sequence[np.ndarray]) -> Errors:
    """Per-joint MSE over all samples of the (T, 3 dof) [q, qd, tau] arrays."""
    from panda_pairs import per_joint_mse
    return per_joint_mse(np.concatenate(list(pred)), np.concatenate(list(real)))


def normalised_score(errors: Errors, reference: Errors) -> float:
    """The mean over the 3 x dof columns of MSE / the reference's MSE there: the acceptance
    gate's single figure (1 = as good as the reference, lower is better)."""
    ratios = [e / r for key in KEYS for e, r in zip(errors[key], reference[key]) if r > 0.0]
    return float(np.mean(ratios)) if ratios else float("nan")


def ratios(errors: Errors, reference: Errors) -> Errors:
    """reference / errors per column: how many times lower than the reference (> 1 = better)."""
    return {key: [r / e if e > 0.0 else float("inf") for e, r in zip(errors[key], reference[key])]
            for key in KEYS}


# ----------------------------------------------------------------------------------------------
# random trajectories

@dataclass(frozen=True)
class RandomSets:
    """Physical (pred, real) arrays per stage for the trajectories of one purpose."""

    ids: tuple[int, ...]
    stages: dict[str, tuple[list[np.ndarray], list[np.ndarray]]]


def load_datasets(nominal_path: str, identified_path: str) -> tuple[Any, Any]:
    """The nominal and the identified data sets (panda_pairs Dataset); PipelineError if one
    is missing or corrupt."""
    from panda_pairs import Dataset
    from panda_sim2real import PandaError
    try:
        return Dataset.load(nominal_path), Dataset.load(identified_path)
    except PandaError as exc:
        raise PipelineError("evaluate", exc) from exc


def random_sets(nominal: Any, identified: Any, wanted: Sequence[int],
                correct: Optional[Callable[[np.ndarray], np.ndarray]],
                realeasy_stage: str = "identified+realeasy") -> RandomSets:
    """The stages on the trajectories ``wanted`` (ids of one purpose, splits.py) that both data
    sets hold. ``correct`` maps an identified sim stream to its Realeasy correction (None: no
    Realeasy stage)."""
    index_n = {int(t): i for i, t in enumerate(nominal.trajectory_ids)}
    index_i = {int(t): i for i, t in enumerate(identified.trajectory_ids)}
    ids = tuple(sorted({int(t) for t in wanted} & set(index_n) & set(index_i)))
    if not ids:
        raise PipelineError("evaluate", f"none of the trajectories {sorted(map(int, wanted))[:10]} "
                                        f"is in both data sets")
    sim, ident, real = [], [], []
    for t in ids:
        s_n, r_n = nominal.trajectory(index_n[t], normalised=False)
        s_i, _ = identified.trajectory(index_i[t], normalised=False)
        # both data sets cut the robot's stream from the same start (its start point minus the
        # same lead); every stage is scored on the same robot samples, the shorter length
        n = min(len(s_n), len(s_i))
        sim.append(s_n[:n])
        ident.append(s_i[:n])
        real.append(r_n[:n])
    stages = {"simulation": (sim, real), "identified": (ident, real)}
    if correct is not None:
        stages[realeasy_stage] = ([correct(s) for s in ident], real)
    return RandomSets(ids, stages)


def errors_of(sets: RandomSets) -> dict[str, Errors]:
    """Per-joint MSE of every stage of ``sets``."""
    return {stage: mse(pred, real) for stage, (pred, real) in sets.stages.items()}


# ----------------------------------------------------------------------------------------------
# task repeats

@dataclass(frozen=True)
class TaskReplays:
    """Per stage, the replayed (pred) and recorded (real) streams of a set of repeats."""

    ids: tuple[int, ...]
    stages: dict[str, tuple[list[np.ndarray], list[np.ndarray]]]
    applications: dict[str, Any]


def task_trajectories(bag: str) -> tuple[list[Any], Any, str]:
    """The task repeats of a pair bag with their commands (panda_pairs TrajectoryPair),
    the Panda's state layout of config/panda_topics.yaml, and the robot's label."""
    from kernel_manager_ros import PANDA_TOPICS, PandaLayout, read_pair_trajectories
    from kernel_manager_ros import StateSpec
    from panda_sim2real import JointLimits
    spec = StateSpec.from_yaml(PANDA_TOPICS)
    limits = JointLimits.from_yaml()
    trajectories, label = read_pair_trajectories(bag, spec, limits)
    return trajectories, PandaLayout.from_spec(spec, limits.dof), label


def _stream(replay: Any, layout: Any) -> np.ndarray:
    """(T, 3 dof) [q, qd, tau] of a kernel replay."""
    if min(layout.position_index) < 0 or min(layout.velocity_index) < 0:
        raise PipelineError("evaluate", "the kernel state spec must hold every joint's position "
                                        "and velocity")
    q = replay.states[:, list(layout.position_index)]
    qd = replay.states[:, list(layout.velocity_index)]
    return np.concatenate([q, qd, replay.efforts], axis=1)


def task_replays(trajectories: Sequence[Any], layout: Any, step: float, settle: float,
                 nominal_config: str, identified_config: str,
                 correct: Optional[Callable[[np.ndarray], np.ndarray]],
                 kernel_set: Any, chain: str, progress: bool) -> TaskReplays:
    """Replay ``trajectories`` (panda_pairs TrajectoryPair) for every task stage:
    simulation, identified, ``chain`` (identified or identified+realeasy, the adopted stage
    before the kernels; with Realeasy when ``correct`` is given) and ``chain``+kernels."""
    from kernel_manager_ros import KernelManager
    from kernel_manager_ros import replay, step_indices
    from panda_sim2real import JointLimits
    from panda_sim2real import SimulatedRobot
    from panda_sim2real import RobotConfig
    from tqdm import tqdm

    limits = JointLimits.from_yaml()
    manager = KernelManager(kernel_set) if kernel_set is not None and len(kernel_set) else None
    kernel_stage = f"{chain}+kernels"
    names = ["simulation", "identified"] + ([chain] if chain != "identified" else [])
    if kernel_set is not None:
        names.append(kernel_stage)
    stages: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {n: ([], []) for n in names}
    applied = {"steps": 0, "motor": 0, "sensor": 0, "refused": 0}
    robots = {"simulation": SimulatedRobot(RobotConfig.from_yaml(nominal_config), limits),
              "identified": SimulatedRobot(RobotConfig.from_yaml(identified_config), limits)}
    try:
        for tr in tqdm(trajectories, desc="task replays", unit="repeat", disable=not progress):
            idx = step_indices(tr.real.t, step)
            real = np.concatenate([tr.real.q[idx], tr.real.qd[idx], tr.real.tau[idx]], axis=1)
            plain = {name: _stream(replay(robot, tr, layout, step, None, settle), layout)
                     for name, robot in robots.items()}
            runs = {"simulation": plain["simulation"], "identified": plain["identified"]}
            if chain != "identified":
                runs[chain] = correct(plain["identified"]) if correct else plain["identified"]
            if kernel_set is not None:
                if manager is None:
                    kernelled = plain["identified"]
                else:
                    run = replay(robots["identified"], tr, layout, step, manager, settle)
                    for key in applied:
                        applied[key] += getattr(run, key)
                    kernelled = _stream(run, layout)
                runs[kernel_stage] = correct(kernelled) if correct else kernelled
            for name, stream in runs.items():
                n = min(stream.shape[0], real.shape[0])
                stages[name][0].append(stream[:n])
                stages[name][1].append(real[:n])
    finally:
        for robot in robots.values():
            robot.close()
    steps = applied["steps"]
    applied["active_fraction"] = (applied["motor"] + applied["sensor"]) / steps if steps else 0.0
    return TaskReplays(tuple(int(tr.trajectory_id) for tr in trajectories), stages, applied)
