"""The pipeline's stages, in order (issue 17): each reads what earlier stages wrote into the work
directory and writes its own files; the packages' tools do the work, as a user runs them.

  collect     random pairs and work-cycle repeats, simulator vs robot     panda_pairs collect
  split       the random pairs' data set: alignment and the split         panda_pairs dataset
              and the task repeats' split, in order of execution
  identify    the robot's inertials and damping from its training stream  diffnea_ros identify
  resimulate  the same commands in the identified simulator               panda_pairs resimulate
  realeasy    the realtime residual network on identified-sim/real pairs  realeasy_ros train
  kernels     state-space kernels from identified-sim vs robot histories  kernel_manager_ros
              of the training task repeats (paper 001 Algorithm 1)        pair-kernels
  evaluate    every stage on validation (acceptance gate) and test data   (this package)
  report      OUT/pipeline.json, OUT/report.md, plots                     (this package)

Every stage that learns or makes an artefact is a tool call; evaluate and report are the
pipeline's own work and read the artefacts with the packages' public readers.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

from sim2real_pipeline.context import Context
from sim2real_pipeline.errors import PipelineError
from sim2real_pipeline.evaluation import task_trajectories

from sim2real_pipeline.files import read_json
from sim2real_pipeline.settings import PipelineSettings
from sim2real_pipeline.splits import TEST, TRAIN, VALIDATION, random_purposes, task_split
from sim2real_pipeline.workdir import StageRecord

# ----------------------------------------------------------------------------------------------

def collect(ctx: Context) -> StageRecord:
    """The random pairs and the task repeats: collected against the reality config, or the
    recorded bags given."""
    s, w = ctx.settings, ctx.work
    if s.recorded:
        return StageRecord("collect", "", {"pairs": os.path.abspath(s.pairs_bag),
                                           "tasks": os.path.abspath(s.tasks_bag)},
                           {"recorded": True})
    from panda_sim2real import PandaError
    from panda_sim2real import RobotConfig
    try:
        label = RobotConfig.from_yaml(s.reality_config).label
    except PandaError as exc:
        raise PipelineError("collect", exc) from exc
    pairs, tasks = w.path("pairs.bag"), w.path("tasks.bag")
    ctx.tool("collect", "panda_pairs", "collect", "--trajectories", s.trajectories,
             "--seed", s.seed, "--sim", s.sim, "--reality-config", s.reality_config, "--out", pairs,
             "--json", w.path("collect_pairs.json"))
    ctx.tool("collect", "panda_pairs", "collect", "--task-repeats", s.task_repeats,
             "--seed", s.seed + 1, "--sim", s.sim, "--reality-config", s.reality_config, "--out", tasks,
             "--json", w.path("collect_tasks.json"))
    return StageRecord("collect", "", {"pairs": pairs, "tasks": tasks},
                       {"label": label,
                        "pairs": read_json(w.path("collect_pairs.json"), "collect"),
                        "tasks": read_json(w.path("collect_tasks.json"), "collect")})


def split(ctx: Context) -> StageRecord:
    """The random pairs' data set (aligned at 100 Hz), its seeded split by trajectory and each
    trajectory's purpose (train, validation, gate, test); the task repeats' split in order of
    execution (splits.py)."""
    from kernel_manager_ros import KernelError
    from panda_pairs import Dataset
    s = ctx.settings
    out = ctx.work.path("dataset_simulation.npz")
    ctx.tool("split", "panda_pairs", "dataset", "--bag", ctx.output("collect", "pairs"),
             "--seed", s.seed, "--fractions", *s.random_split, "--out", out,
             "--json", ctx.work.path("dataset_simulation.json"))
    data = Dataset.load(out)
    ids = random_purposes(data.trajectory_ids, data.kinds, data.split, s.seed)
    try:
        trajectories, _, task_label = task_trajectories(ctx.output("collect", "tasks"))
    except KernelError as exc:
        raise PipelineError("split", exc) from exc
    by_repeat = task_split([t.trajectory_id for t in trajectories], s.task_train,
                           s.task_validation)
    task_ids = {name: [i for i, label in sorted(by_repeat.items()) if label == name]
                for name in (TRAIN, VALIDATION, TEST)}
    return StageRecord("split", "", {"dataset": out},
                       {"label": data.label, "ids": ids, "task_label": task_label,
                        "task_ids": task_ids})


def identify(ctx: Context) -> StageRecord:
    """diffnea_ros on the robot's stream of the training trajectories (it reads the pair bag and
    the split itself), with the Panda's plausible masses and centres of mass (``bounds``), Gaz et
    al.'s published model as a prior whose weight diffnea_ros chooses on held-out trajectories
    (``prior``), and
    the identified simulator's config it writes (URDF, friction, offsets, a stable physics rate;
    panda_sim2real's format)."""
    from diffnea_ros import PANDA_BOUNDS_FILE
    from panda_sim2real import nominal_urdf_path
    s, w = ctx.settings, ctx.work
    urdf, sim_config, report = w.path("identified.urdf"), w.path("identified_sim.yaml"), w.path("identify.json")
    ctx.tool("identify", "diffnea_ros", "identify", "--pairs", ctx.output("collect", "pairs"),
             "--split-from", ctx.output("split", "dataset"), "--split", TRAIN, "--urdf",
             nominal_urdf_path(), "--param", s.parametrisation, "--epochs", s.identify_epochs,
             "--seed", s.seed, *(["--friction"] if s.identify_friction else []),
             *(["--offset"] if s.identify_offset else []),
             *(["--bounds", PANDA_BOUNDS_FILE] if s.identify_bounds else []),
             *(["--prior", PANDA_BOUNDS_FILE] if s.identify_prior else []),
             *(["--physics-rate", s.identified_physics_rate] if s.identified_physics_rate else []),
             "--out", urdf, "--sim-config", sim_config, "--json", report)
    result = read_json(report, "identify")
    check_identification(result, report)
    names = result["joint_names"]
    offset = result.get("torque_offset") or {}
    figures = {k: result[k] for k in ("nmse_heldout_before", "nmse_heldout_after", "damping",
                                      "friction", "epochs", "seconds", "samples", "physics_rate")}
    figures["plausibility"] = result.get("plausibility")
    figures["prior"] = result.get("prior")
    figures.update(data={"trajectories": result["trajectories"], "label": result.get("label", ""),
                         "samples": result["samples"]["train"] + result["samples"]["heldout"]},
                   torque_offset=[offset[n] for n in names] if offset else None)
    return StageRecord("identify", "", {"urdf": urdf, "sim_config": sim_config}, figures)


