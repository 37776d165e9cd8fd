"""The delivery-vehicle experiment's plots (paper 001 Fig. 4/6/9/10/11 style, matplotlib);
every title says the deployment is simulated."""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from kernel_manager_ros.kernel import KernelSet
from kernel_manager_ros.vehicle.mission import MissionConfig
from kernel_manager_ros.vehicle.model import Ramp
from kernel_manager_ros.vehicle.run import RunResult
from sim2real_checks import save_figure
from kernel_manager_ros.experiments.vehicle_stages import DEPLOY_NAME, run_positions


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
        xy = run_positions(runs[key])
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
    xy = run_positions(runs["deploy"])
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
        deploy_xy = run_positions(runs["slow_deploy"])
        design_xy = run_positions(runs["design"])
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
        kernel_xy = run_positions(runs["sensor_kernels"])
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
