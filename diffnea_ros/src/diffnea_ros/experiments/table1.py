"""Paper 002 Table 1 and Fig. 1 in simulation (PyBullet KUKA iiwa, not a real robot): every
model trained per seed on the sine-tracking data with L_ID (eq. 2) until the training NMSE of
every joint is <= 0.1 (§4.1.1), then driving the sine-tracking and operational-space controllers;
the online-learning curves of Fig. 1. ``run_table1`` returns the figures the tool
``reproduce_table1`` writes; ``table1_report`` turns them into its Markdown table and plot."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import torch

from diffnea_ros.algorithms import rnea
from diffnea_ros.experiments.baselines import BASELINES, make_baseline
from diffnea_ros.experiments.random_init import randomise_dynamics
from diffnea_ros.experiments.sine_tracking import (RECORD_RATE, TrackingConfig, kuka_urdf_path,
                                                   perturb_inertials, simulate_sine_tracking)
from diffnea_ros.experiments.tracking import (OperationalSpaceConfig, ground_truth, reaching_goals,
                                              track_operational_space, track_sine)
from diffnea_ros.identification import (FitConfig, Samples, consistency_of,
                                        diffnea_predictor, evaluate_nmse, fit, module_predictor)
from diffnea_ros.learnable import LearnableDynamics
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.parametrisation import PARAMETRISATIONS
from diffnea_ros.urdf import RobotDescription, load_robot

LABEL = "simulation: PyBullet KUKA iiwa (pybullet_data), not a real robot"
STOP_NMSE = 0.1   # paper 002 §4.1.1: "at most a NMSE of 0.1 for all joints"
INITS = ("random", "perturbed")
NAMES = {"nostr": "DiffNEA NoStr", "symm": "DiffNEA Symm", "spd": "DiffNEA SPD",
         "tri": "DiffNEA Tri", "cov": "DiffNEA Cov", "mlp": "MLP", "delan": "DeLaN",
         "truth": "Ground Truth"}
# paper 002 Table 1: epochs, q, qd, x, xd tracking NMSE (mean ± std over 5 seeds)
PAPER = {"truth": ("N/A", "0.000", "0.000", "0.005 ± 0.006", "0.008 ± 0.010"),
         "mlp": ("23 ± 3", "0.000", "0.001", "0.256 ± 0.405", "5.542 ± 6.980"),
         "delan": ("58 ± 19", "0.000", "0.001", "0.016 ± 0.008", "0.254 ± 0.278"),
         "nostr": ("61 ± 53", "0.000", "0.005 ± 0.006", "0.005 ± 0.006", "0.037 ± 0.057"),
         "symm": ("8 ± 4", "0.000", "0.000", "0.005 ± 0.006", "0.011 ± 0.011"),
         "spd": ("2 ± 1", "0.000", "0.000", "0.005 ± 0.006", "0.008 ± 0.010"),
         "tri": ("2 ± 1", "0.000", "0.000", "0.005 ± 0.006", "0.008 ± 0.010"),
         "cov": ("2 ± 1", "0.000", "0.000", "0.005 ± 0.006", "0.008 ± 0.010")}
METRICS = ("nmse_q", "nmse_qd", "nmse_x", "nmse_xd")
RMS = ("rms_q", "rms_qd", "rms_x", "rms_xd")


@dataclass
class Table1Config:
    """What ``reproduce_table1`` runs (its flags, with the same defaults)."""

    seeds: int = 5
    epochs: int = 200
    duration: float = 600.0             # simulated seconds of training data (the paper's 600 s)
    track_seconds: float = 30.0
    inits: list[str] = field(default_factory=lambda: list(INITS))
    draws: str = "released"             # diffnea_ros.experiments.random_init.DRAWS
    scales: list[float] = field(default_factory=lambda: [0.5, 0.9])
    params: list[str] = field(default_factory=lambda: list(PARAMETRISATIONS))
    baselines: list[str] = field(default_factory=lambda: list(BASELINES))
    acceleration: str = "savgol"        # sine_tracking.ACCELERATIONS
    com: str = "learned"                # or "urdf": the CoM kept at the start model's
    batches: str = "shuffled"           # or "sequential": the data's order
    lr: float = 1e-2
    batch_size: int = 256
    os_tasks: int = 5                   # reaching goals per seed; 0: no tracking
    online: bool = False
    online_epochs: int = 3
    online_seconds: float = 30.0
    threads: int = 1

    def sections(self) -> list[dict[str, Any]]:
        """One table section per start: the random one, then one per perturbation scale."""
        return (([{"init": "random", "scale": None}] if "random" in self.inits else [])
                + ([{"init": "perturbed", "scale": s} for s in self.scales]
                   if "perturbed" in self.inits else []))

    def kinds(self, section: dict[str, Any]) -> list[str]:
        """The models of a section: the parametrisations, and the baselines from a random start."""
        return self.params + (self.baselines if section["init"] == "random" else [])


def _finite(values: Any) -> list[Optional[float]]:
    """JSON-safe list: NaN/inf (a diverged NoStr run) become None."""
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, dtype=float)]


class Evaluation:
    """Tracking of one inverse-dynamics model: (a) sine waves, (b) the seed's reaching goals."""

    def __init__(self, urdf: str, duration: float, os_tasks: int) -> None:
        self.urdf = urdf
        self.sine = TrackingConfig(duration=duration)
        self.reaching = OperationalSpaceConfig(tasks=max(os_tasks, 1))
        self.enabled = os_tasks > 0
        self.goals: dict[int, np.ndarray] = {}

    def __call__(self, model: Callable, seed: int) -> dict[str, Any]:
        if not self.enabled:
            return {}
        if seed not in self.goals:
            self.goals[seed] = reaching_goals(seed, self.reaching, self.urdf)
        sine = track_sine(model, self.sine, self.urdf)
        reach = track_operational_space(model, self.goals[seed], self.reaching, self.urdf)
        return {"sine_stable": sine.stable, "reach_stable": reach.stable,
                "nmse_q": float(np.mean(sine.nmse_q)) if sine.stable else None,
                "nmse_qd": float(np.mean(sine.nmse_qd)) if sine.stable else None,
                "nmse_x": reach.nmse_x, "nmse_xd": reach.nmse_xd,
                "rms_q": sine.rms_q if sine.stable else None,
                "rms_qd": sine.rms_qd if sine.stable else None,
                "rms_x": reach.rms_x if reach.stable else None,
                "rms_xd": reach.rms_xd if reach.stable else None}


