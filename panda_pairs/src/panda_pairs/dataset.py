"""The residual-learning data set (paper 000 §IV-B and §V).

Pairs are aligned by start-point detection, normalised by the joint limits and split by
trajectory: the joint-space moves (single and multi joint) 80 % training, 15 % validation, 5 %
test ("Of this data set, 80% were used for training, 15% for validation, and 5% for testing"),
the Cartesian linear moves form the separate generalisation test set ('cartesian').

Stored as an npz of plain arrays, readable with ``np.load(path, allow_pickle=False)``.
"""
from __future__ import annotations

import zipfile
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

from panda_pairs.alignment import Progress, align_all
from panda_sim2real import ConfigError, JointLimits, KINDS
from panda_pairs.errors import BagError
from panda_pairs.normalisation import JointLimitScaler
from panda_pairs.pair_bag import PairRecording
from sim2real_checks import atomic_path

CARTESIAN = "cartesian"
DATA_KINDS = KINDS
JOINT_KINDS = tuple(k for k in KINDS if k != CARTESIAN)
SPLITS = ("train", "validation", "test", CARTESIAN)
FRACTIONS = (0.80, 0.15, 0.05)   # train, validation, test (paper 000 §V)
SCALER_PREFIX = "scaler_"
_REQUIRED = ("sim", "real", "offsets", "trajectory_ids", "kinds", "split", "joint_names",
             "rate", "label")


def split_counts(n: int, fractions: Sequence[float] = FRACTIONS) -> tuple[int, int, int]:
    """(train, validation, test) sizes for ``n`` joint-space trajectories; with n >= 3 the
    validation and test sets get at least one trajectory each."""
    n_val = int(np.floor(fractions[1] * n + 0.5))
    n_test = int(np.floor(fractions[2] * n + 0.5))
    if n >= 3:
        n_val, n_test = max(n_val, 1), max(n_test, 1)
    else:
        n_val = n_test = 0
    return n - n_val - n_test, n_val, n_test


def check_fractions(fractions: Sequence[float]) -> tuple[float, float, float]:
    """(train, validation, test) fractions: three positive numbers that sum to 1."""
    values = tuple(float(f) for f in fractions)
    if len(values) != 3 or not all(np.isfinite(values)) or min(values) <= 0.0 \
            or abs(sum(values) - 1.0) > 1e-9:
        raise ConfigError(f"split fractions must be three positive numbers (train, validation, "
                          f"test) that sum to 1, got {list(fractions)}")
    return values  # type: ignore[return-value]


def assign_splits(kinds: Sequence[str], seed: int = 0,
                  fractions: Sequence[float] = FRACTIONS) -> np.ndarray:
    """Split label per trajectory: joint-space ones shuffled (seeded) into train/validation/test
    by ``fractions`` (default the paper's 80/15/5), Cartesian ones 'cartesian'."""
    split = np.array([CARTESIAN if k == CARTESIAN else "" for k in kinds], dtype="<U10")
    joint = np.flatnonzero(split == "")
    n_train, n_val, _ = split_counts(len(joint), check_fractions(fractions))
    order = joint[np.random.default_rng(seed).permutation(len(joint))]
    split[order[:n_train]] = "train"
    split[order[n_train:n_train + n_val]] = "validation"
    split[order[n_train + n_val:]] = "test"
    return split


