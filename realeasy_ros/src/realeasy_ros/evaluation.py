"""Evaluation of a trained Realeasy model like paper 000 Table II: per-joint MSE of the
simulation and of the corrected simulation X + NN(X) (eq. 9) against the (stand-in) real robot,
over the test sets ('test': joint-space moves, 'cartesian': Cartesian linear moves, §V), and the
reduction factor sim MSE / Realeasy MSE per joint.

The realtime model is evaluated as it runs live (Algorithm 2): during the first ``warmup_steps``
steps of every trajectory the simulator's state is used unchanged, and these steps count.

This module imports no torch at load time; the model is passed in. The per-joint MSE itself is
:func:`panda_pairs.metrics.per_joint_mse`, shared with the gap report.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from panda_pairs import Dataset, Progress, QUANTITIES, SPLITS, per_joint_mse  # noqa: F401 (QUANTITIES re-exported)
from panda_sim2real import ConfigError

if TYPE_CHECKING:   # pragma: no cover - typing only, keeps torch out of the import
    from realeasy_ros.model import RealeasyModel

ALL = "all"                                  # every trajectory of the data set (transfer study)
EVALUATION_SPLITS = SPLITS + (ALL,)
DEFAULT_SPLITS = ("test", "cartesian")       # the two test sets of Table II
def _ratio(sim: Sequence[float], model: Sequence[float]) -> list[Optional[float]]:
    """sim / model per joint; None where the model's MSE is 0 (no finite factor)."""
    return [float(s) / float(m) if m > 0.0 else None for s, m in zip(sim, model)]


def _check_splits(splits: Sequence[str]) -> tuple[str, ...]:
    splits = tuple(splits)
    unknown = [s for s in splits if s not in EVALUATION_SPLITS]
    if unknown or not splits:
        raise ConfigError(f"unknown or no split(s) {unknown or list(splits)}; choose from "
                          f"{', '.join(EVALUATION_SPLITS)}")
    return tuple(dict.fromkeys(splits))   # drop repeats, keep the order