def trained_row(kind: str, init: str, scale: Optional[float], seed: int, module: torch.nn.Module,
                predict: Callable, samples: Samples, config: Table1Config) -> dict[str, Any]:
    """Fit ``module`` (identification.fit, the one loop) and its row of the table; the
    consistency columns for DiffNEA only."""
    dynamics = module if isinstance(module, LearnableDynamics) else None
    start_consistent = consistency_of(dynamics).consistent if dynamics is not None else None
    result = fit(list(module.parameters()), predict, samples, fit_config(config, seed))
    return {"model": kind, "init": init, "scale": scale, "seed": seed,
            "epochs_to_threshold": result.epochs_to_threshold, "epochs_run": result.epochs,
            "seconds": result.seconds, "nmse_before": _finite(result.nmse_before),
            "nmse_after": _finite(result.nmse_after), "diverged": result.diverged,
            "start_consistent": start_consistent,
            "consistent": consistency_of(dynamics).consistent if dynamics is not None else None}


def learnable(model: RigidBodyModel, kind: str, config: Table1Config) -> LearnableDynamics:
    """DiffNEA of ``kind`` on ``model``, its CoM learnt or kept as ``--com`` says."""
    return LearnableDynamics(model, kind, learn_com=config.com == "learned")


def run_perturbed(description: RobotDescription, samples: Samples, kind: str, seed: int,
                  scale: float, config: Table1Config) -> tuple[dict[str, Any], Callable]:
    """DiffNEA from the seed's perturbed URDF (perturb_inertials)."""
    initial = perturb_inertials(description, np.random.default_rng(seed), scale)
    dynamics = learnable(RigidBodyModel(initial), kind, config)
    return trained_row(kind, "perturbed", scale, seed, dynamics, diffnea_predictor(dynamics, samples),
                       samples, config), dynamics


