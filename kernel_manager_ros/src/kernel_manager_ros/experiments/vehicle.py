"""The delivery-vehicle experiment of paper 001 §4-6, in-process, from one call.

"Deployment" here is OUR vehicle simulation with an unexpected ramp (and, for the sensor case, a
1 Hz GPS): it plays the role of the real robot, it is not a real robot. Every figure, title and
JSON label says so.

:func:`run_experiment` (settings :class:`ExperimentConfig`, seeds derived from one ``seed``):
design and deployment missions recorded to bags (H_sim, H_phy, eq. 4); kernels by Algorithm 1
with our refinement rounds and the ramp's state weights (eq. 8); the original program with the
kernels (:class:`KernelHook`; eq. 9 for sensor kernels) and the gap closure; the redesign by
SARSA and by a parameter grid, redeployed; :func:`predict_programs`; the sensor-kernel case
(§6.2); :func:`plot_experiment` (Fig. 4/6/9/10 style).

The stages, the settings and why: README.md, "The delivery-vehicle experiment".
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
from scipy.spatial import cKDTree
from tqdm import tqdm

from kernel_manager_ros.bag_history import read_history
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.generation import GenerationConfig, GenerationReport, generate_kernels
from kernel_manager_ros.history import History
from kernel_manager_ros.kernel import KernelSet
from kernel_manager_ros.kernel_file import save_kernels
from kernel_manager_ros.manager import KernelManager
from kernel_manager_ros.config_files import config_path
from kernel_manager_ros.vehicle.mission import MissionConfig
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.vehicle.messages import SensorFields
from kernel_manager_ros.vehicle.model import Ramp, VehicleConfig
from kernel_manager_ros.vehicle.sarsa import SarsaSpeedPolicy
from kernel_manager_ros.vehicle.run import (
    RunResult, SensorOverride, StepContext, run_missions, write_bag)
from sim2real_checks import save_figure

LABEL = ("deployment = our vehicle simulation with an unexpected ramp (and, in the sensor case, "
         "a 1 Hz GPS), not a real robot")
DEPLOY_NAME = "Deploy (simulated)"
# Missions are separated by 2 s without messages (vehicle.run.run_missions' mission_gap); the
# control period is 0.1 s: a gap of 1 s splits the bags into missions.
EPISODE_GAP = 1.0


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything ``run_experiment`` needs; the defaults are the tuned settings of the README."""

    missions: int = 100
    seed: int = 0
    work_dir: str = "vehicle_experiment"
    design_config: str = field(default_factory=lambda: config_path("vehicle_design.yaml"))
    deploy_config: str = field(default_factory=lambda: config_path("vehicle_deploy.yaml"))
    slow_gps_config: str = field(
        default_factory=lambda: config_path("vehicle_deploy_slow_gps.yaml"))
    mission_config: str = field(default_factory=lambda: config_path("mission.yaml"))
    topics_config: str = field(default_factory=lambda: config_path("vehicle_topics.yaml"))
    # Algorithm 1 for the ramp (motor kernels); seeds are replaced per round
    generation: GenerationConfig = GenerationConfig(rollouts=1000, epsilon_p=0.5,
                                                    significance=0.05, fit_rows="states",
                                                    sensor_kernels=False)
    ramp_weights: Optional[Mapping[str, Sequence[float]]] = field(
        default_factory=lambda: {"gps": (1.0, 1.0), "gps_vel": (0.5, 0.5), "pitch": (20.0,)})
    rounds: int = 4                    # generation rounds (1 = Algorithm 1 once)
    # Algorithm 1 for the sensor case (§6.2): sensor kernels kept, the spec's weights
    sensor_generation: GenerationConfig = GenerationConfig(rollouts=1000, significance=0.05,
                                                           sensor_kernels=True)
    sensor_weights: Optional[Mapping[str, Sequence[float]]] = None
    # the redesign's parameter grid (every combination, in this order)
    redesign_grid: Mapping[str, Sequence[float]] = field(default_factory=lambda: {
        "pitch_speed_gain": (0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0), "max_speed": (1.5, 1.7)})
    # the redesign with SARSA as in the paper (vehicle/sarsa.py): training missions in the
    # kernel-modified simulation, pitch-bin edges (rad), speed factors, step size, exploration
    sarsa_episodes: int = 300
    sarsa_edges: Sequence[float] = (0.05,)
    sarsa_factors: Sequence[float] = (1.0, 1.25, 1.5, 2.0)
    sarsa_alpha: float = 0.1
    sarsa_epsilon: float = 0.1
    # SARSA's stability over seeds: further trainings, each with its own learner and mission
    # seeds, each greedy rule run in the kernel simulation and redeployed on the fresh seeds
    sarsa_repeats: int = 4
    # the prediction experiment (stage e2): control programs besides the design and the
    # redesigned one, each run in the design simulation, in the kernel simulations (Algorithm 1
    # alone and extended) and in the deployment on seeds no other stage uses
    prediction_programs: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: {
        "speed_only": {"max_speed": 1.7}, "pitch_rule": {"pitch_speed_gain": 8.0}})
    sensor_case: bool = True
    plots_dir: Optional[str] = None

    def check(self) -> None:
        if isinstance(self.missions, bool) or not isinstance(self.missions, int) \
                or self.missions < 1:
            raise KernelError(f"missions must be an integer >= 1, got {self.missions!r}")
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise KernelError(f"rounds must be an integer >= 1, got {self.rounds!r}")
        self.generation.check()
        self.sensor_generation.check()
        if not self.redesign_grid:
            raise KernelError("the redesign grid needs at least one parameter")
        for name, values in self.redesign_grid.items():
            if not values:
                raise KernelError(f"redesign grid: no values for {name}")
        if isinstance(self.sarsa_episodes, bool) or not isinstance(self.sarsa_episodes, int) \
                or self.sarsa_episodes < 0:
            raise KernelError(f"sarsa_episodes must be an integer >= 0, got "
                              f"{self.sarsa_episodes!r}")
        if isinstance(self.sarsa_repeats, bool) or not isinstance(self.sarsa_repeats, int) \
                or self.sarsa_repeats < 0:
            raise KernelError(f"sarsa_repeats must be an integer >= 0, got {self.sarsa_repeats!r}")
        reserved = {"design", "redesigned", "redesigned_sarsa"} & set(self.prediction_programs)
        if reserved:
            raise KernelError(f"prediction programs: {sorted(reserved)} are reserved names")


