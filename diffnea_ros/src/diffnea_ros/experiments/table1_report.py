"""The Markdown table and the Fig. 1 plot (matplotlib) of paper 002's Table 1 reproduction, from
the figures of :func:`diffnea_ros.experiments.table1.run_table1`."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from sim2real_checks import save_figure

from diffnea_ros.experiments.baselines import BASELINES
from diffnea_ros.experiments.random_init import DRAW_SOURCES
from diffnea_ros.experiments.table1 import LABEL, METRICS, NAMES, RMS, STOP_NMSE
from diffnea_ros.parametrisation import PARAMETRISATIONS

COM_TEXT = {"learned": "mass, CoM as θ_h = m c, inertia",
            "urdf": "mass and inertia; the CoM kept at the URDF's, as in the authors' L4DC "
                    "configurations (--com urdf)"}


def _cell(value: Optional[tuple[float, float]], digits: int = 3, sci: bool = False) -> str:
    if value is None:
        return "–"
    mean, std = value
    if sci:
        return f"{mean:.1e} ± {std:.1e}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def epochs_cell(summary: dict[str, Any], max_epochs: int) -> str:
    if summary["model"] == "truth":
        return "N/A"
    if summary["reached"] == 0:
        return f"not reached in {max_epochs}"
    cell = _cell(summary["epochs"], 1)
    if summary["reached"] < summary["runs"]:
        cell += f" ({summary['reached']}/{summary['runs']} reached in {max_epochs})"
    return cell


def section_title(section: dict[str, Any], seeds: int) -> str:
    if section["init"] == "random":
        return f"Random initialisation (the paper's start), {seeds} seeds"
    return f"DiffNEA from the perturbed URDF, scale s = {section['scale']:g}, {seeds} seeds"


def markdown(figures: dict[str, Any]) -> str:
    setup = figures["setup"]
    tracking = setup["os_tasks"] > 0
    lines = [
        "# Paper 002 Table 1 in simulation (DiffNEA, KUKA iiwa sine tracking)",
        "",
        f"**{LABEL}.**",
        "",
        f"Data: pybullet_data `kuka_iiwa/model.urdf` in PyBullet (1 kHz, URDF inertia, URDF joint "
        f"damping 0.5 N m s/rad), sine waves of paper §4.1, computed-torque control with the "
        f"ground-truth RNEA; {setup['duration']:g} s recorded at 250 Hz = {setup['samples']} "
        f"samples; qdd: {setup['acceleration']}. Ground truth on these data: worst-joint NMSE "
        f"{max(setup['ground_truth_nmse']):.1e}.",
        f"Training: Adam lr {setup['lr']:g}, {setup.get('batches', 'shuffled')} batches of "
        f"{setup['batch_size']} "
        f"({-(-setup['samples'] // setup['batch_size'])} Adam steps per epoch), loss L_ID "
        f"(eq. 2) on all samples, at most {setup['max_epochs']} epochs; stop when the training "
        f"NMSE of every joint is <= {STOP_NMSE}. Epochs: mean ± std (population) over the seeds "
        f"that reached it; 0 = the start already did. DiffNEA learns all 7 links "
        f"({COM_TEXT[setup.get('com', 'learned')]}) and the joint damping (random start: raw "
        f"parameters drawn as in the authors' "
        f"{DRAW_SOURCES[setup['draws']]}, damping 1e-3; see "
        f"diffnea_ros/experiments/random_init.py). MLP and DeLaN: [32, 64, 32] tanh "
        f"networks (paper §4.1), DeLaN with learnt viscous damping.",
    ]
    if tracking:
        lines.append(
            f"Tracking (every model as the controller's inverse dynamics, in the same simulator): "
            f"q, qd: the sine waves for {setup['track_seconds']:g} s, feed-forward from the model plus "
            f"the data-collection PD (10 Hz); x, xd: {setup['os_tasks']} reaching tasks per seed "
            f"(goal = home + U(±0.15 m)³, seeded; minimum-jerk 2 s + 0.5 s hold) under "
            f"velocity-based operational-space control (Nakanishi et al. 2008; 250 Hz, Kx 10/s, "
            f"5 Hz joint-velocity loop). NMSE = mean squared tracking error / variance of the "
            f"target (per joint or axis, averaged), mean ± std over the seeds; unstable runs "
            f"are left out of the means and counted.")
    lines.append("")
    for section in setup["sections"]:
        rows = [s for s in figures["summary"] if s["init"] == section["init"]
                and s["scale"] == section["scale"]]
        lines += [f"## {section_title(section, setup['seeds'])}", ""]
        if tracking:
            lines += ["| model | # training epochs | q tracking NMSE | qd tracking NMSE | "
                      "x tracking NMSE | xd tracking NMSE | unstable | consistent | "
                      "paper: epochs / q / qd / x / xd |",
                      "|---|---|---|---|---|---|---|---|---|"]
        else:
            lines += ["| model | # training epochs | final worst-joint NMSE (median) | "
                      "consistent | paper epochs |", "|---|---|---|---|---|"]
        for s in rows:
            consistent = "–" if s["consistent"] is None else f"{s['consistent']}/{s['runs']}"
            if tracking:
                nmse = " | ".join(_cell(s[k], sci=True) for k in METRICS)
                lines.append(f"| {NAMES[s['model']]} | {epochs_cell(s, setup['max_epochs'])} | "
                             f"{nmse} | {s['unstable']}/{s['runs']} | {consistent} | "
                             f"{' / '.join(s['paper'])} |")
            else:
                lines.append(f"| {NAMES[s['model']]} | {epochs_cell(s, setup['max_epochs'])} | "
                             f"{s['final_worst_nmse_median']:.3f} | {consistent} | "
                             f"{s['paper'][0]} |")
        if tracking:
            lines += ["", "RMS tracking errors in state units (mean ± std over the seeds):", "",
                      "| model | q [rad] | qd [rad/s] | x [m] | xd [m/s] |", "|---|---|---|---|---|"]
            for s in rows:
                lines.append(f"| {NAMES[s['model']]} | "
                             + " | ".join(_cell(s[k], sci=True) for k in RMS) + " |")
        lines.append("")
    if figures.get("online"):
        lines += ["## Online learning (paper Fig. 1)", "",
                  f"Sequential batches of 256 without shuffling, seed 0, {setup['online_epochs']} "
                  f"pass(es) over the first {setup['online_seconds']:g} s of the data (the paper: all "
                  f"of it); mean NMSE over joints on those samples: see "
                  f"online_learning.png.", "",
                  "| model | start | mean NMSE: initial | after 1 batch | after 10 batches | "
                  "final | batches to all joints ≤ 0.1 |", "|---|---|---|---|---|---|---|"]
        for curve in figures["online"]:
            points = curve["points"]
            mean = [np.mean([v if v is not None else np.inf for v in point["nmse"]])
                    for point in points]
            first = next((i for i, point in enumerate(points)
                          if all(v is not None and v <= STOP_NMSE for v in point["nmse"])), None)
            pick = lambda i: f"{mean[min(i, len(mean) - 1)]:.3g}"   # noqa: E731
            lines.append(f"| {NAMES[curve['model']]} | {curve['start']} | {pick(0)} | "
                         f"{pick(1)} | {pick(10)} | {pick(len(mean) - 1)} | "
                         f"{first if first is not None else 'not reached'} |")
        lines.append("")
    lines.append(f"Run time: {figures['seconds']:.0f} s on {setup['threads']} thread(s).")
    return "\n".join(lines) + "\n"


def plot_online(curves: list[dict[str, Any]], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.6, 4.8))
    colours = dict(zip(list(PARAMETRISATIONS) + list(BASELINES),
                       plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for curve in curves:
        x = [point["samples"] / 256 for point in curve["points"]]
        y = [np.mean([v if v is not None else np.nan for v in point["nmse"]])
             for point in curve["points"]]
        dashed = curve["start"].startswith("perturbed")
        label = NAMES[curve["model"]] + (f" ({curve['start']})" if dashed else "")
        ax.plot(x, y, label=label, color=colours.get(curve["model"]),
                linestyle="--" if dashed else "-", linewidth=1.2)
    ax.axhline(STOP_NMSE, color="grey", linestyle=":", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("batches of 256 (sequential, not shuffled)")
    ax.set_ylabel("NMSE on the whole data set (mean over joints)")
    ax.set_title("Online learning, simulated iiwa sine tracking (paper 002 Fig. 1; simulation)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
