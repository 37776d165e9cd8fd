"""The evaluate and report stages: every stage's errors on validation data (the acceptance gate)
and on test data (the figures reported), then OUT/pipeline.json and OUT/report.md."""
from __future__ import annotations

import json
import os
from typing import Any

from sim2real_pipeline.errors import PipelineError
from sim2real_pipeline.evaluation import errors_of, load_datasets, mse, random_sets, task_replays
from sim2real_pipeline.gate import decide_chain
from sim2real_pipeline.splits import HELD_OUT, TEST, VALIDATION
from sim2real_pipeline.workdir import StageRecord

SIMULATION, IDENTIFIED, REALEASY = "simulation", "identified", "identified+realeasy"


def _correction(path: str, joint_names: tuple[str, ...]):
    from panda_sim2real.errors import Sim2RealError
    from realeasy_ros.model_file import load_model
    try:
        model = load_model(path)
        model.check_compatible(joint_names, "the data set")
    except Sim2RealError as exc:
        raise PipelineError("evaluate", exc) from exc
    return model.correct


def evaluate(ctx: Any) -> StageRecord:
    from kernel_manager_ros.errors import KernelError
    from kernel_manager_ros.kernel_file import load_kernels
    from kernel_manager_ros.panda import (PANDA_TOPICS, PandaLayout, read_pair_trajectories)
    from kernel_manager_ros.state_spec import StateSpec
    from panda_sim2real.limits import JointLimits
    from panda_sim2real.robot_config import SIM_CONFIG_FILE
    from sim2real_pipeline.stages import task_ids

    s = ctx.settings
    nominal, identified = load_datasets(ctx.output("split", "dataset"),
                                        ctx.output("resimulate", "dataset"))
    correct = _correction(ctx.output("realeasy", "model"), identified.joint_names)
    random = {}
    for name, splits in ((VALIDATION, (VALIDATION,)), (TEST, HELD_OUT)):
        sets = random_sets(nominal, identified, splits, correct, REALEASY)
        random[name] = {"ids": list(sets.ids), "errors": errors_of(sets)}
    val = random[VALIDATION]["errors"]
    adopted, decisions = decide_chain((IDENTIFIED, REALEASY), val, val[SIMULATION], SIMULATION)
    chain = REALEASY if adopted == REALEASY else IDENTIFIED
    chain_correct = correct if chain == REALEASY else None
    kernel_stage = f"{chain}+kernels"

    try:
        spec = StateSpec.from_yaml(PANDA_TOPICS)
        limits = JointLimits.from_yaml()
        layout = PandaLayout.from_spec(spec, limits.dof)
        trajectories, _ = read_pair_trajectories(ctx.output("collect", "tasks"), spec, limits)
        kernel_set = load_kernels(ctx.output("kernels", "kernels"))
    except KernelError as exc:
        raise PipelineError("evaluate", exc) from exc
    by_id = {t.trajectory_id: t for t in trajectories}
    tasks: dict[str, Any] = {}
    for name in (VALIDATION, TEST):
        chosen = [by_id[i] for i in task_ids(ctx, name) if i in by_id]
        if not chosen:
            raise PipelineError("evaluate", f"no {name} task repeat in {ctx.output('collect', 'tasks')}")
        replays = task_replays(chosen, layout, s.kernels.step, s.kernels.settle, SIM_CONFIG_FILE,
                               ctx.output("identify", "sim_config"), chain_correct, kernel_set,
                               chain, not s.quiet)
        tasks[name] = {"ids": list(replays.ids), "applications": replays.applications,
                       "errors": {stage: mse(*pair) for stage, pair in replays.stages.items()}}
    task_val = tasks[VALIDATION]["errors"]
    before_kernels = adopted if adopted in task_val else chain
    task_adopted, task_decisions = decide_chain((kernel_stage,), task_val,
                                                task_val[SIMULATION], before_kernels)
    figures = {
        "label": nominal.label,
        "random": random, "tasks": tasks,
        "gate": {"random": [d.to_dict() for d in decisions],
                 "tasks": [d.to_dict() for d in task_decisions]},
        "adopted": adopted, "task_adopted": task_adopted, "kernel_stage": kernel_stage,
    }
    path = ctx.work.path("evaluation.json")
    _write_json(path, figures)
    return StageRecord("evaluate", "", {"evaluation": path}, {"adopted": adopted,
                                                              "task_adopted": task_adopted})


def _write_json(path: str, figures: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(figures, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def report(ctx: Any) -> StageRecord:
    from sim2real_pipeline.report import write_report
    with open(ctx.output("evaluate", "evaluation"), encoding="utf-8") as f:
        evaluation = json.load(f)
    files = {"identified_urdf": ctx.output("identify", "urdf"),
             "identified_sim_config": ctx.output("identify", "sim_config"),
             "realeasy_model": ctx.output("realeasy", "model"),
             "kernels": ctx.output("kernels", "kernels")}
    commands = {stage: record.figures.get("commands", []) for stage, record in ctx.records.items()}
    outputs = write_report(ctx.settings.out, evaluation, files, commands,
                           {stage: ctx.records[stage].figures for stage in ctx.records})
    return StageRecord("report", "", outputs, {})