def run_random(model: RigidBodyModel, samples: Samples, kind: str, seed: int,
               config: Table1Config) -> tuple[dict[str, Any], Callable]:
    """DiffNEA from the seed's random initialisation (diffnea_ros.experiments.random_init)."""
    dynamics = randomise_dynamics(learnable(model, kind, config), seed, config.draws)
    return trained_row(kind, "random", None, seed, dynamics, diffnea_predictor(dynamics, samples),
                       samples, config), dynamics


def run_baseline(dof: int, samples: Samples, kind: str, seed: int,
                 config: Table1Config) -> tuple[dict[str, Any], Callable]:
    """The MLP or DeLaN baseline from the seed's network initialisation."""
    network = make_baseline(kind, dof, samples, seed)
    return trained_row(kind, "random", None, seed, network, module_predictor(network, samples),
                       samples, config), network


def fit_config(config: Table1Config, seed: int, online: bool = False) -> FitConfig:
    """The training of one run: until the §4.1.1 threshold, or online (Fig. 1) without one."""
    return FitConfig(epochs=config.online_epochs if online else config.epochs,
                     batch_size=config.batch_size, learning_rate=config.lr,
                     stop_nmse=None if online else STOP_NMSE, online=online,
                     shuffle=config.batches == "shuffled", seed=seed)


def _mean_std(values: list[Any]) -> Optional[tuple[float, float]]:
    finite = [v for v in values if v is not None and np.isfinite(v)]
    return (float(np.mean(finite)), float(np.std(finite))) if finite else None


def summarise(runs: list[dict[str, Any]], section: dict[str, Any], kind: str) -> dict[str, Any]:
    """One row of Table 1: ``kind``'s runs of ``section``, mean ± std over the seeds."""
    mine = [r for r in runs if r["model"] == kind and r["init"] == section["init"]
            and r["scale"] == section["scale"]]
    epochs = [r["epochs_to_threshold"] for r in mine]
    worst = [max(v if v is not None else np.inf for v in r["nmse_after"]) for r in mine]
    out = {"model": kind, **section, "runs": len(mine),
           "reached": sum(e is not None for e in epochs), "epochs": _mean_std(epochs),
           "final_worst_nmse_median": float(np.median(worst)) if worst else None,
           "consistent": (sum(bool(r["consistent"]) for r in mine)
                          if mine and mine[0]["consistent"] is not None else None),
           "paper": PAPER[kind]}
    for key in METRICS + RMS:
        out[key] = _mean_std([r.get(key) for r in mine])
    out["unstable"] = sum(not (r.get("sine_stable", True) and r.get("reach_stable", True))
                          for r in mine)
    return out


def online_curves(model: RigidBodyModel, description: RobotDescription, samples: Samples,
                  config: Table1Config, bar: Any) -> list[dict[str, Any]]:
    """Paper Fig. 1: NMSE on the whole data set after every sequential batch of 256 (seed 0)."""
    curves = []

    def add(name: str, start: str, before: np.ndarray, curve: list[dict[str, Any]]) -> None:
        curves.append({"model": name, "start": start, "points": [
            {"samples": 0, "nmse": _finite(before)}] + [
            {"samples": point["samples"], "nmse": _finite(point["nmse"])} for point in curve]})
        bar.update(1)

    starts: list[tuple[str, str, torch.nn.Module, Callable]] = []
    for init in config.inits:
        for kind in config.params:
            if init == "random":
                dynamics, label = randomise_dynamics(learnable(model, kind, config), 0, config.draws), "random"
            else:
                initial = perturb_inertials(description, np.random.default_rng(0), config.scales[0])
                dynamics = learnable(RigidBodyModel(initial), kind, config)
                label = f"perturbed s={config.scales[0]:g}"
            starts.append((kind, label, dynamics, diffnea_predictor(dynamics, samples)))
    for kind in config.baselines:
        network = make_baseline(kind, model.dof, samples, 0)
        starts.append((kind, "random", network, module_predictor(network, samples)))
    for kind, label, module, predict in starts:
        result = fit(list(module.parameters()), predict, samples, fit_config(config, 0, online=True))
        add(kind, label, result.nmse_before, result.online_curve)
    return curves


