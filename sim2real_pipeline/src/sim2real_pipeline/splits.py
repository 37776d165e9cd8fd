"""Which trajectory is used for what: one split per bag, fixed before any stage learns.

Random trajectories follow panda_pairs' data set split (paper 000 §V: joint-space moves
80 % training / 15 % validation / 5 % test, the Cartesian moves a second test set), seeded.
Task repeats are split in order of execution: the first ``train`` fraction makes the kernels,
the next ``validation`` fraction is the acceptance gate's, the rest is the test.
Identification, Realeasy and the kernels learn on training trajectories only; the acceptance gate
decides on validation trajectories only; the report's figures are on the test trajectories
(test and Cartesian for the random moves) only.
"""
from __future__ import annotations

from typing import Any, Sequence

from sim2real_pipeline.errors import PipelineError

TRAIN, VALIDATION, TEST = "train", "validation", "test"
HELD_OUT = ("test", "cartesian")        # panda_pairs data set splits reported as held out


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
