"""Where the learning tools read their data from: a data set (``.npz``, see
:mod:`panda_pairs.dataset`) or a pair bag (``.bag``, also a recording split into several files
or a folder holding one, :mod:`panda_pairs.bag_set`), which is aligned and split on the fly
exactly as the ``dataset`` tool would (paper 000 §IV-B)."""
from __future__ import annotations

import os
from typing import Optional

from panda_pairs.alignment import Progress
from panda_pairs.dataset import Dataset, build_dataset
from panda_sim2real import ConfigError, JointLimits
from panda_pairs.pair_bag import read_pairs

DATA_SUFFIXES = (".npz", ".bag")


def load_dataset(path: str, limits: Optional[JointLimits] = None, seed: int = 0,
                 rate: float = 100.0, progress: Optional[Progress] = None) -> Dataset:
    """The data set in ``path``: an npz is loaded, a bag (or a folder of split bags) is read
    with ``limits`` (default: the Panda's) and built with ``seed`` and ``rate``. ConfigError/BagError
    (one line) otherwise."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".npz":
        return Dataset.load(path)
    if suffix == ".bag" or os.path.isdir(path):
        limits = limits if limits is not None else JointLimits.from_yaml()
        return build_dataset(read_pairs(path, limits.joint_names), limits, seed=seed, rate=rate,
                             progress=progress)
    raise ConfigError(f"{path}: expected a data set (.npz), a pair bag (.bag) or a folder of "
                      f"split pair bags")
