"""The sim-to-real gap before any learning: per-joint MSE of the simulation against the (stand-in)
real robot, like the 'Simulation' rows of paper 000 Table II, and a torque plot like Fig. 2.
"""
from __future__ import annotations


from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from panda_pairs.alignment import AlignedPair, Progress, SkippedPair, align_all
from panda_pairs.errors import BagError
from panda_pairs.metrics import QUANTITIES, per_joint_mse
from panda_pairs.pair_bag import DEFAULT_LABEL, PairRecording
from panda_sim2real import KINDS, TASK
from sim2real_checks import save_figure

COMPARED_KINDS = (*KINDS, TASK)     # the random moves and the work-cycle repeats


def gap_statistics(aligned_pairs: Sequence[AlignedPair], label: str = DEFAULT_LABEL) -> dict:
    """Per-joint MSE of simulation minus real over all samples of all aligned pairs, in physical
    units: position_mse [rad^2], velocity_mse [(rad/s)^2], torque_mse [(N m)^2] (lists of dof),
    plus ``trajectories`` (count) and ``label``. Raises ValueError without pairs."""
    if not aligned_pairs:
        raise ValueError("gap statistics need at least one aligned pair")
    mse = per_joint_mse(np.concatenate([p.sim for p in aligned_pairs]),
                        np.concatenate([p.real for p in aligned_pairs]))
    return dict(mse, trajectories=len(aligned_pairs), label=str(label))


def format_table(stats: dict) -> str:
    """A plain-text table: rows position/velocity/torque, columns joint 1..dof, e.g. 3.64e+01."""
    dof = len(stats["torque_mse"])
    title = (f"Simulation vs {stats['label']}: per-joint MSE over {stats['trajectories']} "
             f"trajectories (like paper 000 Table II, 'Simulation' row)")
    header = f"{'':<9} {'unit':<10}" + "".join(f"{f'joint {j + 1}':>11}" for j in range(dof))
    lines = [title, header, "-" * len(header)]
    for name, key, unit in QUANTITIES:
        lines.append(f"{name:<9} {unit:<10}" + "".join(f"{v:>11.2e}" for v in stats[key]))
    return "\n".join(lines)


@dataclass
class GapComparison:
    stats: dict
    aligned: list[AlignedPair]
    skipped: list[SkippedPair]


def compare_recording(recording: PairRecording, rate: float = 100.0,
                      progress: Optional[Progress] = None) -> GapComparison:
    """Align the data-set pairs of a recording and compute :func:`gap_statistics`; BagError if
    no pair can be aligned."""
    result = align_all(recording.pairs, rate=rate, kinds=COMPARED_KINDS, progress=progress)
    if not result.aligned:
        raise BagError(f"bag {recording.path}: none of its {len(result.skipped)} trajectory "
                       f"pairs could be aligned")
    return GapComparison(gap_statistics(result.aligned, recording.label), result.aligned,
                         result.skipped)


def choose_trajectory(aligned: Sequence[AlignedPair],
                      trajectory_id: Optional[int] = None) -> AlignedPair:
    """The pair with ``trajectory_id``; by default the first multi-joint one, else the first."""
    if trajectory_id is not None:
        for pair in aligned:
            if pair.trajectory_id == trajectory_id:
                return pair
        raise BagError(f"trajectory {trajectory_id} is not among the {len(aligned)} aligned pairs")
    if not aligned:
        raise BagError("no aligned trajectory pair to choose from")
    return next((p for p in aligned if p.kind == "multi"), aligned[0])


def plot_torques(aligned_pair: AlignedPair, path: str, label: str = DEFAULT_LABEL) -> None:
    """Seven stacked plots of the joint torques [N m], simulation (blue) vs ``label`` (green),
    over time since the detected motion start, like paper 000 Fig. 2. Writes ``path`` (PNG)."""
    pair = aligned_pair
    t = pair.t - pair.t[pair.start_index] if len(pair) > pair.start_index else pair.t - pair.t[0]
    plot_torque_panels(t, pair.sim, pair.real, path, label,
                       f"Trajectory {pair.trajectory_id} ({pair.kind}): joint torques, simulation "
                       f"vs {label} (shift {pair.shift * 1e3:.1f} ms)",
                       xlabel="time since motion start [s]")


def plot_torque_panels(t: np.ndarray, sim: np.ndarray, real: np.ndarray, path: str,
                       label: str = DEFAULT_LABEL, title: str = "",
                       corrected: Optional[np.ndarray] = None,
                       corrected_label: str = "simulation + Realeasy",
                       xlabel: str = "time [s]") -> None:
    """Paper 000 Fig. 2: one panel per joint with the torques [N m] of ``label`` (green), the
    simulation (blue) and, if given, the corrected simulation X + NN(X) (red), over ``t`` [s].
    ``sim``, ``real``, ``corrected`` are (T, 3 dof) physical states [q, qd, tau]. Writes ``path``
    (PNG)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dof = sim.shape[1] // 3
    fig = Figure(figsize=(8.0, 1.5 * dof + 1.0))
    FigureCanvasAgg(fig)
    axes = np.atleast_1d(fig.subplots(dof, 1, sharex=True))
    for j, ax in enumerate(axes):
        ax.plot(t, real[:, 2 * dof + j], color="tab:green", lw=1.2, label=label)
        ax.plot(t, sim[:, 2 * dof + j], color="tab:blue", lw=1.0, label="simulation")
        if corrected is not None:
            ax.plot(t, corrected[:, 2 * dof + j], color="tab:red", lw=1.0, label=corrected_label)
        ax.set_ylabel(f"joint {j + 1}\n[N m]", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=7, ncol=2 if corrected is None else 3)
    axes[-1].set_xlabel(xlabel)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    save_figure(fig, path, dpi=100)
