"""OUT/pipeline.json, OUT/report.md and the plots: the acceptance report a user reads before
trusting a model on the robot."""
from __future__ import annotations

import json
import math
import os
from typing import Any, Mapping

import numpy as np

from sim2real_pipeline.evaluation import KEYS, ratios
from sim2real_checks import provenance, save_figure

UNITS = {"position_mse": "rad²", "velocity_mse": "(rad/s)²", "torque_mse": "(N m)²"}
QUANTITY = {"position_mse": "position", "velocity_mse": "velocity", "torque_mse": "torque"}


def _table(errors: Mapping[str, Mapping[str, list[float]]], key: str) -> list[str]:
    dof = len(next(iter(errors.values()))[key])
    head = "| " + QUANTITY[key] + f" MSE [{UNITS[key]}] | " + " | ".join(
        f"j{j + 1}" for j in range(dof)) + " |"
    lines = [head, "|---" * (dof + 1) + "|"]
    for stage, e in errors.items():
        lines.append(f"| {stage} | " + " | ".join(f"{v:.3g}" for v in e[key]) + " |")
        if stage != "simulation":
            lines.append(f"| ↳ {stage} vs simulation | " + " | ".join(
                f"{r:.1f}x" if math.isfinite(r) else "inf"
                for r in ratios(e, errors["simulation"])[key]) + " |")
    return lines


def _section(title: str, note: str, errors: Mapping[str, Any]) -> list[str]:
    lines = [f"## {title}", "", note, ""]
    for key in KEYS:
        lines += _table(errors, key) + [""]
    return lines


def _plot(errors: Mapping[str, Mapping[str, list[float]]], title: str, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    stages = list(errors)
    width = 0.8 / len(stages)
    joints = np.arange(1, len(errors["simulation"]["torque_mse"]) + 1)
    for ax, key in zip(axes, KEYS):
        for k, stage in enumerate(stages):
            ax.bar(joints - 0.4 + (k + 0.5) * width, errors[stage][key], width, label=stage)
        ax.set_yscale("log")
        ax.set_xlabel("joint")
        ax.set_ylabel(f"{QUANTITY[key]} MSE [{UNITS[key]}]")
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def write_report(out: str, evaluation: Mapping[str, Any], files: Mapping[str, str],
                 commands: Mapping[str, list[str]], figures: Mapping[str, Any]) -> dict[str, str]:
    """Write pipeline.json, report.md, stages.png and task_stages.png into ``out``."""
    os.makedirs(out, exist_ok=True)
    label = evaluation["label"]
    random, tasks = evaluation["random"], evaluation["tasks"]
    test, task_test = random["test"]["errors"], tasks["test"]["errors"]
    simulator = evaluation.get("simulator", "pybullet")
    result = {
        **provenance("rosrun sim2real_pipeline pipeline"),    # the commit and command measured
        "label": label,
        "simulator": simulator,
        "stages": test,
        "task_stages": task_test,
        "ratios_to_simulation": {s: ratios(e, test["simulation"]) for s, e in test.items()},
        "task_ratios_to_simulation": {s: ratios(e, task_test["simulation"])
                                      for s, e in task_test.items()},
        "validation": {"stages": random["validation"]["errors"],
                       "task_stages": tasks["validation"]["errors"]},
        "gate": evaluation["gate"],
        "adopted": evaluation["adopted"],
        "task_adopted": evaluation["task_adopted"],
        "trajectories": {"validation": len(random["validation"]["ids"]),
                         "test": len(random["test"]["ids"]),
                         "task_validation": len(tasks["validation"]["ids"]),
                         "task_test": len(tasks["test"]["ids"])},
        "kernel_applications": tasks["test"]["applications"],
        "files": dict(files),
        "commands": dict(commands),
        "stage_figures": dict(figures),
    }
    paths = {name: os.path.join(out, name) for name in
             ("pipeline.json", "report.md", "stages.png", "task_stages.png")}
    with open(paths["pipeline.json"], "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, default=float)
        f.write("\n")
    _plot(test, f"held-out trajectories ({label})", paths["stages.png"])
    _plot(task_test, f"held-out task repeats ({label})", paths["task_stages.png"])

    gate = ["## Acceptance gate (validation split, never the test split)", ""]
    for d in evaluation["gate"]["random"] + evaluation["gate"]["tasks"]:
        gate.append(f"- **{d['stage']}: {'adopted' if d['adopted'] else 'refused'}** — "
                    f"{d['reason']}")
    gate += ["", f"Adopted on the random moves: **{evaluation['adopted']}**; on the task: "
                 f"**{evaluation['task_adopted']}**.", ""]
    applied = tasks["test"]["applications"]
    lines = [f"# Sim-to-real pipeline against the {label}", "",
             f"Every figure is measured against the **{label}**"
             + ("" if "stand-in" not in label else ", not a real robot") + ".", ""]
    if simulator == "gazebo":
        lines += ["The nominal and the identified simulator are **Gazebo 11** (`SIM=gazebo`): the "
                  "pairs were collected and re-simulated in gzserver, so the random-move figures, "
                  "the Realeasy training data and the kernels' histories are Gazebo's. The task "
                  "replays below (the kernel stage acts at every step, in-process) run the same "
                  "configurations in PyBullet.", ""]
    lines += gate
    lines += _section(
        f"Held-out trajectories ({len(random['test']['ids'])}: the test and Cartesian splits)",
        "Per-joint MSE of each stage against the robot, and how many times lower than the "
        "nominal simulation's.", test)
    lines += _section(
        f"Held-out task repeats ({len(tasks['test']['ids'])})",
        f"Replays from rest of the work cycle's test repeats. The kernel manager was active on "
        f"{100 * applied['active_fraction']:.1f} % of the steps ({applied['motor']} motor, "
        f"{applied['sensor']} sensor applications, {applied['refused']} refused).", task_test)
    lines += ["## Files", ""] + [f"- {k}: `{v}`" for k, v in files.items()] + [""]
    lines += ["## Commands (each stage by hand)", ""]
    for stage, cmds in commands.items():
        lines += [f"- {stage}:"] + [f"  - `{c}`" for c in cmds]
    lines += ["", "![stages](stages.png)", "", "![task stages](task_stages.png)", ""]
    with open(paths["report.md"], "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return paths
