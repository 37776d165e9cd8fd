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
  ``train-rpl --json``'s ``comparison``);
* :func:`rpl_curve_table` and :func:`plot_rpl_curves`: the learning curves of the residual
  policies (evaluation reward R vs RL steps).

Each table's figures come from its ``*_rows`` function (:func:`mix_and_match_rows`,
:func:`bo_rows`, :func:`level_rows`, :func:`rpl_rows`, :func:`rpl_curve_rows`): plain dicts, the
numbers before formatting (``tables --json``).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence
from sim2real_checks import save_figure
from trifinger_controllers.errors import ConfigurationError

PAIRING_NAMES = {"cpc": "CPC", "cic": "CIC", "mp": "MP"}


def _pm(mean: Optional[float], std: Optional[float], digits: int) -> str:
    if mean is None:
        return "–"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def _figure(mean: Optional[float], std: Optional[float]) -> Dict[str, Optional[float]]:
    return {"mean": mean, "std": std}


def _pm_figure(figure: Dict[str, Optional[float]], digits: int) -> str:
    return _pm(figure["mean"], figure["std"], digits)


def _name(result: dict) -> str:
    return f"{PAIRING_NAMES.get(result['controller'], result['controller'])}-{result['grasp'].upper()}"


def _kept(result: dict, key: str) -> Dict[str, Optional[float]]:
    return _figure(result["mean"].get(key), result["std"].get(key))


def _order(controller: str) -> int:
    return list(PAIRING_NAMES).index(controller) if controller in PAIRING_NAMES else 9


def mix_and_match_rows(results: Sequence[dict]) -> List[dict]:
    """The figures of :func:`mix_and_match_table`, one dict per cell (controller, grasp, initial
    orientation error), in the table's order: ``orientation_error_deg`` and ``position_error_cm``
    (``mean``, ``std``), ``drop_rate`` and the number of ``trials``."""
    if not results:
        raise ConfigurationError("no mix-and-match results")
    cells: Dict[tuple, dict] = {(r["controller"], r["grasp"], r["init_orientation_error_deg"]): r
                                for r in results}
    rows = []
    for (controller, grasp, error), r in sorted(cells.items(), key=lambda kv: (_order(kv[0][0]), kv[0][1],
                                                                                kv[0][2])):
        m, s = r["mean"], r["std"]
        rows.append({"controller": controller, "grasp": grasp, "init_orientation_error_deg": error,
                     "orientation_error_deg": _figure(m["orientation_error_deg"], s["orientation_error_deg"]),
                     "position_error_cm": _figure(m["position_error_cm"], s["position_error_cm"]),
                     "drop_rate": r["drop_rate"], "trials": len(r["trials"])})
    return rows