def check_identification(result: dict[str, Any], source: str) -> None:
    """PipelineError unless diffnea_ros identify's figures describe a usable result: a finite
    loss, physically consistent bodies (paper 002 §3) and finite friction parameters."""
    if result.get("diverged"):
        raise PipelineError("identify", "the identification diverged (its loss became NaN/Inf); "
                                        "try fewer epochs or another parametrisation")
    if not result.get("consistent"):
        bad = [link.get("name", "?") for link in result.get("consistency", {}).get("links", [])
               if not link.get("ok", False)]
        raise PipelineError("identify", f"the identified bodies are not physically consistent "
                                        f"({', '.join(bad) or 'see ' + source})")
    values = [v for phi in (result.get("friction") or {}).values() for v in phi]
    values += list(result.get("damping") or [])
    values += list((result.get("torque_offset") or {}).values())
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
        raise PipelineError("identify", f"non-finite damping, friction or torque offset in "
                                        f"{source}")


def resimulate(ctx: Context) -> StageRecord:
    """Both bags' commands in the identified simulator, and the identified pairs' data set with
    the nominal one's split."""
    s, w = ctx.settings, ctx.work
    config = ctx.output("identify", "sim_config")
    outputs = {}
    for name in ("pairs", "tasks"):
        outputs[name] = w.path(f"{name}_identified.bag")
        ctx.tool("resimulate", "panda_pairs", "resimulate", "--bag",
                 ctx.output("collect", name), "--sim-config", config, "--sim", s.sim, "--seed", s.seed,
                 "--out", outputs[name], "--json", w.path(f"resimulate_{name}.json"))
    # the same trajectories in the same splits as the nominal data set: Realeasy trains, and the
    # gate and the report measure, on the trajectories identification saw or did not see
    outputs["dataset"] = w.path("dataset_identified.npz")
    ctx.tool("resimulate", "panda_pairs", "dataset", "--bag", outputs["pairs"],
             "--splits-from", ctx.output("split", "dataset"), "--out", outputs["dataset"],
             "--json", w.path("dataset_identified.json"))
    return StageRecord("resimulate", "", outputs,
                       {name: read_json(w.path(f"resimulate_{name}.json"), "resimulate")
                        for name in ("pairs", "tasks")})


def realeasy(ctx: Context) -> StageRecord:
    """The realtime Realeasy network (tuned preset) on the identified-sim/real pairs."""
    s, w = ctx.settings, ctx.work
    model, report = w.path("realeasy.pt"), w.path("train_realeasy.json")
    ctx.tool("realeasy", "realeasy_ros", "train", "--data", ctx.output("resimulate", "dataset"),
             "--model", "realtime", "--out", model, "--seed", s.seed, "--max-minutes",
             s.train_minutes, "--json", report)
    return StageRecord("realeasy", "", {"model": model}, read_json(report, "realeasy"))