def weighted_spec(spec: StateSpec, weights: Optional[Mapping[str, Sequence[float]]]) -> StateSpec:
    """``spec`` with the eq. 8 weights of the named sensors replaced (None: unchanged)."""
    if not weights:
        return spec
    names = {c.name for c in spec.sensors}
    unknown = set(weights) - names
    if unknown:
        raise KernelError(f"state weights for unknown sensors {sorted(unknown)} (the spec has "
                          f"{sorted(names)})")
    sensors = tuple(replace(c, weights=tuple(float(w) for w in weights[c.name]))
                    if c.name in weights else c for c in spec.sensors)
    return replace(spec, sensors=sensors)


class KernelHook:
    """The kernel manager in the step hook of ``run_missions`` (paper 001 Fig. 2, §3.2).

    Like the ``kernel_manager`` node, the manager decides on the state s_t the SIMULATION
    reported (not on a sensor kernel's output the program read) and the action a_t. A motor
    kernel sets the simulation to f_k(s_t, a_t) through its configuration interface
    (``VehicleModel.set_state``: position, yaw and speed from the GPS velocity, pitch), so the
    simulation and the program continue from it; a sensor kernel only replaces what the program
    reads from the sensors it holds: they keep the values and stamps the program read at t
    (eq. 9: f_k is the identity on them; like the node, which republishes the last message it
    published), so a hold goes on while the simulation's states stay inside sensor kernels; the
    other sensors report as the simulation does and the simulation is untouched. Counts every
    application."""

    def __init__(self, kernel_set: KernelSet, spec: StateSpec, period: float) -> None:
        self.manager = KernelManager(kernel_set)
        self.fields = SensorFields.of(spec)
        self.slices = spec.sensor_slices
        self.period = float(period)
        self.steps = 0
        self.applied = {"motor": 0, "sensor": 0}
        self.used: set[int] = set()
        self._reported: Optional[tuple[float, np.ndarray]] = None   # (t, s) for the next step

    def __call__(self, ctx: StepContext) -> Optional[SensorOverride]:
        self.steps += 1
        state = ctx.state
        if self._reported is not None and abs(ctx.t - self._reported[0]) < 0.5 * self.period:
            state = self._reported[1]              # the simulation's own report of s_t
        decision = self.manager.decide(state, ctx.action)
        t_next = ctx.t + self.period
        if decision is None:
            self._reported = (t_next, ctx.next_state)
            return None
        self.applied[decision.kind] += 1
        self.used.add(decision.index)
        if decision.kind == "motor":
            ctx.vehicle.set_state(**self.fields.set_state_arguments(decision.next_state))
            self._reported = (t_next, decision.next_state)
            return SensorOverride(decision.next_state)
        self._reported = (t_next, ctx.next_state)
        seen, seen_stamps = ctx.next_state.copy(), ctx.next_stamps.copy()
        for i, (name, sl) in enumerate(self.slices.items()):
            if name in decision.held:
                seen[sl], seen_stamps[i] = ctx.state[sl], ctx.stamps[i]
        return SensorOverride(seen, seen_stamps)

    def summary(self) -> dict[str, Any]:
        return {"steps": self.steps, "applied": dict(self.applied),
                "kernels_used": len(self.used)}


@dataclass
class _Context:
    """What the stages share: configs, spec, seeds, timings, progress bar."""

    config: ExperimentConfig
    mission: MissionConfig
    spec: StateSpec
    design: VehicleConfig
    deploy: VehicleConfig
    slow_gps: VehicleConfig
    bar: Any
    timings: dict[str, float] = field(default_factory=dict)
    runs: dict[str, RunResult] = field(default_factory=dict)
    kernel_sets: dict[str, KernelSet] = field(default_factory=dict)

    def seed(self, offset: int) -> int:
        return int(self.config.seed) * 1000 + offset

    def stage(self, name: str, fn: Callable[[], Any]) -> Any:
        self.bar.set_postfix_str(name)
        clock = time.perf_counter()
        out = fn()
        self.timings[name] = round(time.perf_counter() - clock, 3)
        self.bar.update(1)
        return out

    def bag(self, name: str) -> str:
        return os.path.join(self.config.work_dir, name)


def _recorded(ctx: _Context, vehicle: VehicleConfig, mission: MissionConfig, offset: int,
              bag: str, label: str, hook: Optional[KernelHook] = None) -> RunResult:
    run = run_missions(vehicle, mission, ctx.spec, ctx.config.missions, seed=ctx.seed(offset),
                       hook=hook, record_messages=True, label=label)
    write_bag(ctx.bag(bag), run)
    for log in run.missions:     # the messages are in the bag now; free the memory
        log.messages = []
    return run