def mix_and_match_table(results: Sequence[dict]) -> str:
    """Table II from the benchmark's ``mix_and_match`` list (each with ``controller``, ``grasp``,
    ``init_orientation_error_deg``, ``mean``, ``std``, ``drop_rate`` and ``trials``)."""
    figures = mix_and_match_rows(results)
    errors = sorted({r["init_orientation_error_deg"] for r in results})
    cells = {(r["controller"], r["grasp"], r["init_orientation_error_deg"]): r for r in figures}
    rows = sorted({(r["controller"], r["grasp"]) for r in results}, key=lambda cg: (_order(cg[0]), cg[1]))
    trials = sorted({len(r["trials"]) for r in results})
    head = ["Controller", "Grasp"] + [f"{h} (δθ = {e:g}°)" for e in errors
                                      for h in ("Ori. err. [deg]", "Pos. err. [cm]", "Drop [%]")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for controller, grasp in rows:
        row = [PAIRING_NAMES.get(controller, controller), grasp.upper()]
        for e in errors:
            r = cells.get((controller, grasp, e))
            row += ([_pm_figure(r["orientation_error_deg"], 1), _pm_figure(r["position_error_cm"], 2),
                     f"{100.0 * r['drop_rate']:.0f}"] if r is not None else ["", "", ""])
        lines.append("| " + " | ".join(row) + " |")
    lines.append(f"\nLevel 4, {'/'.join(map(str, trials))} trials per cell, simulation "
                 "(trifinger_simulation, PyBullet); errors over the trials without a drop.")
    return "\n".join(lines)


def bo_rows(manual: Sequence[dict], tuned: Sequence[dict]) -> List[dict]:
    """The figures of :func:`bo_table`: per tuned result its manual row, then its BO row
    (``bo``) of the same level and initial orientation error, each with ``cumulative_reward``,
    ``position_error_cm``, ``orientation_error_deg`` and ``tracked_position_error_cm`` (``mean``,
    ``std``: over the trials without a drop),
    ``drop_rate`` and ``cumulative_reward_all`` (over all trials)."""
    def task(r: dict) -> tuple:
        return r["controller"], r["grasp"], r["level"], r.get("orientation_error_deg")   # the initial error
    by_task = {task(r): r for r in manual}
    rows = []
    for bo in tuned:
        base = by_task.get(task(bo))
        if base is None:
            raise ConfigurationError(f"no manual result for {_name(bo)} at level {bo['level']}")
        same = ("seed", "seconds", "perception", "physics")
        if any(base.get(k) != bo.get(k) for k in same) or len(base["trials"]) != len(bo["trials"]):
            raise ConfigurationError(f"{_name(bo)}: the manual and BO results are not the same trials")
        for r, tuned_row in ((base, False), (bo, True)):
            rows.append({"policy": _name(r) + (" w BO" if tuned_row else ""), "controller": r["controller"],
                         "grasp": r["grasp"], "bo": tuned_row, "level": r["level"],
                         "init_orientation_error_deg": r.get("orientation_error_deg"),
                         "cumulative_reward": _kept(r, "cumulative_reward"),
                         "position_error_cm": _kept(r, "position_error_cm"),
                         "orientation_error_deg": _kept(r, "orientation_error_deg"),
                         "tracked_position_error_cm": _kept(r, "tracked_position_error_cm"),
                         "drop_rate": r["drop_rate"],
                         "cumulative_reward_all": r["mean_all"]["cumulative_reward"]})
    return rows


def bo_table(manual: Sequence[dict], tuned: Sequence[dict]) -> str:
    """Table III: each controller with its manual parameters (``manual``: evaluation results,
    e.g. the benchmark's ``level3`` list) and with its BO parameters (``tuned``: ``evaluate
    --params`` results of the same level, seed and trials); R over the trials without a drop
    (the paper's convention) and over all."""
    head = ["Control policy", "Level", "R (mean ± std)", "Pos. err. [cm]", "Ori. err. [deg]",
            "Pos. err. tracked [cm]", "Drop [%]", "R over all trials"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in bo_rows(manual, tuned):
        error = r["init_orientation_error_deg"]
        level = f"{r['level']}" + (f" ({error:g}°)" if error else "")
        orientation = _pm_figure(r["orientation_error_deg"], 1) if r["level"] == 4 else "–"
        lines.append("| " + " | ".join([
            r["policy"], level, _pm_figure(r["cumulative_reward"], 0), _pm_figure(r["position_error_cm"], 3),
            orientation,
            _pm_figure(r["tracked_position_error_cm"], 3), f"{100.0 * r['drop_rate']:.0f}",
            f"{r['cumulative_reward_all']:.0f}"]) + " |")
    return "\n".join(lines)


#: The error columns of :func:`level_table` and their digits.
LEVEL_FIGURES = {"position_error_cm": 3, "tracked_position_error_cm": 3, "orientation_error_deg": 1,
                 "tracked_orientation_error_deg": 1}


def level_rows(results: Sequence[dict]) -> List[dict]:
    """The figures of :func:`level_table`, one dict per result: ``policy``, ``level``,
    ``init_orientation_error_deg``, ``trials``, the true and tracked ``position_error_cm`` and
    ``orientation_error_deg`` (``mean``, ``std``) and ``drop_rate``."""
    rows = []
    for r in results:
        aligned = bool(r.get("aligned") or r.get("align"))
        rows.append({"policy": _name(r) + (" + alignment" if aligned else ""), "controller": r["controller"],
                     "grasp": r["grasp"], "aligned": aligned, "level": r["level"],
                     "init_orientation_error_deg": r.get("orientation_error_deg"), "trials": len(r["trials"]),
                     **{key: _kept(r, key) for key in LEVEL_FIGURES}, "drop_rate": r["drop_rate"]})
    return rows


def level_table(results: Sequence[dict]) -> str:
    """Level-3/4 rows: final position and orientation errors on the ground truth and as tracked,
    drops, trials (each result an evaluation result with ``controller``, ``grasp``, ``level``)."""
    head = ["Control policy", "Level", "δθ [deg]", "Trials", "Pos. err. [cm]", "Pos. err. tracked [cm]",
            "Ori. err. [deg]", "Ori. err. tracked [deg]", "Drop [%]"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in level_rows(results):
        error = r["init_orientation_error_deg"]
        lines.append("| " + " | ".join([
            r["policy"], str(r["level"]), "–" if error is None else f"{error:g}", str(r["trials"]),
            *(_pm_figure(r[key], digits) for key, digits in LEVEL_FIGURES.items()),
            f"{100.0 * r['drop_rate']:.0f}"]) + " |")
    return "\n".join(lines)


def rpl_rows(results: Iterable[dict]) -> List[dict]:
    """The figures of :func:`rpl_table`: the rows of each result's ``comparison`` table
    (``policy``, ``R_mean``, ``R_std``, ``position_error_cm_mean``, ``position_error_cm_std``,
    ``drop_percent``)."""
    keys = ("policy", "R_mean", "R_std", "position_error_cm_mean", "position_error_cm_std", "drop_percent")
    return [{k: row[k] for k in keys} for result in results for row in result["comparison"]["table"]]


def rpl_table(results: Iterable[dict]) -> str:
    """Table IV (level 3) from ``train-rpl`` JSON files."""
    head = ["Control policy", "R (mean ± std)", "Pos. err. [cm]", "Drop [%]"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rpl_rows(results):
        lines.append("| " + " | ".join([
            row["policy"], _pm(row["R_mean"], row["R_std"], 0),
            _pm(row["position_error_cm_mean"], row["position_error_cm_std"], 3),
            f"{row['drop_percent']:.0f}",
        ]) + " |")
    return "\n".join(lines)


def rpl_curve_rows(results: Iterable[dict]) -> List[dict]:
    """The figures of :func:`rpl_curve_table`: per ``train-rpl`` result its ``policy`` and
    its ``curve``, per evaluation point the RL ``step``, R over all evaluation episodes
    (``cumulative_reward``), ``position_error_cm`` and ``drop_rate``."""
    return [{"policy": f"{_name(r['config'])} w RPL",
             "curve": [{"step": p["step"], "cumulative_reward": p["mean_all"]["cumulative_reward"],
                        "position_error_cm": p["mean_all"]["position_error_cm"], "drop_rate": p["drop_rate"]}
                       for p in r["learning_curve"]]}
            for r in results]


def rpl_curve_table(results: Iterable[dict]) -> str:
    """The learning curves of ``train-rpl`` JSON files: per evaluation point (RL steps) and
    controller, R over all evaluation episodes, position error [cm] and drops [%]."""
    curves = rpl_curve_rows(results)
    steps = sorted({p["step"] for c in curves for p in c["curve"]})
    head = ["RL steps"] + [f"{c['policy']}: R / cm / drop %" for c in curves]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for step in steps:
        cells = [f"{step:,}"]
        for c in curves:
            point = next((p for p in c["curve"] if p["step"] == step), None)
            cells.append("–" if point is None else
                         f"{point['cumulative_reward']:.0f} / "
                         f"{point['position_error_cm']:.2f} / {100.0 * point['drop_rate']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_rpl_curves(results: Iterable[dict], path: str) -> None:
    """Evaluation reward R vs RL steps of each ``train-rpl`` result (step 0: the base
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
    save_figure(fig, path, dpi=120)
