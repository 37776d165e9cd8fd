"""Which trajectory is used for what: one split per bag, fixed before any stage learns.

Random trajectories: panda_pairs' data set split, seeded, with the fractions of the pipeline's
settings (``random_split``: joint-space moves 70 % training / 15 % validation / 15 % test; the
Cartesian moves are the data set's second test split). Then the held-out moves (its test and
Cartesian splits) are halved per kind, seeded (:func:`random_purposes`): one half is the
acceptance gate's, the other the report's test. So the gate decides on every kind of move the
test holds (Cartesian ones included), and never on the validation split Realeasy stops early on.
Task repeats are split in order of execution: the first ``train`` fraction makes the kernels,
the next ``validation`` fraction is the acceptance gate's, the rest is the test.
Identification, Realeasy and the kernels learn on training trajectories only; the acceptance gate
decides on its trajectories only; the report's figures are on the test trajectories only.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from sim2real_pipeline.errors import PipelineError

TRAIN, VALIDATION, TEST, GATE = "train", "validation", "test", "gate"
HELD_OUT = ("test", "cartesian")        # panda_pairs data set splits held out from learning


def random_purposes(ids: Sequence[int], kinds: Sequence[str], splits: Sequence[str],
                    seed: int) -> dict[str, list[int]]:
    """Trajectory ids per purpose: ``train`` and ``validation`` (Realeasy's early stopping) as
    the data set's splits, ``gate`` and ``test`` each half of the held-out moves of every kind
    (seeded; a kind with one held-out move gives it to the test)."""
    out: dict[str, list[int]] = {TRAIN: [], VALIDATION: [], GATE: [], TEST: []}
    held: dict[str, list[int]] = {}
    for i, kind, split in zip(ids, kinds, splits):
        if split in HELD_OUT:
            held.setdefault(str(kind), []).append(int(i))
        elif split in (TRAIN, VALIDATION):
            out[split].append(int(i))
    rng = np.random.default_rng(seed)
    for kind in sorted(held):
        chosen = sorted(held[kind])
        order = [chosen[k] for k in rng.permutation(len(chosen))]
        half = len(order) // 2
        out[GATE] += order[:half]
        out[TEST] += order[half:]
    return {name: sorted(values) for name, values in out.items()}


def task_split(ids: Sequence[int], train: float, validation: float) -> dict[int, str]:
    """Split label per task repeat id, in order of execution (module docstring)."""
    ids = sorted(int(i) for i in ids)
    n = len(ids)
    n_train = max(1, int(round(train * n)))
    n_val = max(1, int(round(validation * n)))
    if n_train + n_val >= n:
        raise PipelineError("split", f"{n} task repeats cannot be split into training "
                                     f"({n_train}), validation ({n_val}) and test repeats")
    return {i: TRAIN if k < n_train else VALIDATION if k < n_train + n_val else TEST
            for k, i in enumerate(ids)}


def task_repeats(trajectories: Sequence[Any], ids: Sequence[int]) -> list[Any]:
    """The repeats (objects with ``trajectory_id``) whose ids the split stage put in one split,
    in order of execution; PipelineError if the bag lacks one of them."""
    by_id = {int(t.trajectory_id): t for t in trajectories}
    missing = sorted(set(int(i) for i in ids) - set(by_id))
    if missing:
        raise PipelineError("evaluate", f"the task bag lacks the repeats "
                                        f"{', '.join(map(str, missing))} of the split")
    return [by_id[i] for i in sorted(int(i) for i in ids)]