def _history(ctx: _Context, bag: str, what: str) -> History:
    return read_history(ctx.bag(bag), ctx.spec, episode_gap=EPISODE_GAP, what=what)


def _merge(previous: Optional[KernelSet], new: KernelSet, report: GenerationReport,
           round_index: int) -> KernelSet:
    """Round r's kernels appended after the earlier ones; metadata keeps every round's report."""
    if previous is None:
        merged = new
        merged.metadata["rounds"] = []
    else:
        merged = previous.with_kernels(previous.kernels + new.kernels)
    merged.metadata["rounds"] = list(merged.metadata.get("rounds", [])) + [
        {"round": round_index, "kernels": len(new), **new.counts(),
         "common_states": report.common_states, "divergences": report.divergences}]
    return merged


def _kernel_rounds(ctx: _Context, spec: StateSpec, generation: GenerationConfig, rounds: int,
                   sim_bag: str, phy: History, deploy_label: str, prefix: str
                   ) -> tuple[KernelSet, list[dict[str, Any]]]:
    """Algorithm 1, then ``rounds - 1`` refinement rounds from the kernel-modified simulation's
    bags (README.md, "The delivery-vehicle experiment", step 3)."""
    kernel_set: Optional[KernelSet] = None
    reports = []
    bag = sim_bag
    for r in range(rounds):
        sim = read_history(ctx.bag(bag), spec, episode_gap=EPISODE_GAP,
                           what=f"simulation history ({bag})")
        new, report = generate_kernels(sim, phy, spec, replace(generation,
                                                              seed=ctx.seed(100 + r)),
                                       progress=False)
        kernel_set = _merge(kernel_set, new, report, r)
        entry = {"round": r, "sim_bag": bag, "sim_steps": len(sim), **report.to_dict()}
        if r + 1 < rounds:
            bag = f"{prefix}_kernel_sim_round{r + 1}.bag"
            hook = KernelHook(kernel_set, spec, ctx.mission.period)
            run = _recorded(ctx, ctx.design, ctx.mission, 200 + r, bag,
                            f"kernel sim round {r + 1}", hook)
            entry["next_round_atr"] = float(run.atr[-1])
        reports.append(entry)
        ctx.bar.set_postfix_str(f"{prefix} kernels round {r + 1}/{rounds}: {len(kernel_set)}")
    assert kernel_set is not None
    kernel_set.metadata.update(label=deploy_label, sim_bag=ctx.bag(sim_bag))
    return kernel_set, reports