def run_table1(config: Table1Config, progress: Callable[[int], Any]) -> dict[str, Any]:
    """Every run of ``config`` and its summary (the tool's JSON); ``progress(total)`` makes the
    progress bar (tqdm-like: ``update``, ``set_postfix_str``, a context manager)."""
    torch.set_num_threads(config.threads)
    urdf = kuka_urdf_path()
    description = load_robot(urdf)
    data = simulate_sine_tracking(TrackingConfig(duration=config.duration), urdf)
    samples = data.samples(config.acceleration)
    truth = RigidBodyModel(description)
    ground_truth_nmse = evaluate_nmse(lambda q, qd, qdd: rnea(truth, q, qd, qdd), samples)
    evaluate = Evaluation(urdf, config.track_seconds, config.os_tasks)
    sections = config.sections()
    jobs: list[tuple[str, Optional[float], str, int]] = [("truth", None, "truth", seed)
                                                         for seed in range(config.seeds)]
    for section in sections:
        jobs += [(section["init"], section["scale"], kind, seed) for kind in config.kinds(section)
                 for seed in range(config.seeds)]
    online_jobs = (len(config.inits) * len(config.params) + len(config.baselines)) if config.online else 0
    runs: list[dict[str, Any]] = []
    with progress(len(jobs) + online_jobs) as bar:
        for init, scale, kind, seed in jobs:
            bar.set_postfix_str(f"{init} {'' if scale is None else scale} {kind} seed {seed}")
            if kind == "truth":
                row, model = ({"model": "truth", "init": "random", "scale": None, "seed": seed,
                               "epochs_to_threshold": None, "consistent": None,
                               "nmse_after": _finite(ground_truth_nmse)}, ground_truth(truth))
            elif init == "perturbed":
                row, model = run_perturbed(description, samples, kind, seed, scale, config)
            elif kind in BASELINES:
                row, model = run_baseline(truth.dof, samples, kind, seed, config)
            else:
                row, model = run_random(truth, samples, kind, seed, config)
            row.update(evaluate(model, seed))
            runs.append(row)
            bar.update(1)
        online = None
        if config.online:
            bar.set_postfix_str("online")
            first = torch.arange(min(len(samples), int(round(config.online_seconds * RECORD_RATE))))
            online = online_curves(truth, description, samples.subset(first), config, bar)
    summary = []
    for section in sections:
        summary += [summarise(runs, section, kind) for kind in config.kinds(section)]
    truth_summary = summarise(runs, {"init": "random", "scale": None}, "truth")
    figures = {
        "label": LABEL,
        "setup": {"duration": config.duration, "track_seconds": config.track_seconds, "samples": len(samples),
                  "acceleration": config.acceleration, "draws": config.draws,
                  "com": config.com, "batches": config.batches,
                  "ground_truth_nmse": _finite(ground_truth_nmse),
                  "tracking_rms": data.tracking_rms().tolist(), "lr": config.lr,
                  "batch_size": config.batch_size, "max_epochs": config.epochs, "seeds": config.seeds,
                  "inits": config.inits, "scales": config.scales, "params": config.params,
                  "baselines": config.baselines, "sections": sections, "stop_nmse": STOP_NMSE,
                  "os_tasks": config.os_tasks, "online_epochs": config.online_epochs,
                  "online_seconds": config.online_seconds,
                  "threads": config.threads, "joint_names": list(data.joint_names),
                  "reaching_goals": {str(k): v.tolist() for k, v in evaluate.goals.items()}},
        "summary": [truth_summary] + summary,
        "runs": runs,
        "online": online,
    }
    if "random" not in config.inits:   # the truth row goes with the first section
        for section in sections[:1]:
            figures["summary"][0].update(section)
    return figures
