"""The evaluate and report stages: every stage's errors on validation data (the acceptance gate)
and on test data (the figures reported), then OUT/pipeline.json and OUT/report.md."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from sim2real_pipeline.context import Context
from sim2real_pipeline.errors import PipelineError
from sim2real_pipeline.evaluation import (errors_of, load_datasets, mse, random_sets, task_replays,
                                          task_trajectories)
from sim2real_checks import write_json

from sim2real_pipeline.files import read_json
from sim2real_pipeline.gate import decide_chain
from sim2real_pipeline.splits import GATE, TEST, VALIDATION, task_repeats
from sim2real_pipeline.workdir import StageRecord

SIMULATION, IDENTIFIED, REALEASY = "simulation", "identified", "identified+realeasy"


def _correction(path: str, joint_names: tuple[str, ...],
                step: float) -> Callable[[np.ndarray], np.ndarray]:
    """The Realeasy model's X -> X + NN(X) (paper 000 eq. 9); PipelineError if the model does not
    fit the data (joints, or a rate other than the streams', 1 / the kernel step)."""
    from panda_sim2real import PandaError
    from realeasy_ros import load_model
    try:
        model = load_model(path)
        model.check_compatible(joint_names, "the data set")
    except PandaError as exc:
        raise PipelineError("evaluate", exc) from exc
    if not math.isclose(model.rate * step, 1.0, rel_tol=1e-6):
        raise PipelineError("evaluate", f"the Realeasy model runs at {model.rate:g} Hz, the task "
                                        f"replays step every {step:g} s")
    return model.correct


def evaluate(ctx: Context) -> StageRecord:
    """Random moves: simulation, identified, identified+realeasy on the gate's held-out half
    (under "validation") and on the test half (figures), splits.py. Task repeats: the same and the kernel stage,
    which sits on the identified simulator its histories came from (with Realeasy when the gate
    adopted it) and is gated against the stage adopted before it."""
    from kernel_manager_ros import KernelError
    from kernel_manager_ros import load_kernels
    from panda_sim2real import SIM_CONFIG_FILE

    s = ctx.settings
    nominal, identified = load_datasets(ctx.output("split", "dataset"),
                                        ctx.output("resimulate", "dataset"))
    correct = _correction(ctx.output("realeasy", "model"), identified.joint_names,
                          s.kernels.step)
    random = {}
    purposes = ctx.figures("split")["ids"]
    for name, purpose in ((VALIDATION, GATE), (TEST, TEST)):     # "validation": the gate's set
        sets = random_sets(nominal, identified, purposes[purpose], correct, REALEASY)
        random[name] = {"ids": list(sets.ids), "errors": errors_of(sets)}
    val = random[VALIDATION]["errors"]
    adopted, decisions = decide_chain((IDENTIFIED, REALEASY), val, val[SIMULATION], SIMULATION)
    with_realeasy = adopted == REALEASY
    chain = REALEASY if with_realeasy else IDENTIFIED
    kernel_stage = f"{chain}+kernels"

    try:
        trajectories, layout, _ = task_trajectories(ctx.output("collect", "tasks"))
        kernel_set = load_kernels(ctx.output("kernels", "kernels"))
    except KernelError as exc:
        raise PipelineError("evaluate", exc) from exc
    tasks = {}
    for name in (VALIDATION, TEST):
        chosen = task_repeats(trajectories, ctx.figures("split")["task_ids"][name])
        replays = task_replays(chosen, layout, s.kernels.step, s.kernels.settle, SIM_CONFIG_FILE,
                               ctx.output("identify", "sim_config"),
                               correct if with_realeasy else None, kernel_set, chain,
                               not s.quiet)
        tasks[name] = {"ids": list(replays.ids), "applications": replays.applications,
                       "errors": {stage: mse(*pair) for stage, pair in replays.stages.items()}}
    task_val = tasks[VALIDATION]["errors"]
    task_adopted, task_decisions = decide_chain((kernel_stage,), task_val,
                                                task_val[SIMULATION], adopted)
    figures = {
        "label": nominal.label, "simulator": s.sim,
        "random": random, "tasks": tasks,
        "gate": {"random": [d.to_dict() for d in decisions],
                 "tasks": [d.to_dict() for d in task_decisions]},
        "adopted": adopted, "task_adopted": task_adopted, "kernel_stage": kernel_stage,
    }
    path = ctx.work.path("evaluation.json")
    write_json(path, figures, sort_keys=False)
    return StageRecord("evaluate", "", {"evaluation": path},
                       {"adopted": adopted, "task_adopted": task_adopted})


def report(ctx: Context) -> StageRecord:
    """OUT/pipeline.json, OUT/report.md and the plots (report.py)."""
    from sim2real_pipeline.report import write_report
    evaluation = read_json(ctx.output("evaluate", "evaluation"), "report")
    files = {"identified_urdf": ctx.output("identify", "urdf"),
             "identified_sim_config": ctx.output("identify", "sim_config"),
             "realeasy_model": ctx.output("realeasy", "model"),
             "kernels": ctx.output("kernels", "kernels")}
    commands = {stage: record.figures.get("commands", []) for stage, record in ctx.records.items()}
    outputs = write_report(ctx.settings.out, evaluation, files, commands,
                           {stage: ctx.records[stage].figures for stage in ctx.records})
    return StageRecord("report", "", outputs, {})
