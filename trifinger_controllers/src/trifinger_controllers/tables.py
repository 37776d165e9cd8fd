"""Markdown tables in the layouts of paper 004 from our result files (all simulation results):

* :func:`mix_and_match_table`, Table II: controller x grasp rows, per initial orientation error
  the orientation error [deg], position error [cm] (both over the trials without a drop, the
  paper's convention) and the drop rate [%];
* :func:`bo_table`, Table III: manual and BO parameters per controller on the same trials, mean
  cumulative reward R, position error (true and as tracked) and drops (manual: the benchmark's
  level-3 rows; BO: ``evaluate --params config/bo_*.yaml`` results);
* :func:`level_table`: the level-3 and level-4 rows of the targets (errors on the ground truth
  and as the object tracker sees them);
* :func:`rpl_table`, Table IV: each controller with and without its residual policy (from
  ``train-residual --json``'s ``comparison``);
* :func:`rpl_curve_table` and :func:`plot_rpl_curves`: the learning curves of the residual
  policies (evaluation reward R vs RL steps).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence

PAIRING_NAMES = {"cpc": "CPC", "cic": "CIC", "mp": "MP"}


def _pm(mean: Optional[float], std: Optional[float], digits: int) -> str:
    if mean is None:
        return "–"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def _cell(result: dict) -> List[str]:
    m, s = result["mean"], result["std"]
    return [_pm(m["orientation_error_deg"], s["orientation_error_deg"], 1),
            _pm(m["position_error_cm"], s["position_error_cm"], 2),
            f"{100.0 * result['drop_rate']:.0f}"]


def mix_and_match_table(results: Sequence[dict]) -> str:
    """Table II from the benchmark's ``mix_and_match`` list (each with ``controller``, ``grasp``,
    ``init_orientation_error_deg``, ``mean``, ``std``, ``drop_rate`` and ``trials``)."""
    if not results:
        raise ValueError("no mix-and-match results")
    errors = sorted({r["init_orientation_error_deg"] for r in results})
    cells: Dict[tuple, dict] = {(r["controller"], r["grasp"], r["init_orientation_error_deg"]): r
                                for r in results}
    rows = sorted({(r["controller"], r["grasp"]) for r in results},
                  key=lambda cg: (list(PAIRING_NAMES).index(cg[0]) if cg[0] in PAIRING_NAMES else 9, cg[1]))
    trials = sorted({len(r["trials"]) for r in results})
    head = ["Controller", "Grasp"] + [f"{h} (δθ = {e:g}°)" for e in errors
                                      for h in ("Ori. err. [deg]", "Pos. err. [cm]", "Drop [%]")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for controller, grasp in rows:
        row = [PAIRING_NAMES.get(controller, controller), grasp.upper()]
        for e in errors:
            r = cells.get((controller, grasp, e))
            row += _cell(r) if r is not None else ["", "", ""]
        lines.append("| " + " | ".join(row) + " |")
    lines.append(f"\nLevel 4, {'/'.join(map(str, trials))} trials per cell, simulation "
                 "(trifinger_simulation, PyBullet); errors over the trials without a drop.")
    return "\n".join(lines)


def _name(result: dict) -> str:
    return f"{PAIRING_NAMES.get(result['controller'], result['controller'])}-{result['grasp'].upper()}"


def _kept(result: dict, key: str, digits: int) -> str:
    return _pm(result["mean"].get(key), result["std"].get(key), digits)


def bo_table(manual: Sequence[dict], tuned: Sequence[dict]) -> str:
    """Table III: each controller with its manual parameters (``manual``: evaluation results,
    e.g. the benchmark's ``level3`` list) and with its BO parameters (``tuned``: ``evaluate
    --params`` results of the same level, seed and trials); R over the trials without a drop
    (the paper's convention) and over all."""
    by_policy = {(r["controller"], r["grasp"]): r for r in manual}
    head = ["Control policy", "R (mean ± std)", "Pos. err. [cm]", "Pos. err. tracked [cm]", "Drop [%]",
            "R over all trials"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for bo in tuned:
        base = by_policy.get((bo["controller"], bo["grasp"]))
        if base is None:
            raise ValueError(f"no manual result for {_name(bo)}")
        same = ("level", "seed", "seconds", "perception", "physics")
        if any(base.get(k) != bo.get(k) for k in same) or len(base["trials"]) != len(bo["trials"]):
            raise ValueError(f"{_name(bo)}: the manual and BO results are not the same trials")
        for r, suffix in ((base, ""), (bo, " w BO")):
            lines.append("| " + " | ".join([
                _name(r) + suffix, _kept(r, "cumulative_reward", 0), _kept(r, "position_error_cm", 3),
                _kept(r, "tracked_position_error_cm", 3), f"{100.0 * r['drop_rate']:.0f}",
                f"{r['mean_all']['cumulative_reward']:.0f}"]) + " |")
    return "\n".join(lines)


def level_table(results: Sequence[dict]) -> str:
    """Level-3/4 rows: final position and orientation errors on the ground truth and as tracked,
    drops, trials (each result an evaluation result with ``controller``, ``grasp``, ``level``)."""
    head = ["Control policy", "Level", "δθ [deg]", "Trials", "Pos. err. [cm]", "Pos. err. tracked [cm]",
            "Ori. err. [deg]", "Ori. err. tracked [deg]", "Drop [%]"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        error = r.get("orientation_error_deg")
        lines.append("| " + " | ".join([
            _name(r) + (" + alignment" if r.get("aligned") or r.get("align") else ""), str(r["level"]),
            "–" if error is None else f"{error:g}", str(len(r["trials"])),
            _kept(r, "position_error_cm", 3), _kept(r, "tracked_position_error_cm", 3),
            _kept(r, "orientation_error_deg", 1), _kept(r, "tracked_orientation_error_deg", 1),
            f"{100.0 * r['drop_rate']:.0f}"]) + " |")
    return "\n".join(lines)


def rpl_table(results: Iterable[dict]) -> str:
    """Table IV (level 3) from ``train-residual`` JSON files."""
    head = ["Control policy", "R (mean ± std)", "Pos. err. [cm]", "Drop [%]"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for result in results:
        for row in result["comparison"]["table"]:
            lines.append("| " + " | ".join([
                row["policy"], _pm(row["R_mean"], row["R_std"], 0),
                _pm(row["position_error_cm_mean"], row["position_error_cm_std"], 3),
                f"{row['drop_percent']:.0f}",
            ]) + " |")
    return "\n".join(lines)


def rpl_curve_table(results: Iterable[dict]) -> str:
    """The learning curves of ``train-residual`` JSON files: per evaluation point (RL steps) and
    controller, R over all evaluation episodes, position error [cm] and drops [%]."""
    results = list(results)
    steps = sorted({p["step"] for r in results for p in r["learning_curve"]})
    head = ["RL steps"] + [f"{_name(r['config'])} w RPL: R / cm / drop %" for r in results]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for step in steps:
        cells = [f"{step:,}"]
        for r in results:
            point = next((p for p in r["learning_curve"] if p["step"] == step), None)
            cells.append("–" if point is None else
                         f"{point['mean_all']['cumulative_reward']:.0f} / "
                         f"{point['mean_all']['position_error_cm']:.2f} / {100.0 * point['drop_rate']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_rpl_curves(results: Iterable[dict], path: str) -> None:
    """Evaluation reward R vs RL steps of each ``train-residual`` result (step 0: the base
    controller alone, the residual's mean head starting at zero), written to ``path`` (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for r in results:
        curve = r["learning_curve"]
        ax.plot([p["step"] for p in curve], [p["mean_all"]["cumulative_reward"] for p in curve],
                marker="o", label=f"{_name(r['config'])} w RPL")
    ax.set_xlabel("RL steps")
    ax.set_ylabel("R, evaluation episodes (mean)")
    ax.set_title("Residual policy learning, level 3 (simulation)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
