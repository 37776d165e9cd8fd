"""What the stages of the delivery-vehicle experiment share (paper 001 §4-6): its settings
(:class:`ExperimentConfig`), the kernels applied to a run (:class:`KernelHook`; eq. 9 for sensor
kernels), the context the stages pass on (:class:`Context`), recorded runs, Algorithm 1 with our
refinement rounds (:func:`kernel_rounds`) and the run summaries. "Deployment" is our vehicle
simulation with an unexpected ramp, not a real robot.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
from scipy.spatial import cKDTree

from kernel_manager_ros.bag_history import read_history
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.generation import GenerationConfig, GenerationReport, generate_kernels
from kernel_manager_ros.history import History
from kernel_manager_ros.kernel import KernelSet
from kernel_manager_ros.manager import KernelManager
from kernel_manager_ros.config_files import config_path
from kernel_manager_ros.vehicle.mission import MissionConfig
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.vehicle.messages import SensorFields
from kernel_manager_ros.vehicle.model import VehicleConfig
from kernel_manager_ros.vehicle.run import RunResult, SensorOverride, StepContext, run_missions, write_bag

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
class Context:
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


def record_run(ctx: Context, vehicle: VehicleConfig, mission: MissionConfig, offset: int,
               bag: str, label: str, hook: Optional[KernelHook] = None) -> RunResult:
    run = run_missions(vehicle, mission, ctx.spec, ctx.config.missions, seed=ctx.seed(offset),
                       hook=hook, record_messages=True, label=label)
    write_bag(ctx.bag(bag), run)
    for log in run.missions:     # the messages are in the bag now; free the memory
        log.messages = []
    return run


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


def kernel_rounds(ctx: Context, spec: StateSpec, generation: GenerationConfig, rounds: int,
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
            run = record_run(ctx, ctx.design, ctx.mission, 200 + r, bag,
                             f"kernel sim round {r + 1}", hook)
            entry["next_round_atr"] = float(run.atr[-1])
        reports.append(entry)
        ctx.bar.set_postfix_str(f"{prefix} kernels round {r + 1}/{rounds}: {len(kernel_set)}")
    assert kernel_set is not None
    kernel_set.metadata.update(label=deploy_label, sim_bag=ctx.bag(sim_bag))
    return kernel_set, reports


def grid_points(grid: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    combos: list[dict[str, float]] = [{}]
    for name, values in grid.items():
        combos = [dict(c, **{name: float(v)}) for c in combos for v in values]
    return combos


def track_distance(track: np.ndarray, reference: np.ndarray) -> float:
    """Mean distance (m) from every point of ``track`` (n, 2) to the nearest point of
    ``reference`` (k, 2): how far a run's path lies from the deployment's path."""
    distance, _ = cKDTree(reference).query(track)
    return float(np.mean(distance))


def run_positions(run: RunResult) -> np.ndarray:
    return np.concatenate([m.poses[:, :2] for m in run.missions])


def _leg_means(run: RunResult) -> list[float]:
    legs = [m.leg_durations for m in run.missions]
    width = max((len(x) for x in legs), default=0)
    return [float(np.mean([x[k] for x in legs if len(x) > k])) for k in range(width)]


def run_summary(run: RunResult) -> dict[str, Any]:
    return {"atr": float(run.atr[-1]), "completed": int(sum(m.completed for m in run.missions)),
            "leg_duration_mean": [round(v, 3) for v in _leg_means(run)]}


def relative_gap(atr: float, design: float) -> float:
    """|atr - design| / |design| (the redeploy target's measure); NaN for a design ATR of 0."""
    return abs(atr - design) / abs(design) if design else math.nan