@dataclass
class Dataset:
    """Normalised aligned pairs, concatenated: trajectory i is rows offsets[i]:offsets[i+1]."""

    sim: np.ndarray              # (sum T, 3 dof) float32, normalised
    real: np.ndarray             # (sum T, 3 dof) float32, normalised
    offsets: np.ndarray          # (n + 1,) int64
    trajectory_ids: np.ndarray   # (n,) int64
    kinds: np.ndarray            # (n,) unicode
    split: np.ndarray            # (n,) unicode: train | validation | test | cartesian
    shifts: np.ndarray           # (n,) float64: detected real-robot delay [s]
    scaler: JointLimitScaler
    joint_names: tuple[str, ...]
    rate: float
    label: str
    skipped_pairs: int = 0
    skipped_messages: int = 0

    def __len__(self) -> int:
        return int(self.trajectory_ids.shape[0])

    def counts(self) -> dict[str, int]:
        """Number of trajectories per split (all four splits, zeros included)."""
        return {s: int(np.count_nonzero(self.split == s)) for s in SPLITS}

    def summary(self) -> dict:
        """The figures the ``dataset`` tool prints and writes as JSON."""
        return {"label": self.label, "rate": self.rate, "trajectories": len(self),
                "samples": int(self.offsets[-1]), "splits": self.counts(),
                "skipped_pairs": self.skipped_pairs, "skipped_messages": self.skipped_messages}

    def trajectories(self, split: Union[str, Sequence[str], None] = None,
                     normalised: bool = True) -> list[tuple[np.ndarray, np.ndarray]]:
        """(sim, real) arrays of shape (T, 3 dof) of the trajectories in ``split`` (a name, a
        list of names, or None for all), normalised or in physical units."""
        wanted = SPLITS if split is None else ((split,) if isinstance(split, str) else tuple(split))
        unknown = [s for s in wanted if s not in SPLITS]
        if unknown:
            raise ValueError(f"unknown split(s) {unknown}; choose from {SPLITS}")
        return [self.trajectory(int(i), normalised)
                for i in np.flatnonzero(np.isin(self.split, wanted))]

    def trajectory(self, index: int, normalised: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(sim, real) of shape (T, 3 dof) of trajectory ``index`` (rows offsets[index] to
        offsets[index + 1]), normalised or in physical units."""
        a, b = int(self.offsets[index]), int(self.offsets[index + 1])
        sim, real = self.sim[a:b], self.real[a:b]
        if not normalised:
            sim, real = self.scaler.inverse_transform(sim), self.scaler.inverse_transform(real)
        return sim, real

    def save(self, path: str) -> None:
        """Write a compressed npz without pickled objects (atomically: temp file, then rename)."""
        arrays = {
            "sim": self.sim.astype(np.float32), "real": self.real.astype(np.float32),
            "offsets": self.offsets.astype(np.int64),
            "trajectory_ids": self.trajectory_ids.astype(np.int64),
            "kinds": np.asarray(self.kinds, dtype=str), "split": np.asarray(self.split, dtype=str),
            "shifts": self.shifts.astype(np.float64),
            "joint_names": np.array(self.joint_names, dtype=str),
            "rate": np.array(float(self.rate)), "label": np.array(str(self.label)),
            "skipped_pairs": np.array(int(self.skipped_pairs)),
            "skipped_messages": np.array(int(self.skipped_messages)),
        }
        arrays.update({SCALER_PREFIX + k: v for k, v in self.scaler.to_arrays().items()})
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)

    @classmethod
    def load(cls, path: str) -> "Dataset":
        """Read an npz written by :meth:`save`; ConfigError (one line) if missing or corrupt."""
        try:
            npz = np.load(path, allow_pickle=False)
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise ConfigError(f"data set {path} is a single array, not an npz archive")
            with npz:
                files = set(npz.files)
                missing = [k for k in _REQUIRED if k not in files]
                scaler_keys = [k for k in files if k.startswith(SCALER_PREFIX)]
                if missing or not scaler_keys:
                    what = ", ".join(missing + ([] if scaler_keys else [SCALER_PREFIX + "*"]))
                    raise ConfigError(f"data set {path} lacks the array(s) {what}")
                a = {k: npz[k] for k in files}
        except ConfigError:
            raise
        except FileNotFoundError as exc:
            raise ConfigError(f"data set not found: {path}") from exc
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise ConfigError(f"cannot read data set {path}: not an npz or corrupt ({detail})") from exc
        scaler = JointLimitScaler.from_arrays(
            {k[len(SCALER_PREFIX):]: v for k, v in a.items() if k.startswith(SCALER_PREFIX)})
        n = a["trajectory_ids"].shape[0]
        offsets = a["offsets"].astype(np.int64)
        width = len(scaler.lower)
        consistent = (
            a["sim"].ndim == 2 and a["sim"].shape == a["real"].shape and a["sim"].shape[1] == width
            and offsets.shape == (n + 1,) and a["kinds"].shape == (n,) and a["split"].shape == (n,)
            and (n == 0 or (offsets[0] == 0 and np.all(np.diff(offsets) >= 0)))
            and offsets[-1] == a["sim"].shape[0] and np.all(np.isin(a["split"], SPLITS)))
        if not consistent:
            raise ConfigError(f"data set {path} is inconsistent (array shapes, offsets or splits)")
        shifts = a["shifts"].astype(float) if "shifts" in a else np.full(n, np.nan)
        return cls(sim=a["sim"], real=a["real"], offsets=offsets,
                   trajectory_ids=a["trajectory_ids"].astype(np.int64),
                   kinds=a["kinds"].astype(str), split=a["split"].astype(str), shifts=shifts,
                   scaler=scaler, joint_names=tuple(str(x) for x in a["joint_names"].reshape(-1)),
                   rate=float(a["rate"]), label=str(a["label"]),
                   skipped_pairs=int(a.get("skipped_pairs", 0)),
                   skipped_messages=int(a.get("skipped_messages", 0)))


def split_of(dataset: Dataset) -> dict[int, str]:
    """Trajectory id -> split of a data set (to give another data set of the same trajectories
    the same split, :func:`build_dataset` ``splits``)."""
    return {int(t): str(s) for t, s in zip(dataset.trajectory_ids, dataset.split)}


def build_dataset(recording: PairRecording, limits: JointLimits, seed: int = 0,
                  rate: float = 100.0, pre: float = 0.3,
                  progress: Optional[Progress] = None,
                  splits: Optional[dict[int, str]] = None,
                  fractions: Sequence[float] = FRACTIONS) -> Dataset:
    """Align, normalise and split the pairs of a recording (paper 000 §IV-B, §V).

    Only kinds single/multi/cartesian enter the data set (others, e.g. the work cycle's 'task'
    repeats, are left out); pairs that cannot be aligned are skipped and counted
    (``skipped_pairs``). ``splits`` (trajectory id -> split, e.g. :func:`split_of` another data
    set of the same bag's trajectories) replaces the seeded split; a trajectory it does not name
    is left out and counted as skipped; otherwise ``fractions`` split the joint-space moves
    (:func:`assign_splits`). Raises BagError if there is no such pair or none can be aligned
    (or named).
    """
    if tuple(limits.joint_names) != tuple(recording.joint_names):
        raise BagError(f"bag {recording.path} was read for joints {recording.joint_names}, "
                       f"the limits are for {limits.joint_names}")
    if not any(p.kind in DATA_KINDS for p in recording.pairs):
        raise BagError(f"bag {recording.path} has no pair of the data-set kinds "
                       f"{list(DATA_KINDS)}; its pairs are {recording.kinds()}")
    result = align_all(recording.pairs, rate=rate, pre=pre, kinds=DATA_KINDS, progress=progress)
    if not result.aligned:
        raise BagError(f"bag {recording.path}: none of its {len(result.skipped)} data-set "
                       f"trajectory pairs could be aligned")
    aligned, skipped = list(result.aligned), len(result.skipped)
    if splits is not None:
        named = [p for p in aligned if p.trajectory_id in splits]
        skipped += len(aligned) - len(named)
        aligned = named
        if not aligned:
            raise BagError(f"bag {recording.path}: none of its aligned trajectories is named by "
                           f"the given split")
        unknown = sorted({splits[p.trajectory_id] for p in aligned} - set(SPLITS))
        if unknown:
            raise ConfigError(f"unknown split(s) {unknown}; choose from {SPLITS}")
    scaler = JointLimitScaler.from_limits(limits)
    lengths = np.array([len(p) for p in aligned], dtype=np.int64)
    kinds = [p.kind for p in aligned]
    split = (np.array([splits[p.trajectory_id] for p in aligned], dtype="<U10")
             if splits is not None else assign_splits(kinds, seed, fractions))
    return Dataset(
        sim=scaler.transform(np.concatenate([p.sim for p in aligned])).astype(np.float32),
        real=scaler.transform(np.concatenate([p.real for p in aligned])).astype(np.float32),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        trajectory_ids=np.array([p.trajectory_id for p in aligned], dtype=np.int64),
        kinds=np.array(kinds, dtype=str), split=split,
        shifts=np.array([p.shift for p in aligned], dtype=float),
        scaler=scaler, joint_names=tuple(limits.joint_names), rate=float(rate),
        label=recording.label, skipped_pairs=skipped,
        skipped_messages=recording.skipped_messages)
