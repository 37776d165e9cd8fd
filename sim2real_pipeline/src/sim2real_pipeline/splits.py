"""Which trajectory is used for what: one split per bag, fixed before any stage learns.

Random trajectories follow panda_sim2real's data set split (paper 000 §V: joint-space moves
80 % training / 15 % validation / 5 % test, the Cartesian moves a second test set), seeded.
Task repeats are split in order of execution: the first ``train`` fraction makes the kernels,
the next ``validation`` fraction is the acceptance gate's, the rest is the test.
Identification, Realeasy and the kernels learn on training trajectories only; the acceptance gate
decides on validation trajectories only; the report's figures are on the test trajectories
(test and Cartesian for the random moves) only.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from sim2real_pipeline.errors import PipelineError

TRAIN, VALIDATION, TEST = "train", "validation", "test"
HELD_OUT = ("test", "cartesian")        # panda_sim2real data set splits reported as held out


def task_split(ids: Sequence[int], train: float, validation: float) -> dict[int, str]:
    """Split label per task repeat id, in order of execution (module docstring)."""
    ids = sorted(int(i) for i in ids)
    n = len(ids)
    n_train = max(1, int(round(train * n)))
    n_val = max(1, int(round(validation * n)))
    if n_train + n_val >= n:
        raise PipelineError("kernels", f"{n} task repeats cannot be split into training "
                                       f"({n_train}), validation ({n_val}) and test repeats")
    return {i: TRAIN if k < n_train else VALIDATION if k < n_train + n_val else TEST
            for k, i in enumerate(ids)}


def by_split(splits: dict[int, str], names: Sequence[str]) -> list[int]:
    """The ids whose split is one of ``names``, sorted."""
    return sorted(i for i, s in splits.items() if s in names)


def check_same(a: np.ndarray, b: np.ndarray, what: str, stage: str) -> None:
    """PipelineError unless two id/split arrays agree."""
    if a.shape != b.shape or not np.array_equal(a, b):
        raise PipelineError(stage, f"{what} differ between the data sets; the re-simulated bag "
                                   f"does not hold the same trajectories")