def _grid(grid: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    combos: list[dict[str, float]] = [{}]
    for name, values in grid.items():
        combos = [dict(c, **{name: float(v)}) for c in combos for v in values]
    return combos


def track_distance(track: np.ndarray, reference: np.ndarray) -> float:
    """Mean distance (m) from every point of ``track`` (n, 2) to the nearest point of
    ``reference`` (k, 2): how far a run's path lies from the deployment's path."""
    distance, _ = cKDTree(reference).query(track)
    return float(np.mean(distance))


def _positions(run: RunResult) -> np.ndarray:
    return np.concatenate([m.poses[:, :2] for m in run.missions])


def _leg_means(run: RunResult) -> list[float]:
    legs = [m.leg_durations for m in run.missions]
    width = max((len(x) for x in legs), default=0)
    return [float(np.mean([x[k] for x in legs if len(x) > k])) for k in range(width)]


def _run_summary(run: RunResult) -> dict[str, Any]:
    return {"atr": float(run.atr[-1]), "completed": int(sum(m.completed for m in run.missions)),
            "leg_duration_mean": [round(v, 3) for v in _leg_means(run)]}


def run_experiment(config: ExperimentConfig, progress: bool = True) -> dict[str, Any]:
    """All stages (module docstring); returns the JSON-ready figures and writes the bags, the
    kernel files and (with ``config.plots_dir``) the plots."""
    config.check()
    start = time.perf_counter()
    os.makedirs(config.work_dir, exist_ok=True)
    mission = MissionConfig.from_yaml(config.mission_config)
    spec = StateSpec.from_yaml(config.topics_config)
    design = VehicleConfig.from_yaml(config.design_config)
    deploy = VehicleConfig.from_yaml(config.deploy_config)
    slow_gps = VehicleConfig.from_yaml(config.slow_gps_config)
    if deploy.ramp is None:
        raise KernelError(f"{config.deploy_config}: the deployment needs its ramp")
    n_search = len(_grid(config.redesign_grid))
    stages = 9 + (2 if config.sarsa_episodes else 0) + (5 if config.sensor_case else 0) + (1 if config.plots_dir else 0)
    with tqdm(total=stages, desc="vehicle experiment", unit="stage", disable=not progress) \
            as bar:
        ctx = _Context(config, mission, spec, design, deploy, slow_gps, bar)
        result = _ramp_case(ctx, n_search)
        if config.sensor_case:
            result["sensor_case"] = _sensor_case(ctx)
        if config.plots_dir:
            result["plots"] = ctx.stage("plots", lambda: plot_experiment(
                ctx.runs, ctx.kernel_sets, config.plots_dir, mission, deploy.ramp,
                result.get("prediction")))
    result["timings"] = dict(ctx.timings, total=round(time.perf_counter() - start, 3))
    return result


def _ramp_case(ctx: _Context, n_search: int) -> dict[str, Any]:
    cfg, mission = ctx.config, ctx.mission
    runs = ctx.runs
    runs["design"] = ctx.stage("design", lambda: _recorded(
        ctx, ctx.design, mission, 1, "design.bag", "Design"))
    runs["deploy"] = ctx.stage("deploy", lambda: _recorded(
        ctx, ctx.deploy, mission, 2, "deploy.bag", DEPLOY_NAME))
    ramp_spec = weighted_spec(ctx.spec, cfg.ramp_weights)
    phy = ctx.stage("read deploy bag", lambda: read_history(
        ctx.bag("deploy.bag"), ramp_spec, episode_gap=EPISODE_GAP, what="deployment history"))
    kernel_set, rounds = ctx.stage("generate kernels", lambda: _kernel_rounds(
        ctx, ramp_spec, cfg.generation, cfg.rounds, "design.bag", phy, LABEL, "ramp"))
    kernel_file = ctx.bag("kernels_ramp.yaml")
    save_kernels(kernel_file, kernel_set)

    hook = KernelHook(kernel_set, ramp_spec, mission.period)
    runs["kernels"] = ctx.stage("kernels", lambda: run_missions(
        ctx.design, mission, ramp_spec, cfg.missions, seed=ctx.seed(3), hook=hook,
        label="Kernels"))
    # Algorithm 1 alone: the kernels of round 0 (the generation a `--rounds 1` run makes: the
    # same bags, the same seed), the original program with them on the Kernels run's seed
    n_alg1 = int(kernel_set.metadata["rounds"][0]["kernels"])
    alg1_set = kernel_set.with_kernels(kernel_set.kernels[:n_alg1])
    alg1_hook = KernelHook(alg1_set, ramp_spec, mission.period)
    runs["kernels_alg1"] = ctx.stage("kernels, Algorithm 1 alone", lambda: run_missions(
        ctx.design, mission, ramp_spec, cfg.missions, seed=ctx.seed(3), hook=alg1_hook,
        label="Kernels, Algorithm 1 alone"))
    atr_design = float(runs["design"].atr[-1])
    atr_deploy = float(runs["deploy"].atr[-1])
    atr_kernels = float(runs["kernels"].atr[-1])
    atr_kernels_alg1 = float(runs["kernels_alg1"].atr[-1])
    gap_closure = _closure(atr_design, atr_deploy, atr_kernels)
    gap_closure_alg1 = _closure(atr_design, atr_deploy, atr_kernels_alg1)
    # the same with each run's median mission total: robust to a few runaway missions, which
    # dominate the mean of the Kernels run (measured: one mission of -367 against a median of -3)
    medians = {k: float(np.median(runs[k].totals))
               for k in ("design", "deploy", "kernels", "kernels_alg1")}
    gap_closure_median = _closure(medians["design"], medians["deploy"], medians["kernels"])
    gap_closure_median_alg1 = _closure(medians["design"], medians["deploy"],
                                       medians["kernels_alg1"])

    def search() -> list[dict[str, Any]]:
        rows = []
        for k, params in enumerate(_grid(cfg.redesign_grid)):
            candidate = mission.with_program(**params)
            trial_hook = KernelHook(kernel_set, ramp_spec, mission.period)
            run = run_missions(ctx.design, candidate, ramp_spec, cfg.missions,
                               seed=ctx.seed(4), hook=trial_hook)
            rows.append({"params": params, "atr_kernels": float(run.atr[-1]),
                         "hook": trial_hook.summary()})
            runs[f"search_{k}"] = run
            ctx.bar.set_postfix_str(f"redesign {k + 1}/{n_search}")
        return rows

    rows = ctx.stage("redesign search", search)
    best = max(range(len(rows)), key=lambda k: (rows[k]["atr_kernels"], -k))
    best_params = rows[best]["params"]
    runs["redesign_kernels"] = runs.pop(f"search_{best}")
    for k in range(len(rows)):
        runs.pop(f"search_{k}", None)
    redesigned = mission.with_program(**best_params)
    runs["redeploy"] = ctx.stage("redeploy", lambda: run_missions(
        ctx.deploy, redesigned, ctx.spec, cfg.missions, seed=ctx.seed(5), label="Redeploy"))
    atr_redeploy = float(runs["redeploy"].atr[-1])
    programs = {"design": {}, **{k: dict(v) for k, v in cfg.prediction_programs.items()},
                "redesigned": dict(best_params)}
    policies = {}
    sarsa: dict[str, Any] = {}
    if cfg.sarsa_episodes:
        sarsa = ctx.stage("redesign SARSA", lambda: _sarsa_redesign(ctx, kernel_set,
                                                                    ramp_spec))
        programs["redesigned_sarsa"] = {}
        policies["redesigned_sarsa"] = sarsa.pop("policy")
    prediction = ctx.stage("prediction", lambda: predict_programs(
        ctx, programs, {"design_sim": None, "kernels_alg1": alg1_set, "kernels": kernel_set},
        ramp_spec, policies))
    if cfg.sarsa_episodes:
        sarsa["seeds"] = ctx.stage("SARSA over seeds", lambda: _sarsa_over_seeds(
            ctx, kernel_set, ramp_spec, {**prediction["programs"]["redesigned_sarsa"],
                                         "training_atr": sarsa["training_atr"]}))
    fresh = prediction["programs"]["redesigned"]["atr_deploy"]
    counts = kernel_set.counts()
    ctx.kernel_sets["ramp"] = kernel_set
    return {
        "label": LABEL,
        "atr_design": atr_design, "atr_deploy": atr_deploy, "atr_kernels": atr_kernels,
        "gap_closure": gap_closure,
        "gap_closure_median": gap_closure_median, "median_total_reward": medians,
        "atr_kernels_alg1": atr_kernels_alg1, "gap_closure_alg1": gap_closure_alg1,
        "gap_closure_median_alg1": gap_closure_median_alg1,
        "alg1_note": "Algorithm 1 alone = the round-0 kernels (the generation of a --rounds 1 "
                     "run), the original program with them on the Kernels run's seed; both "
                     "use the Fisher test and fit_rows of the generation config",
        "atr_redesign_kernels": float(rows[best]["atr_kernels"]),
        "atr_redeploy": atr_redeploy,
        "redeploy_within_design": _relative_gap(atr_redeploy, atr_design),
        "atr_redeploy_fresh_seeds": fresh,
        "redeploy_fresh_seeds_within_design": _relative_gap(fresh, atr_design),
        "prediction": prediction,
        "kernels": {"motor": counts["motor"], "sensor": counts["sensor"], "file": kernel_file,
                    "rounds": rounds, "applied": hook.summary()},
        "atr_curves": {name: runs[name].atr.tolist() for name in _RAMP_RUNS if name in runs},
        "runs": {name: _run_summary(runs[name]) for name in _RAMP_RUNS if name in runs},
        "redesign_sarsa": sarsa,
        "redesign": {"method": "parameter search over the program's parameters in the "
                               "kernel-modified simulation (the check of the SARSA redesign, "
                               "redesign_sarsa); best ATR wins, ties to the first in grid order",
                     "grid": {k: list(v) for k, v in cfg.redesign_grid.items()},
                     "best": best_params, "candidates": rows},
        "config": _config_dict(cfg),
        "bags": {"design": ctx.bag("design.bag"), "deploy": ctx.bag("deploy.bag")},
    }


_RAMP_RUNS = ("design", "deploy", "kernels", "kernels_alg1", "redesign_kernels", "redeploy",
              "redesign_sarsa_kernels", "redeploy_sarsa")


def _relative_gap(atr: float, design: float) -> float:
    """|atr - design| / |design| (the redeploy target's measure); NaN for a design ATR of 0."""
    return abs(atr - design) / abs(design) if design else math.nan


def _closure(design: float, deploy: float, kernels: float) -> float:
    """(design - kernels) / (design - deploy): 0 = the kernel simulation is the design
    simulation, 1 = it is the deployment."""
    gap = design - deploy
    return (design - kernels) / gap if gap != 0 else math.nan


# the prediction experiment's seed offsets: no other stage (nor the redesign) uses them
PREDICTION_SIM_SEED, PREDICTION_DEPLOY_SEED = 7, 8


def _sarsa_redesign(ctx: _Context, kernel_set: KernelSet, spec: StateSpec) -> dict[str, Any]:
    """Paper 001 §4's redesign: SARSA over a pitch-dependent speed factor (vehicle/sarsa.py),
    trained on ``sarsa_episodes`` missions of the original program in the kernel-modified
    simulation; the greedy rule then runs there and in the deployment on the seeds of the grid
    search's evaluation and redeploy (4, 5)."""
    cfg, mission = ctx.config, ctx.mission
    learner, training = _train_sarsa(ctx, kernel_set, spec, ctx.seed(9), ctx.seed(10))
    policy = learner.greedy()
    ctx.runs["redesign_sarsa_kernels"] = run_missions(
        ctx.design, mission, spec, cfg.missions, seed=ctx.seed(4),
        hook=KernelHook(kernel_set, spec, mission.period), speed_policy=policy,
        label="Redesign/K (SARSA)")
    ctx.runs["redeploy_sarsa"] = run_missions(ctx.deploy, mission, ctx.spec, cfg.missions,
                                              seed=ctx.seed(5), speed_policy=policy,
                                              label="Redeploy (SARSA)")
    atr_design = float(ctx.runs["design"].atr[-1])
    atr_redeploy = float(ctx.runs["redeploy_sarsa"].atr[-1])
    return {"method": "tabular SARSA in the kernel-modified simulation: state = bin of the "
                      "program's |pitch|, action = factor on the commanded speed, reward = "
                      "perf(t) per control step, gamma 1, epsilon-greedy (vehicle/sarsa.py)",
            "episodes": cfg.sarsa_episodes, "learner": learner.to_dict(),
            "training_atr": float(training.atr[-1]),
            "training_atr_last_quarter": float(np.mean(
                training.totals[-max(1, cfg.sarsa_episodes // 4):])),
            "greedy": policy.to_dict(),
            "atr_redesign_kernels": float(ctx.runs["redesign_sarsa_kernels"].atr[-1]),
            "atr_redeploy": atr_redeploy,
            "redeploy_within_design": _relative_gap(atr_redeploy, atr_design),
            "policy": policy}


def _train_sarsa(ctx: _Context, kernel_set: KernelSet, spec: StateSpec, learner_seed: int,
                 mission_seed: int) -> tuple[SarsaSpeedPolicy, RunResult]:
    """One SARSA training (vehicle/sarsa.py): ``sarsa_episodes`` missions of the original program
    in the kernel-modified simulation; the learner and the training run."""
    cfg, mission = ctx.config, ctx.mission
    learner = SarsaSpeedPolicy(cfg.sarsa_edges, cfg.sarsa_factors, alpha=cfg.sarsa_alpha,
                               epsilon=cfg.sarsa_epsilon, rng=np.random.default_rng(learner_seed))
    training = run_missions(ctx.design, mission, spec, cfg.sarsa_episodes, seed=mission_seed,
                            hook=KernelHook(kernel_set, spec, mission.period),
                            speed_policy=learner, label="SARSA training")
    return learner, training


# offsets of the repeated SARSA trainings' seeds: learner 300 + 2k, missions 301 + 2k (the
# generation rounds use 100 + r and 200 + r)
SARSA_REPEAT_SEED = 300


def _sarsa_over_seeds(ctx: _Context, kernel_set: KernelSet, spec: StateSpec,
                      first: Mapping[str, Any]) -> dict[str, Any]:
    """How stable SARSA's redesign is over seeds: ``sarsa_repeats`` further trainings with their
    own learner and mission seeds; each greedy rule runs in the kernel simulation and in the
    deployment on the prediction experiment's seeds (7, 8: no training or search used them), as
    the first training's rule did there (``first``, its row of the prediction experiment)."""
    cfg, mission = ctx.config, ctx.mission
    atr_design = float(ctx.runs["design"].atr[-1])
    rows = [{"training": 0, "learner_seed": ctx.seed(9), "mission_seed": ctx.seed(10),
             "greedy": first["speed_rule"], "training_atr": first["training_atr"],
             "atr_kernels": first["atr_kernels"],
             "atr_deploy": first["atr_deploy"]}]
    for k in range(1, cfg.sarsa_repeats + 1):
        seeds = ctx.seed(SARSA_REPEAT_SEED + 2 * k), ctx.seed(SARSA_REPEAT_SEED + 2 * k + 1)
        learner, training = _train_sarsa(ctx, kernel_set, spec, *seeds)
        policy = learner.greedy()
        kernels = run_missions(ctx.design, mission, spec, cfg.missions,
                               seed=ctx.seed(PREDICTION_SIM_SEED),
                               hook=KernelHook(kernel_set, spec, mission.period),
                               speed_policy=policy)
        deploy = run_missions(ctx.deploy, mission, ctx.spec, cfg.missions,
                              seed=ctx.seed(PREDICTION_DEPLOY_SEED), speed_policy=policy)
        rows.append({"training": k, "learner_seed": seeds[0], "mission_seed": seeds[1],
                     "greedy": policy.to_dict(), "training_atr": float(training.atr[-1]),
                     "atr_kernels": float(kernels.atr[-1]), "atr_deploy": float(deploy.atr[-1])})
    for row in rows:
        row["deploy_within_design"] = _relative_gap(row["atr_deploy"], atr_design)
    return {"trainings": rows,
            "within_10_percent": sum(1 for r in rows if r["deploy_within_design"] <= 0.10),
            "atr_deploy_mean": float(np.mean([r["atr_deploy"] for r in rows])),
            "atr_deploy_min": float(np.min([r["atr_deploy"] for r in rows]))}


def predict_programs(ctx: _Context, programs: Mapping[str, Mapping[str, float]],
                     simulations: Mapping[str, Optional[KernelSet]], spec: StateSpec,
                     policies: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """Stage e2: does a simulation predict what a program does in the deployment? Each program
    (parameters of ``mission.with_program``) runs in each simulation (the design simulation with
    the kernel set as ``KernelHook``, None: the plain design simulation) on one fresh seed and
    in the deployment on another; error = ATR(simulation) - ATR(deployment). ``policies``: a
    learned speed rule per program name (``TableSpeedPolicy``), applied on top of its params."""
    cfg, mission = ctx.config, ctx.mission
    policies = policies or {}
    rows: dict[str, dict[str, Any]] = {}
    for name, params in programs.items():
        program = mission.with_program(**params)
        policy = policies.get(name)
        row: dict[str, Any] = {"params": dict(params)}
        if policy is not None:
            row["speed_rule"] = policy.to_dict()
        for sim_name, kernel_set in simulations.items():
            hook = None if kernel_set is None else KernelHook(kernel_set, spec, mission.period)
            run = run_missions(ctx.design, program, spec, cfg.missions,
                               seed=ctx.seed(PREDICTION_SIM_SEED), hook=hook,
                               speed_policy=policy)
            row[f"atr_{sim_name}"] = float(run.atr[-1])
        run = run_missions(ctx.deploy, program, ctx.spec, cfg.missions,
                           seed=ctx.seed(PREDICTION_DEPLOY_SEED), speed_policy=policy)
        row["atr_deploy"] = float(run.atr[-1])
        for sim_name in simulations:
            row[f"error_{sim_name}"] = row[f"atr_{sim_name}"] - row["atr_deploy"]
        rows[name] = row
        ctx.bar.set_postfix_str(f"prediction {len(rows)}/{len(programs)}")
    mean_abs = {sim_name: float(np.mean([abs(r[f"error_{sim_name}"]) for r in rows.values()]))
                for sim_name in simulations}
    return {"note": "error = ATR in the simulation - ATR in the deployment (our simulation with "
                    "the ramp, not a real robot); design_sim = no kernels, kernels_alg1 = "
                    "Algorithm 1 alone, kernels = with our refinement rounds",
            "seeds": {"simulation": ctx.seed(PREDICTION_SIM_SEED),
                      "deployment": ctx.seed(PREDICTION_DEPLOY_SEED)},
            "programs": rows, "mean_abs_error": mean_abs}


def _sensor_case(ctx: _Context) -> dict[str, Any]:
    """§6.2: design at 20 Hz against the deployment with the ramp and the 1 Hz GPS."""
    cfg = ctx.config
    spec = weighted_spec(ctx.spec, cfg.sensor_weights)
    runs = ctx.runs
    runs["slow_deploy"] = ctx.stage("deploy, 1 Hz GPS", lambda: _recorded(
        ctx, ctx.slow_gps, ctx.mission, 6, "deploy_slow_gps.bag", "Deploy, 1 Hz GPS"))
    phy = ctx.stage("read 1 Hz bag", lambda: read_history(
        ctx.bag("deploy_slow_gps.bag"), spec, episode_gap=EPISODE_GAP,
        what="deployment history (1 Hz GPS)"))
    kernel_set, rounds = ctx.stage("generate sensor-case kernels", lambda: _kernel_rounds(
        ctx, spec, cfg.sensor_generation, 1, "design.bag", phy, LABEL, "sensor"))
    kernel_file = ctx.bag("kernels_slow_gps.yaml")
    save_kernels(kernel_file, kernel_set)
    hook = KernelHook(kernel_set, spec, ctx.mission.period)
    runs["sensor_kernels"] = ctx.stage("kernels, sensor case", lambda: run_missions(
        ctx.design, ctx.mission, spec, cfg.missions, seed=ctx.seed(1), hook=hook,
        label="Kernels (sensor case)"))
    sensor_only = kernel_set.with_kernels([k for k in kernel_set.kernels if k.kind == "sensor"])
    only_hook = KernelHook(sensor_only, spec, ctx.mission.period)
    runs["sensor_only"] = ctx.stage("sensor kernels only", lambda: run_missions(
        ctx.design, ctx.mission, spec, cfg.missions, seed=ctx.seed(1), hook=only_hook,
        label="Sensor kernels only"))
    reference = _positions(runs["slow_deploy"])
    counts = kernel_set.counts()
    ctx.kernel_sets["sensor"] = kernel_set
    return {
        "label": "deployment = our vehicle simulation with the ramp and a 1 Hz GPS, not a real "
                 "robot",
        "kernels": {"motor": counts["motor"], "sensor": counts["sensor"], "file": kernel_file,
                    "report": rounds[0], "applied": hook.summary()},
        "atr_design": float(ctx.runs["design"].atr[-1]),
        "atr_deploy": float(runs["slow_deploy"].atr[-1]),
        "atr_kernels": float(runs["sensor_kernels"].atr[-1]),
        "track_distance_design": track_distance(_positions(ctx.runs["design"]), reference),
        "track_distance_kernels": track_distance(_positions(runs["sensor_kernels"]), reference),
        "atr_sensor_kernels_only": float(runs["sensor_only"].atr[-1]),
        "track_distance_sensor_kernels_only": track_distance(_positions(runs["sensor_only"]),
                                                             reference),
        "sensor_only_applied": only_hook.summary(),
        "track_distance_note": "mean distance (m) of every true position of a run to the "
                               "nearest true position of the 1 Hz deployment (same program, "
                               "seed of the design run for the kernel runs)",
        "runs": {name: _run_summary(runs[name])
                 for name in ("slow_deploy", "sensor_kernels", "sensor_only")},
    }


def _config_dict(cfg: ExperimentConfig) -> dict[str, Any]:
    data = asdict(cfg)
    data["redesign_grid"] = {k: list(v) for k, v in cfg.redesign_grid.items()}
    for key in ("ramp_weights", "sensor_weights"):
        if data[key] is not None:
            data[key] = {k: list(v) for k, v in data[key].items()}
    return data


# ------------------------------------------------------------------------------------ plots
def plot_experiment(runs: Mapping[str, RunResult], kernel_sets: Mapping[str, KernelSet],
                    folder: str, mission: MissionConfig, ramp: Optional[Ramp],
                    prediction: Optional[Mapping[str, Any]] = None) -> list[str]:
    """Fig. 4/5, 6/9(b), 9(a) and 10 analogues as PNG files (waypoints from ``mission``, the
    deployment's ``ramp`` outlined) and, with ``prediction`` (``predict_programs``), the
    predicted against the deployed ATR of each program; returns their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    os.makedirs(folder, exist_ok=True)
    paths: list[str] = []
    goals = [(g.x, g.y) for g in mission.goals]

    def waypoints(ax: Any) -> None:
        ax.plot(*zip(*goals), "k+", markersize=14, markeredgewidth=2)   # '+': waypoints (Fig. 5)

    def ramp_patch(ax: Any) -> None:
        if ramp is None:
            return
        (sx, sy), (ux, uy) = ramp.start, ramp.direction
        half = 0.5 * ramp.width
        corners = [(sx + a * ux - b * uy, sy + a * uy + b * ux)
                   for a, b in ((0.0, -half), (ramp.length, -half), (ramp.length, half), (0.0, half))]
        ax.add_patch(Polygon(corners, color="tab:orange", alpha=0.25, label="ramp (deployment only)"))

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        paths.append(os.path.join(folder, name))
        save_figure(fig, paths[-1], dpi=110)

    def atr_plot(name: str, title: str, curves: Sequence[tuple[str, str]]) -> None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for key, label in curves:
            if key in runs:
                atr = runs[key].atr
                ax.plot(np.arange(1, atr.size + 1), atr, label=f"{label} ({atr[-1]:.2f})")
        ax.set_xlabel("mission")
        ax.set_ylabel("average total reward (ATR)")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, markerscale=3)
        save(fig, name)

    # Fig. 4/5: tracks design vs deploy, ATR design vs deploy
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5))
    for key, colour, label in (("design", "k", "Design"), ("deploy", "tab:blue", DEPLOY_NAME)):
        xy = _positions(runs[key])
        ax1.plot(xy[:, 0], xy[:, 1], ".", color=colour, markersize=1, label=label)
    ramp_patch(ax1)
    waypoints(ax1)
    ax1.set_aspect("equal")
    ax1.set_title("Tracks: design vs deployment (simulated: our simulation + ramp)", fontsize=9)
    ax1.legend(fontsize=8, markerscale=6)
    for key, label in (("design", "Design"), ("deploy", DEPLOY_NAME)):
        atr = runs[key].atr
        ax2.plot(np.arange(1, atr.size + 1), atr, label=f"{label} ({atr[-1]:.2f})")
    ax2.set_xlabel("mission")
    ax2.set_ylabel("ATR")
    ax2.set_title("ATR, design and simulated deployment (Fig. 4)", fontsize=9)
    ax2.legend(fontsize=8, markerscale=6)
    ax2.grid(alpha=0.3)
    save(fig, "fig4_tracks_atr.png")

    atr_plot("fig6_atr_kernels.png",
             "ATR: Design, Deploy, Kernels, Redesign in kernels, Redeploy (Fig. 6/9b)\n"
             "deployment = our simulation with a ramp, not a real robot",
             (("design", "Design"), ("deploy", DEPLOY_NAME), ("kernels", "Kernels"),
              ("kernels_alg1", "Kernels, Algorithm 1 alone"),
              ("redesign_kernels", "Redesign/K (grid)"),
              ("redeploy", "Redeploy (grid, simulated)"),
              ("redesign_sarsa_kernels", "Redesign/K (SARSA)"),
              ("redeploy_sarsa", "Redeploy (SARSA, simulated)")))

    if prediction:
        rows = prediction["programs"]
        names = list(rows)
        bars = (("atr_design_sim", "design simulation", "0.6"),
                ("atr_kernels_alg1", "kernels, Algorithm 1 alone", "tab:orange"),
                ("atr_kernels", "kernels (refinement rounds)", "tab:green"),
                ("atr_deploy", "deployment (simulated: ramp)", "tab:blue"))
        fig, ax = plt.subplots(figsize=(8, 4.5))
        width = 0.8 / len(bars)
        x = np.arange(len(names))
        for j, (key, label, colour) in enumerate(bars):
            ax.bar(x + (j - (len(bars) - 1) / 2) * width, [rows[n][key] for n in names], width,
                   label=label, color=colour)
        ax.axhline(0.0, color="k", linewidth=0.5)
        ax.set_xticks(x)
        ax.set_xticklabels(names)
        ax.set_ylabel("ATR")
        ax.set_title("Predicted (simulations) vs deployed ATR per program, fresh seeds\n"
                     "deployment = our simulation with a ramp, not a real robot", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
        save(fig, "fig11_prediction.png")

    # Fig. 9(a): kernel centres over the deploy track with the ramp
    fig, ax = plt.subplots(figsize=(6.5, 6.5))
    xy = _positions(runs["deploy"])
    ax.plot(xy[:, 0], xy[:, 1], ".", color="0.6", markersize=1, label=DEPLOY_NAME + " track")
    ramp_patch(ax)
    if "ramp" in kernel_sets and len(kernel_sets["ramp"]):
        c = kernel_sets["ramp"].centres()
        ax.plot(c[:, 0], c[:, 1], "r.", markersize=5, label=f"motor kernel centres ({len(c)})")
    waypoints(ax)
    ax.set_aspect("equal")
    ax.set_title("Kernel centres over the simulated deployment track (Fig. 9a)", fontsize=9)
    ax.legend(fontsize=8, markerscale=3)
    save(fig, "fig9_kernel_centres.png")

    # Fig. 10: sensor kernels; kernel-modified design track vs the deployment track
    if "sensor_kernels" in runs:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 6))
        deploy_xy = _positions(runs["slow_deploy"])
        design_xy = _positions(runs["design"])
        ax1.plot(design_xy[:, 0], design_xy[:, 1], ".", color="k", markersize=1,
                 label="Design (20 Hz GPS)")
        ax1.plot(deploy_xy[:, 0], deploy_xy[:, 1], ".", color="0.6", markersize=1,
                 label="Deploy, 1 Hz GPS (simulated)")
        if "sensor" in kernel_sets:
            ks = kernel_sets["sensor"]
            for kind, colour in (("sensor", "r"), ("motor", "tab:purple")):
                c = np.array([k.centre for k in ks.kernels if k.kind == kind]).reshape(-1, len(ks.state_names))
                if len(c):
                    ax1.plot(c[:, 0], c[:, 1], ".", color=colour, markersize=4,
                             label=f"{kind} kernel centres ({len(c)})")
        waypoints(ax1)
        ax1.set_aspect("equal")
        ax1.set_title("Sensor kernels (Fig. 10a); deployment simulated", fontsize=9)
        ax1.legend(fontsize=8, markerscale=6)
        kernel_xy = _positions(runs["sensor_kernels"])
        ax2.plot(deploy_xy[:, 0], deploy_xy[:, 1], ".", color="0.6", markersize=1,
                 label="Deploy, 1 Hz GPS (simulated)")
        ax2.plot(kernel_xy[:, 0], kernel_xy[:, 1], ".", color="k", markersize=1,
                 label="Kernel-modified design simulation")
        waypoints(ax2)
        ax2.set_aspect("equal")
        ax2.set_title("Kernel-modified design track vs simulated deployment track (Fig. 10b)",
                      fontsize=9)
        ax2.legend(fontsize=8, markerscale=6)
        save(fig, "fig10_sensor_kernels.png")
    return paths
