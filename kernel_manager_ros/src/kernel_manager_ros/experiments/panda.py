"""The Panda kernel experiment (issue 7, "Applied to the Panda"; ``panda-kernels``): pair bag ->
H_sim, H_phy of the training trajectories (:mod:`kernel_manager_ros.panda`) -> kernels
(Algorithm 1) -> replays of the held-out trajectories (not used for the kernels) in the
simulator with and without the kernel manager (:func:`kernel_manager_ros.panda.replay`).

Per-joint MSE of the reported positions and velocities against the stand-in's recording at the
step times, with and without kernels. Figures are labelled "reality stand-in"; plots with
matplotlib (Agg).
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
from tqdm import tqdm

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.generation import GenerationConfig
from kernel_manager_ros.kernel import KernelSet
from kernel_manager_ros.manager import KernelManager
from kernel_manager_ros.panda import (PANDA_TOPICS, PandaLayout, Replay, pair_kernels,
                                      read_pair_trajectories, replay, step_indices)
from kernel_manager_ros.state_spec import StateSpec
from panda_pairs import TrajectoryPair
from sim2real_checks import save_figure

LABEL = "reality stand-in"


def joint_mse(replays: Sequence[Replay], targets: Sequence[np.ndarray], layout: PandaLayout
              ) -> dict[str, list[Optional[float]]]:
    """Per-joint MSE of positions [rad^2] and velocities [(rad/s)^2] over all steps (None for
    a joint the state does not hold)."""
    n = [min(r.states.shape[0], t.shape[0]) for r, t in zip(replays, targets)]
    pred = np.concatenate([r.states[:k] for r, k in zip(replays, n)])
    true = np.concatenate([t[:k] for t, k in zip(targets, n)])
    err = np.square(pred - true).mean(axis=0)
    return {"position_mse": [float(err[i]) if i >= 0 else None for i in layout.position_index],
            "velocity_mse": [float(err[i]) if i >= 0 else None for i in layout.velocity_index]}


def _ratio(with_k: Sequence[Optional[float]], without: Sequence[Optional[float]]
           ) -> list[Optional[float]]:
    return [w / o if w is not None and o is not None and o > 0 else None
            for w, o in zip(with_k, without)]


@dataclass(frozen=True)
class PandaExperiment:
    """Settings of :func:`run_experiment` (``panda-kernels`` options)."""

    bag: Optional[str] = None              # a pair bag; None: collect one into out_dir
    out_dir: str = "panda_kernels_out"
    trajectories: int = 40                 # collected pairs (when bag is None)
    seed: int = 0
    held_out: float = 0.25                 # fraction of trajectories for the evaluation
    step: float = 0.01                     # s, the kernel MDP's step (publish period: 0.01)
    settle: float = 2.0                    # s at rest before each replayed trajectory
    spec_path: str = PANDA_TOPICS
    sim_config: Optional[str] = None       # panda_sim2real sim config (None: its default)
    # epsilon_c from the spec (0.004, ~1 % of each coordinate's range); sigma = 2 epsilon_c:
    # a kernel is active within c < 1.18 sigma of its centre. Wider regions (sigma >= 0.02)
    # fire more on held-out data but their local linear fits extrapolate badly there (README).
    generation: GenerationConfig = GenerationConfig(rollouts=2000, max_rollout_length=300,
                                                    sigma=0.008, epsilon_p=0.2, fit_length=3)

    def check(self) -> None:
        if not 0.0 < self.held_out < 1.0:
            raise KernelError(f"held_out must be in (0, 1), got {self.held_out}")
        if not (math.isfinite(self.step) and self.step > 0.0):
            raise KernelError(f"step must be > 0 s, got {self.step}")
        if not (math.isfinite(self.settle) and self.settle >= 0.0):
            raise KernelError(f"settle must be >= 0 s, got {self.settle}")
        if self.bag is None and self.trajectories < 2:
            raise KernelError(f"need at least 2 trajectories (training and held-out), got "
                              f"{self.trajectories}")
        self.generation.check()


def split(n: int, held_out: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random split of n trajectories: (training indices, held-out indices), both
    non-empty."""
    if n < 2:
        raise KernelError(f"need at least 2 trajectories to hold some out, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    n_test = min(n - 1, max(1, int(round(held_out * n))))
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def collect(out: str, trajectories: int, seed: int, progress: bool) -> dict[str, Any]:
    """Record a pair bag with panda_pairs' in-process collector (both robots in lock-step)."""
    from panda_pairs import CollectionRequest, run_collection
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    return run_collection(CollectionRequest(out=out, trajectories=trajectories, seed=seed,
                                            show_progress=progress)).figures


def run_experiment(config: PandaExperiment, progress: bool = True
                   ) -> tuple[dict[str, Any], KernelSet, dict[str, Any]]:
    """Pair bag -> H_sim, H_phy (training trajectories) -> kernels -> held-out replays with and
    without the kernel manager. Returns (JSON figures, kernels, data for plots)."""
    from panda_sim2real import JointLimits
    from panda_sim2real import SimulatedRobot
    from panda_sim2real import SIM_CONFIG_FILE, RobotConfig

    config.check()
    seconds: dict[str, float] = {}
    figures: dict[str, Any] = {"label": LABEL}
    clock = time.perf_counter()
    bag = config.bag
    if bag is None:
        bag = os.path.join(config.out_dir, "panda_pairs.bag")
        figures["collection"] = collect(bag, config.trajectories, config.seed, progress)
        seconds["collect"] = time.perf_counter() - clock
    spec = StateSpec.from_yaml(config.spec_path)
    limits = JointLimits.from_yaml()
    layout = PandaLayout.from_spec(spec, limits.dof)
    clock = time.perf_counter()
    trajectories, bag_label = read_pair_trajectories(bag, spec, limits)
    train, test = split(len(trajectories), config.held_out, config.seed)
    seconds["read"] = time.perf_counter() - clock
    made = pair_kernels([trajectories[i] for i in train], spec, layout, config.step,
                        config.generation, progress)
    kernel_set, report = made.kernels, made.report
    seconds["generate"] = sum(report.seconds.values())
    kernel_set.metadata.update(bag=os.path.abspath(bag),
                               label=f"kernels from simulation vs {bag_label}")

    clock = time.perf_counter()
    robot = SimulatedRobot(RobotConfig.from_yaml(config.sim_config or SIM_CONFIG_FILE), limits)
    manager = KernelManager(kernel_set) if len(kernel_set) else None
    held = [trajectories[i] for i in test]
    plain, kernelled, targets, recorded = [], [], [], []
    try:
        for tr in tqdm(held, desc="held-out replays", unit="traj", disable=not progress):
            plain.append(replay(robot, tr, layout, config.step, None, config.settle))
            kernelled.append(replay(robot, tr, layout, config.step, manager, config.settle))
            idx = step_indices(tr.real.t, config.step)
            targets.append(layout.states(tr.real.q[idx], tr.real.qd[idx], tr.real.tau[idx]))
            recorded.append(_recorded(tr, idx, layout))
    finally:
        robot.close()
    seconds["replay"] = time.perf_counter() - clock
    without = joint_mse(plain, targets, layout)
    with_k = joint_mse(kernelled, targets, layout)
    in_bag = joint_mse(recorded, targets, layout)
    steps = sum(r.steps for r in kernelled)
    figures.update({
        "label": bag_label or LABEL,
        "bag": os.path.abspath(bag),
        "trajectories": {"train": len(train), "held_out": len(test),
                         "held_out_ids": [tr.trajectory_id for tr in held]},
        "step_seconds": config.step,
        "history": {"sim_transitions": made.sim_transitions,
                    "phy_transitions": made.phy_transitions},
        "kernels": {**kernel_set.counts(), "total": len(kernel_set)},
        "generation": {k: v for k, v in report.to_dict().items() if k != "seconds"},
        "settings": {"epsilon_c": report.epsilon_c,
                     "sigma": kernel_set.metadata.get("sigma"),
                     "activation_threshold": kernel_set.activation_threshold,
                     "rollouts": config.generation.rollouts,
                     "max_rollout_length": config.generation.max_rollout_length,
                     "epsilon_p": config.generation.epsilon_p,
                     "fit_length": config.generation.fit_length, "seed": config.seed,
                     "settle_seconds": config.settle},
        "without_kernels": without,
        "with_kernels": with_k,
        "recorded_sim": in_bag,
        "ratio": {"position_mse": _ratio(with_k["position_mse"], without["position_mse"]),
                  "velocity_mse": _ratio(with_k["velocity_mse"], without["velocity_mse"]),
                  "position_mse_sum": _sum_ratio(with_k["position_mse"],
                                                 without["position_mse"]),
                  "velocity_mse_sum": _sum_ratio(with_k["velocity_mse"],
                                                 without["velocity_mse"])},
        "applications": {"steps": steps, "motor": sum(r.motor for r in kernelled),
                         "sensor": sum(r.sensor for r in kernelled),
                         "refused": sum(r.refused for r in kernelled),
                         "active_fraction": (sum(r.motor + r.sensor for r in kernelled) / steps
                                             if steps else 0.0),
                         "distinct_kernels": len(set().union(*(r.kernels_used
                                                               for r in kernelled)))},
        "seconds": seconds,
    })
    plots = {"held": held, "plain": plain, "kernelled": kernelled, "targets": targets,
             "layout": layout}
    return figures, kernel_set, plots


def _sum_ratio(with_k: Sequence[Optional[float]], without: Sequence[Optional[float]]
               ) -> Optional[float]:
    a = sum(v for v in with_k if v is not None)
    b = sum(v for v in without if v is not None)
    return a / b if b > 0 else None


def _recorded(trajectory: TrajectoryPair, idx: np.ndarray, layout: PandaLayout) -> Replay:
    """The bag's own simulation stream at the step samples (a check of the replay)."""
    sim = trajectory.sim
    idx = idx[idx < sim.t.size]
    return Replay(times=sim.t[idx], states=layout.states(sim.q[idx], sim.qd[idx], sim.tau[idx]))


def plot(figures: dict[str, Any], plots: dict[str, Any], folder: str) -> list[str]:
    """Per-joint MSE bars (with / without kernels) and one held-out trajectory's positions and
    velocities (stand-in, simulation, simulation + kernels); matplotlib Agg, PNG files."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(folder, exist_ok=True)
    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    joints = np.arange(1, 8)
    for ax, key, unit in zip(axes, ("position_mse", "velocity_mse"), ("rad²", "(rad/s)²")):
        without = [v or 0.0 for v in figures["without_kernels"][key]]
        with_k = [v or 0.0 for v in figures["with_kernels"][key]]
        ax.bar(joints - 0.2, without, 0.4, label="simulation", color="tab:blue")
        ax.bar(joints + 0.2, with_k, 0.4, label="simulation + kernels", color="tab:red")
        ax.set_yscale("log")
        ax.set_xlabel("joint")
        ax.set_ylabel(f"MSE [{unit}]")
        ax.set_title(f"{key.split('_')[0]} vs {LABEL}")
    axes[0].legend(fontsize=8)
    k = figures["kernels"]
    fig.suptitle(f"Panda, held-out trajectories ({LABEL}); {k['motor']} motor + "
                 f"{k['sensor']} sensor kernels", fontsize=10)
    fig.tight_layout()
    paths.append(os.path.join(folder, "panda_mse.png"))
    save_figure(fig, paths[-1], dpi=120)

    layout: PandaLayout = plots["layout"]
    lengths = [r.times.size for r in plots["plain"]]
    i = int(np.argmax(lengths))
    tr = plots["held"][i]
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for ax, index, unit in ((axes[0], layout.position_index, "rad"),
                            (axes[1], layout.velocity_index, "rad/s")):
        errs = [np.abs(plots["plain"][i].states[:, c] - plots["targets"][i][:, c]).max()
                if c >= 0 else -1.0 for c in index]
        c = index[int(np.argmax(errs))]
        if c < 0:
            continue
        t = plots["plain"][i].times - tr.start
        ax.plot(t, plots["targets"][i][:, c], color="tab:green", label=LABEL)
        ax.plot(t, plots["plain"][i].states[:, c], color="tab:blue", label="simulation")
        ax.plot(t, plots["kernelled"][i].states[:, c], color="tab:red", lw=0.8,
                label="simulation + kernels")
        ax.set_ylabel(f"{layout.spec.state_names[c]} [{unit}]")
    axes[0].legend(fontsize=8)
    axes[1].set_xlabel(f"t [s] (held-out trajectory {tr.trajectory_id}, {tr.kind})")
    fig.tight_layout()
    paths.append(os.path.join(folder, "panda_trajectory.png"))
    save_figure(fig, paths[-1], dpi=120)
    return paths
