"""Summarise the Realeasy study (tools/realeasy_study.sh) as realeasy_ros/results/summary.md: the
Table II-style table of both networks, the targets and the transfer figure (all against the
reality stand-in, not a real robot)."""
from __future__ import annotations

import json
import os
import sys

ARCHS = ("realtime", "precise")
QUANTITIES = (("position_mse", "position [rad²]"), ("velocity_mse", "velocity [(rad/s)²]"),
              ("torque_mse", "torque [(N m)²]"))


def load(folder: str, name: str) -> dict:
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return json.load(f)


def fmt(values: list) -> str:
    return " | ".join(f"{v:.2e}" for v in values)


def torque_reduction(block: dict) -> list[float]:
    """sim / Realeasy torque MSE per joint, as `evaluate` reports it (None: Realeasy MSE 0)."""
    return [float("inf") if f is None else f for f in block["reduction"]["torque"]]


def table(split: str, evaluations: dict[str, dict]) -> list[str]:
    first = next(iter(evaluations.values()))[split]
    lines = [f"| {split} ({first['trajectories']} trajectories) | | " +
             " | ".join(f"joint {j + 1}" for j in range(7)) + " |", "|---|---|" + "---|" * 7]
    for key, name in QUANTITIES:
        lines.append(f"| Simulation | {name} | {fmt(first['sim'][key])} |")
        for arch, result in evaluations.items():
            lines.append(f"| Simulation + Realeasy ({arch}) | {name} | "
                         f"{fmt(result[split]['realeasy'][key])} |")
    for arch, result in evaluations.items():
        factors = torque_reduction(result[split])
        lines.append(f"| torque reduction ({arch}) | sim / Realeasy | "
                     + " | ".join(f"{f:.1f}x" for f in factors) + " |")
    return lines


def targets(split: str, result: dict, factor: float) -> dict:
    sim, real = result[split]["sim"], result[split]["realeasy"]
    reduction = torque_reduction(result[split])
    return {"split": split, "torque_factor_target": factor,
            "torque_reduction_min": min(reduction),
            "torque_joints_meeting": sum(f >= factor for f in reduction),
            "position_not_worse_joints": sum(r <= s for s, r in zip(sim["position_mse"],
                                                                    real["position_mse"])),
            "velocity_not_worse_joints": sum(r <= s for s, r in zip(sim["velocity_mse"],
                                                                    real["velocity_mse"]))}


def transfer(result: dict) -> dict:
    sim, real = result["all"]["sim"]["torque_mse"], result["all"]["realeasy"]["torque_mse"]
    return {"torque_mse_sim_total": sum(sim), "torque_mse_realeasy_total": sum(real),
            "torque_mse_reduction_percent": 100.0 * (1.0 - sum(real) / sum(sim)),
            "per_joint_reduction": [s / r for s, r in zip(sim, real)],
            "trajectories": result["all"]["trajectories"], "label": result["label"]}


def main(folder: str) -> None:
    evaluations = {a: load(folder, f"eval_{a}.json") for a in ARCHS
                   if os.path.exists(os.path.join(folder, f"eval_{a}.json"))}
    transfers = {a: load(folder, f"transfer_{a}.json") for a in evaluations
                 if os.path.exists(os.path.join(folder, f"transfer_{a}.json"))}
    trains = {a: load(folder, f"train_{a}.json") for a in evaluations}
    label = next(iter(evaluations.values()))["label"]
    figures = {"label": label,
               "targets": {a: [targets("test", r, 10.0), targets("cartesian", r, 5.0)]
                           for a, r in evaluations.items()},
               "transfer": {a: transfer(r) for a, r in transfers.items()}}
    with open(os.path.join(folder, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(figures, f, indent=2)
        f.write("\n")
    lines = [f"# Realeasy study: per-joint MSE against the {label} (not a real robot)", ""]
    for arch, result in evaluations.items():
        meta = trains[arch]
        lines.append(f"- {arch}: hidden {result['model']['hidden_size']}, "
                     f"{result['model']['num_layers']} layers, best epoch "
                     f"{meta.get('best_epoch')} of {meta.get('epochs_run')}, "
                     f"{meta.get('wall_seconds', 0):.0f} s; {result['warmup_note']}")
    for split in ("test", "cartesian"):
        lines += ["", *table(split, evaluations)]
    lines += ["", "## Targets", "", "| network | split | torque target | min reduction | joints "
              "meeting | position not worse | velocity not worse |", "|---|---|---|---|---|---|---|"]
    for arch, rows in figures["targets"].items():
        for r in rows:
            lines.append(f"| {arch} | {r['split']} | {r['torque_factor_target']:.0f}x | "
                         f"{r['torque_reduction_min']:.1f}x | {r['torque_joints_meeting']}/7 | "
                         f"{r['position_not_worse_joints']}/7 | {r['velocity_not_worse_joints']}/7 |")
    if transfers:
        lines += ["", "## Transfer to another stand-in individual (paper: 53 % on a second Panda)",
                  ""]
        for arch, t in figures["transfer"].items():
            lines.append(f"- {arch}, trained on the default stand-in, on {t['label']} "
                         f"({t['trajectories']} trajectories): torque MSE summed over the joints "
                         f"{t['torque_mse_sim_total']:.3g} -> {t['torque_mse_realeasy_total']:.3g}"
                         f" (N m)², a reduction of {t['torque_mse_reduction_percent']:.0f} %; per "
                         "joint " + ", ".join(f"{f:.1f}x" for f in t["per_joint_reduction"]))
    path = os.path.join(folder, "summary.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