def kernels(ctx: Context) -> StageRecord:
    """paper 001 Algorithm 1 on the training task repeats: H_sim from the identified simulator,
    H_phy from the robot (kernel_manager_ros pair-kernels)."""
    s, k, w = ctx.settings, ctx.settings.kernels, ctx.work
    path, report = w.path("kernels.yaml"), w.path("kernels.json")
    train = ctx.figures("split")["task_ids"][TRAIN]
    ctx.tool("kernels", "kernel_manager_ros", "pair-kernels",
             "--bag", ctx.output("resimulate", "tasks"), "--trajectories", *train,
             "--step", k.step, "--rollouts", k.rollouts, "--max-rollout-length",
             k.max_rollout_length, "--sigma", k.sigma, "--epsilon-p", k.epsilon_p,
             "--fit-length", k.fit_length, "--seed", s.seed, "--label",
             f"kernels from the identified simulation vs {ctx.figures('split')['task_label']}",
             "--out", path, "--json", report)
    figures = read_json(report, "kernels")
    return StageRecord("kernels", "", {"kernels": path},
                       {"counts": {key: figures["kernels"][key] for key in ("motor", "sensor")},
                        "total": figures["kernels"]["total"],
                        "train_repeats": figures["trajectories"],
                        "history": figures["history"], "generation": figures["generation"]})


# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Stage:
    """One stage: its function, the stages whose files it reads, the settings it depends on."""

    name: str
    run: Callable[[Context], StageRecord]
    upstream: tuple[str, ...]
    settings: Callable[[PipelineSettings], dict[str, Any]]
    description: str


def _file_text(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")


def _collect_settings(s: PipelineSettings) -> dict[str, Any]:
    """What the collected data depend on: the recorded bags (path, size, time), or the
    settings and every configuration file collect reads."""
    from panda_sim2real import SIM_CONFIG_FILE
    from panda_sim2real import DEFAULT_WORK_CYCLE_FILE
    if s.recorded:
        from sim2real_pipeline.settings import recording_files
        bags = [os.path.abspath(p) for p in (s.pairs_bag, s.tasks_bag)]
        files = [f for p in bags for f in recording_files(p)]
        return {"bags": bags, "stat": [(os.path.getsize(f), os.path.getmtime(f)) for f in files]}
    generator = os.path.join(os.path.dirname(DEFAULT_WORK_CYCLE_FILE), "trajectories.yaml")
    return {"trajectories": s.trajectories, "task_repeats": s.task_repeats, "seed": s.seed,
            **({"sim": s.sim} if s.sim != "pybullet" else {}),
            "files": [_file_text(p) for p in (s.reality_config, SIM_CONFIG_FILE,
                                               DEFAULT_WORK_CYCLE_FILE, generator)]}


def stage_list() -> tuple[Stage, ...]:
    from sim2real_pipeline import evaluate as ev
    return (
        Stage("collect", collect, (), _collect_settings,
              "random pairs and work-cycle repeats, simulator vs robot"),
        Stage("split", split, ("collect",),
              lambda s: {"seed": s.seed, "task_split": [s.task_train, s.task_validation],
                         "random_split": list(s.random_split)},
              "the random pairs' data set and its split, the task repeats' split"),
        Stage("identify", identify, ("split",),
              lambda s: {"param": s.parametrisation, "epochs": s.identify_epochs, "seed": s.seed,
                         **({"bounds": True} if s.identify_bounds else {}),
                         **({"prior": "published"} if s.identify_prior else {}),
                         "friction": s.identify_friction, "offset": s.identify_offset,
                         "physics_rate": s.identified_physics_rate or "auto"},
              "diffnea_ros: the robot's inertials, damping, friction, torque offsets"),
        Stage("resimulate", resimulate, ("collect", "split", "identify"),
              lambda s: {"seed": s.seed, **({"sim": s.sim} if s.sim != "pybullet" else {})},
              "the same commands in the identified simulator"),
        Stage("realeasy", realeasy, ("resimulate",),
              lambda s: {"minutes": s.train_minutes, "seed": s.seed},
              "Realeasy on the identified-sim/real pairs"),
        Stage("kernels", kernels, ("split", "resimulate"),
              lambda s: {"kernels": dataclasses.asdict(s.kernels), "seed": s.seed},
              "state-space kernels on the training task repeats"),
        Stage("evaluate", ev.evaluate,
              ("collect", "split", "identify", "resimulate", "realeasy", "kernels"),
              lambda s: {"step": s.kernels.step, "settle": s.kernels.settle},
              "every stage on validation and test data, acceptance gate"),
        Stage("report", ev.report, ("identify", "realeasy", "kernels", "evaluate"),
              lambda s: {"out": os.path.abspath(s.out)},
              "pipeline.json, report.md and plots"),
    )