def split_trajectories(dataset: Dataset, split: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(sim, real) in physical units of the trajectories of ``split`` ('all': every one)."""
    return dataset.trajectories(None if split == ALL else split, normalised=False)


def model_summary(model: "RealeasyModel") -> dict:
    """The model's figures as they appear in the evaluation output."""
    warmup = model.effective_warmup_steps
    return {"architecture": model.architecture, "hidden_size": model.spec.hidden_size,
            "num_layers": model.spec.num_layers, "rate": float(model.rate),
            "warmup_steps": warmup, "warmup_seconds": warmup / float(model.rate)}


def warmup_note(model: "RealeasyModel") -> str:
    """One sentence on how the start of every trajectory was treated."""
    from realeasy_ros.networks import REALTIME   # the model is loaded, so torch already is
    if model.architecture != REALTIME:
        return (f"{model.architecture} model (bidirectional, Algorithm 1) evaluated on whole "
                f"trajectories; it needs no warm-up.")
    steps = model.effective_warmup_steps
    if steps == 0:
        return (f"{model.architecture} model evaluated without warm-up: the network corrects "
                f"from the first step of every trajectory.")
    return (f"{model.architecture} model evaluated with {steps} warm-up steps "
            f"({steps / model.rate:.3g} s, Algorithm 2) at the start of every trajectory, during "
            f"which the simulator's values are used and count in the MSE.")


def check_model_fits(model: "RealeasyModel", dataset: Dataset) -> None:
    """ConfigError unless the model is for the data set's joints (same order) and rate."""
    model.check_compatible(dataset.joint_names, source=f"the data set ({dataset.label})")
    if not math.isclose(float(dataset.rate), float(model.rate), rel_tol=1e-9):
        raise ConfigError(f"model was trained at {model.rate:g} Hz, the data set is sampled at "
                          f"{dataset.rate:g} Hz")


def evaluate_split(model: "RealeasyModel", pairs: Sequence[tuple[np.ndarray, np.ndarray]],
                   progress: Optional[Progress] = None) -> Optional[dict]:
    """MSE of simulation and of simulation + Realeasy over all samples of ``pairs`` (physical
    (sim, real) per trajectory); each trajectory is corrected on its own as one sequence, the
    realtime model with its warm-up. None without trajectories."""
    if not pairs:
        return None
    items = progress(pairs) if progress is not None else pairs
    corrected = [model.correct(sim) for sim, _ in items]
    sim = np.concatenate([s for s, _ in pairs])
    real = np.concatenate([r for _, r in pairs])
    before, after = per_joint_mse(sim, real), per_joint_mse(np.concatenate(corrected), real)
    return {"sim": before, "realeasy": after, "trajectories": len(pairs),
            "samples": int(sim.shape[0]),
            "reduction": {name: _ratio(before[key], after[key]) for name, key, _ in QUANTITIES}}


def evaluate_model(model: "RealeasyModel", dataset: Dataset,
                   splits: Sequence[str] = DEFAULT_SPLITS,
                   progress: Optional[Progress] = None) -> dict:
    """Paper 000 Table II for ``model`` on ``dataset``: per split, the per-joint MSE of the
    simulation ("sim") and of the corrected simulation ("realeasy") against the data set's real
    side, the reduction factors, and the counts. A split without trajectories is null and listed
    in "notes". ConfigError for other joints or rate, unknown splits, or no trajectory at all."""
    splits = _check_splits(splits)
    check_model_fits(model, dataset)
    result: dict = {"label": dataset.label, "model": model_summary(model),
                    "warmup_note": warmup_note(model), "notes": []}
    for split in splits:
        result[split] = evaluate_split(model, split_trajectories(dataset, split), progress)
        if result[split] is None:
            result["notes"].append(f"split '{split}' has no trajectories in this data set")
    if all(result[s] is None for s in splits):
        raise ConfigError(f"the data set has no trajectories in the split(s) {', '.join(splits)} "
                          f"(it has {dataset.counts()})")
    return result


def model_name(architecture: str) -> str:
    return f"Simulation + Realeasy ({architecture})"


def format_evaluation(result: dict) -> str:
    """A plain-text table like paper 000 Table II: per split, rows 'Simulation' and
    'Simulation + Realeasy (<arch>)' for each quantity, columns joint 1..dof, and the torque
    reduction factor."""
    label = result["label"]
    against = f"{label} (a stand-in, not a real robot)" if "stand-in" in label.lower() else label
    m = result["model"]
    lines = [f"Per-joint MSE against {against}, like paper 000 Table II",
             f"model: {m['architecture']} Realeasy, {m['num_layers']} layers of {m['hidden_size']}, "
             f"{m['rate']:g} Hz; {result['warmup_note']}"]
    names = [k for k in result if k in EVALUATION_SPLITS]
    rows = ("Simulation", model_name(m["architecture"]))
    width = max(len(r) for r in rows)
    for split in names:
        block = result[split]
        lines.append("")
        if block is None:
            lines.append(f"{split}: no trajectories")
            continue
        dof = len(block["sim"]["torque_mse"])
        n = block["trajectories"]
        lines.append(f"{split}: {n} trajector{'y' if n == 1 else 'ies'}, {block['samples']} "
                     f"samples")
        header = (f"{'':<9} {'unit':<10} {'':<{width}}"
                  + "".join(f"{f'joint {j + 1}':>11}" for j in range(dof)))
        lines += [header, "-" * len(header)]
        for name, key, unit in QUANTITIES:
            for row, source in zip(rows, ("sim", "realeasy")):
                lines.append(f"{name:<9} {unit:<10} {row:<{width}}"
                             + "".join(f"{v:>11.2e}" for v in block[source][key]))
        factors = block["reduction"]["torque"]
        lines.append(f"{'torque':<9} {'factor':<10} {'reduction (sim / Realeasy)':<{width}}"
                     + "".join(f"{v:>11.3g}" if v is not None else f"{'-':>11}"
                               for v in factors))
    return "\n".join(lines)


def trajectory_index(dataset: Dataset, splits: Sequence[str],
                     trajectory_id: Optional[int] = None) -> int:
    """Index (into the data set) of the trajectory to plot: ``trajectory_id`` (any split), by
    default the first multi-joint test trajectory (if 'test' or 'all' is among ``splits``),
    else the first of ``splits``. ConfigError if there is none."""
    if trajectory_id is not None:
        found = np.flatnonzero(dataset.trajectory_ids == trajectory_id)
        if found.size == 0:
            raise ConfigError(f"trajectory {trajectory_id} is not in the data set "
                              f"({len(dataset)} trajectories)")
        return int(found[0])
    multi_test = np.flatnonzero((dataset.split == "test") & (dataset.kinds == "multi"))
    if multi_test.size and ("test" in splits or ALL in splits):
        return int(multi_test[0])
    for split in splits:
        chosen = np.arange(len(dataset)) if split == ALL else np.flatnonzero(dataset.split == split)
        if chosen.size:
            return int(chosen[0])
    raise ConfigError(f"no trajectory to plot in the split(s) {', '.join(splits)}")
