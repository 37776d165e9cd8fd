"""Training of the Realeasy networks (paper 000 §IV-A loss, §IV-D training).

The networks learn the residual NN(X) so that X + NN(X) matches the real trajectory Y, by
minimising the MSrE of eq. (9)-(10) (:func:`realeasy_ros.networks.msre_loss`) with Adam.

Windowing (§IV-D): the recorded trajectories rest at their start and end. Trained on whole
trajectories, an LSTM would learn *after how many steps* the robot comes to rest instead of
how the robot behaves. So every batch is made of random sub-intervals ("windows") of random
training trajectories: the shortest trajectory of the batch fixes the window length (a fraction
of its length), and a window of that length is drawn from each trajectory of the batch. The
window's position inside its trajectory is random, so the number of steps since the start tells
the network nothing; and as batches differ in their shortest trajectory, training mixes longer
and shorter windows.

Warm-up (Algorithm 2): the realtime network publishes the simulator's state unchanged for the
first T_Warmup of a stream while its hidden state fills, so the loss ignores the first
``warmup_steps`` steps of every window (and of every validation trajectory): their output is
never used. The precise (bidirectional) network has no warm-up.

Presets (:data:`PRESETS`): ``tuned``, the defaults of :class:`TrainingConfig`, are the settings
that did best on the reality stand-in; ``paper`` are paper 000's (§IV-C network, eq. (9)-(10)
with equal weights, §IV-D windowing), with this package's original choices where the paper gives
no value.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import torch

from panda_pairs import Dataset
from panda_sim2real import ConfigError
from realeasy_ros.networks import ARCHITECTURES, PRECISE, REALTIME, ModelSpec, build_network, \
    channel_weights, msre_loss
from realeasy_ros.model import RealeasyModel

DEVICES = ("auto", "cpu", "cuda")
EQUAL, GAP = "equal", "gap"
WEIGHTINGS = (EQUAL, GAP)   # loss column weighting: paper 000 (equal) or by the sim-real gap
GAP_FLOOR = 1e-3
MIN_LOSS_STEPS = 5    # a trajectory must have this many steps after the warm-up to be used

EpochCallback = Callable[[dict], None]   # called with each history record
LogCallback = Callable[[str], None]


@dataclass(frozen=True)
class TrainingConfig:
    """Hyper-parameters of one training run. The defaults are the ``tuned`` preset (see
    :data:`PRESETS`): the settings that did best on the reality stand-in (realeasy_ros/README.md,
    "Results"); ``PRESETS["paper"]`` holds paper 000's. Network: two LSTM layers (§IV-C), hidden
    64 where the paper has 21, no input dropout where the paper has some. Loss: the MSrE of
    eq. (9)-(10) with each column weighted by 1 / the simulation's gap there (``weighting``
    gap) where the paper weights all columns equally (§V). Windowing as in §IV-D. The
    optimiser (Adam, learning rate, decay, clipping, early stopping) is not given in the paper.
    """

    architecture: str = REALTIME
    input_size: int = 21                 # 3 x dof: [q, qd, tau]
    hidden_size: int = 64                # paper: 21 (§IV-C)
    num_layers: int = 2                  # §IV-C
    dropout: float = 0.0                 # on the input; paper: some (§IV-C), preset paper 0.1
    epochs: int = 400                    # maximum; early stopping usually ends sooner
    batches_per_epoch: int = 50
    batch_size: int = 32
    window_fraction: float = 0.8         # window length / shortest trajectory of the batch
    min_window: int = 50                 # steps (capped at the shortest trajectory)
    learning_rate: float = 3e-3          # Adam
    lr_decay: Optional[float] = 0.5      # factor of ReduceLROnPlateau on the validation loss
    lr_decay_patience: int = 5           # epochs without improvement before the decay
    patience: int = 30                   # early stopping: epochs without improvement
    grad_clip: Optional[float] = 1.0     # max. gradient norm (None: no clipping)
    seed: int = 0
    position_weight: float = 1.0
    velocity_weight: float = 1.0
    torque_weight: float = 1.0
    weighting: str = GAP                 # equal (paper) | gap: columns weighted by 1 / sim-real gap
    warmup_seconds: float = 0.2          # T_Warmup of Algorithm 2 (realtime network only)
    device: str = "auto"                 # auto: cuda when available, else cpu
    max_minutes: Optional[float] = None  # wall-clock budget; training stops early when spent

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ConfigError(f"architecture must be one of {', '.join(ARCHITECTURES)}, "
                              f"got {self.architecture!r}")
        if self.weighting not in WEIGHTINGS:
            raise ConfigError(f"weighting must be one of {', '.join(WEIGHTINGS)}, "
                              f"got {self.weighting!r}")
        if self.device not in DEVICES:
            raise ConfigError(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        for name in ("input_size", "hidden_size", "num_layers", "epochs", "batches_per_epoch",
                     "batch_size", "min_window", "patience", "lr_decay_patience"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")
        checks = [
            ("dropout", self.dropout, lambda v: 0.0 <= v < 1.0, "lie in [0, 1)"),
            ("window_fraction", self.window_fraction, lambda v: 0.0 < v <= 1.0, "lie in (0, 1]"),
            ("learning_rate", self.learning_rate, lambda v: v > 0.0, "be positive"),
            ("warmup_seconds", self.warmup_seconds, lambda v: v >= 0.0, "be non-negative"),
            ("lr_decay", self.lr_decay, lambda v: 0.0 < v < 1.0, "lie in (0, 1)"),
            ("grad_clip", self.grad_clip, lambda v: v > 0.0, "be positive"),
            ("max_minutes", self.max_minutes, lambda v: v > 0.0, "be positive"),
        ]
        optional = {"lr_decay", "grad_clip", "max_minutes"}
        for name, value, ok, rule in checks:
            if value is None and name in optional:
                continue
            if not _is_real(value) or not math.isfinite(value) or not ok(float(value)):
                raise ConfigError(f"{name} must {rule}, got {value!r}")
        self.loss_weights()   # validates the channel weights

    def spec(self) -> ModelSpec:
        return ModelSpec(self.architecture, self.input_size, self.hidden_size, self.num_layers,
                         float(self.dropout))

    def loss_weights(self) -> torch.Tensor:
        """Column weights of the loss, (input_size,), in the [q, qd, tau] layout."""
        if self.input_size % 3:
            raise ConfigError(f"input_size must be 3 x dof ([q, qd, tau]), got {self.input_size}")
        values = (self.position_weight, self.velocity_weight, self.torque_weight)
        if not all(_is_real(v) and math.isfinite(v) for v in values):
            raise ConfigError(f"loss weights must be finite numbers, got {values}")
        try:
            return channel_weights(*values, dof=self.input_size // 3)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc

    def warmup_steps(self, rate: float) -> int:
        """T_Warmup in steps at ``rate`` Hz (0 for the precise network, which has none)."""
        if self.architecture == PRECISE:
            return 0
        return int(round(self.warmup_seconds * rate))

    def resolve_device(self) -> torch.device:
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ConfigError("device cuda requested, but torch sees no CUDA device")
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def gap_weights(trajectories: Sequence[tuple[np.ndarray, np.ndarray]],
                floor: float = GAP_FLOOR) -> torch.Tensor:
    """Column weights 1 / MSE(Y - X) over the (normalised) training trajectories: the MSrE then
    measures each column's error relative to the simulation's own gap there, so a joint whose
    torques span a small part of the normalised range (the Panda's wrist, joint 1 at rest) counts
    as much as one whose gap is large. Gaps below ``floor`` x the largest are raised to it."""
    gap = np.mean(np.concatenate([(y - x) ** 2 for x, y in trajectories]), axis=0)
    gap = np.maximum(gap, floor * gap.max())
    if not np.all(np.isfinite(gap)) or gap.max() <= 0.0:
        raise ConfigError("the training data show no gap between simulation and reality to "
                          "weight the loss by (use weighting 'equal')")
    return torch.as_tensor(1.0 / gap, dtype=torch.float32)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


TUNED, PAPER = "tuned", "paper"
DEFAULT_PRESET = TUNED
PRESETS: Mapping[str, TrainingConfig] = MappingProxyType({
    # The settings chosen on the reality stand-in (realeasy_ros/README.md, "Results" and
    # "Choices beyond the paper"): hidden 64 instead of the paper's 21 (§IV-C), no input
    # dropout (it cost accuracy there), the MSrE of eq. (9)-(10) with each column weighted by
    # 1 / the simulation's gap there (so the wrist and joint 1 count as much as the shoulder),
    # batch 32, Adam 3e-3 halved after 5 epochs without improvement, early stopping after 30,
    # at most 400 epochs. The defaults of TrainingConfig.
    TUNED: TrainingConfig(),
    # Paper 000's settings: two LSTM layers on 21-dimensional vectors ("the matrix-vector
    # multiplications in (2)-(5) are 21-dimensional", §IV-C), dropout on the input (§IV-C),
    # the MSrE of eq. (9)-(10) with positions, velocities and torques weighted equally (§V),
    # windows of a fraction of the batch's shortest trajectory (§IV-D). What the paper does not
    # state (dropout rate, window fraction, optimiser, learning rate, batch size, epochs, early
    # stopping) is this package's original choice: input dropout 0.1, window 0.8, Adam 3e-3 at
    # a constant rate, batch 16, at most 200 epochs, early stopping after 15.
    PAPER: TrainingConfig(hidden_size=21, dropout=0.1, weighting=EQUAL, batch_size=16,
                          lr_decay=None, patience=15, epochs=200),
})


def preset_config(name: str) -> TrainingConfig:
    """The :data:`PRESETS` entry ``name``; ConfigError (one line) for an unknown one."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"preset must be one of {', '.join(PRESETS)}, got {name!r}") from None


_NOT_PRESET = ("architecture", "seed", "device", "max_minutes")


def preset_overrides(config: TrainingConfig, name: str) -> dict[str, Any]:
    """The fields of ``config`` that differ from preset ``name`` (architecture, seed, device and
    time budget, which no preset chooses, left out): what was set on top of the preset."""
    base = preset_config(name).to_dict()
    return {key: value for key, value in config.to_dict().items()
            if key not in _NOT_PRESET and value != base[key]}


def window_length(lengths: Sequence[int], window_fraction: float, min_window: int) -> int:
    """Window length of a batch (§IV-D): W = max(min_window, floor(window_fraction * L_min)),
    capped at L_min, the length of the batch's shortest trajectory."""
    shortest = int(min(lengths))
    return min(shortest, max(int(min_window), int(math.floor(window_fraction * shortest))))


class WindowSampler:
    """Random batches of equally long windows of the training trajectories (§IV-D).

    Each batch draws ``batch_size`` trajectories (with replacement only if there are fewer
    trajectories than that), fixes the window length by :func:`window_length` from the shortest
    of them, and takes a window of that length at a uniformly random start from each. Random
    positions keep the network from learning when the robot rests (trajectories begin and end
    at rest); the varying shortest trajectory mixes long and short windows.
    """

    def __init__(self, trajectories: Sequence[tuple[np.ndarray, np.ndarray]], batch_size: int,
                 window_fraction: float = 0.8, min_window: int = 50, seed: int = 0) -> None:
        if not trajectories:
            raise ConfigError("no trajectories to draw windows from")
        self.trajectories = [(np.asarray(s, dtype=np.float32), np.asarray(r, dtype=np.float32))
                             for s, r in trajectories]
        self.lengths = np.array([len(s) for s, _ in self.trajectories], dtype=np.int64)
        if np.any(self.lengths < 1):
            raise ConfigError("cannot draw windows from an empty trajectory")
        self.batch_size = int(batch_size)
        self.window_fraction = float(window_fraction)
        self.min_window = int(min_window)
        self.rng = np.random.default_rng(seed)

    def draw(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(trajectory indices (B,), window starts (B,), window length W) of one batch."""
        n = len(self.trajectories)
        chosen = self.rng.choice(n, size=self.batch_size, replace=n < self.batch_size)
        length = window_length(self.lengths[chosen], self.window_fraction, self.min_window)
        starts = self.rng.integers(0, self.lengths[chosen] - length + 1)
        return chosen, starts, length

    def sample(self) -> tuple[torch.Tensor, torch.Tensor]:
        """One batch (x, y): simulated and real windows, float32 tensors (B, W, columns)."""
        chosen, starts, length = self.draw()
        x = np.stack([self.trajectories[i][0][s:s + length] for i, s in zip(chosen, starts)])
        y = np.stack([self.trajectories[i][1][s:s + length] for i, s in zip(chosen, starts)])
        return torch.from_numpy(x), torch.from_numpy(y)


@dataclass
class TrainingResult:
    """The trained model (best validation weights) and the loss history per epoch; epoch 0 is
    the untrained network."""

    model: RealeasyModel
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def metadata(self) -> dict[str, Any]:
        return self.model.metadata


def check_dataset(dataset: Dataset, config: TrainingConfig) -> None:
    """ConfigError (one line) unless ``dataset`` can train a ``config`` network."""
    where = f"data set '{dataset.label}'"
    if len(dataset) == 0:
        raise ConfigError(f"{where} is empty: it holds no trajectory")
    if dataset.sim.shape != dataset.real.shape or dataset.sim.ndim != 2:
        raise ConfigError(f"{where} is misaligned: sim {dataset.sim.shape} and real "
                          f"{dataset.real.shape} differ")
    if dataset.offsets.shape != (len(dataset) + 1,) or dataset.offsets[-1] != len(dataset.sim):
        raise ConfigError(f"{where} is inconsistent: offsets do not cover its "
                          f"{len(dataset.sim)} samples")
    width = 3 * len(dataset.joint_names)
    if width != config.input_size or dataset.sim.shape[1] != config.input_size:
        raise ConfigError(f"{where} has {len(dataset.joint_names)} joints ({dataset.sim.shape[1]} "
                          f"columns), the network needs input_size {config.input_size}")
    if tuple(dataset.scaler.joint_names) != tuple(dataset.joint_names):
        raise ConfigError(f"{where}: its scaler is for joints {list(dataset.scaler.joint_names)}, "
                          f"its data for {list(dataset.joint_names)}")
    for name, values in (("sim", dataset.sim), ("real", dataset.real)):
        bad = ~np.isfinite(values)
        if bad.any():
            raise ConfigError(f"{where} is misaligned or corrupt: {int(bad.sum())} non-finite "
                              f"{name} values")
    if not dataset.rate > 0.0:
        raise ConfigError(f"{where} has no positive rate ({dataset.rate})")
    counts = dataset.counts()
    for split in ("train", "validation"):
        if counts[split] == 0:
            raise ConfigError(f"{where} has no {split} trajectories (splits {counts})")


def _masked(batch: int, length: int, warmup: int) -> Optional[torch.Tensor]:
    """Loss mask (batch, length) hiding the first ``warmup`` steps, or None if there are none."""
    if warmup <= 0:
        return None
    mask = torch.ones(batch, length)
    mask[:, :warmup] = 0.0
    return mask


@torch.no_grad()
def validation_loss(network: torch.nn.Module, trajectories: Sequence[tuple[np.ndarray, np.ndarray]],
                    weights: torch.Tensor, warmup_steps: int,
                    device: torch.device = torch.device("cpu")) -> float:
    """MSrE over whole trajectories, one by one, in eval mode (no dropout), averaged per counted
    sample; the first ``warmup_steps`` steps of each trajectory do not count."""
    network.eval()
    total, count = 0.0, 0
    for sim, real in trajectories:
        steps = len(sim) - warmup_steps
        if steps <= 0:
            continue
        x = torch.as_tensor(sim, dtype=torch.float32, device=device)[None]
        y = torch.as_tensor(real, dtype=torch.float32, device=device)[None]
        mask = _masked(1, len(sim), warmup_steps)
        loss = msre_loss(x, y, network(x), weights, None if mask is None else mask.to(device))
        total += float(loss) * steps
        count += steps
    if count == 0:
        raise ConfigError(f"every validation trajectory is at most {warmup_steps} steps (the "
                          f"warm-up) long")
    return total / count


def train_model(dataset: Dataset, config: TrainingConfig,
                progress: Optional[EpochCallback] = None,
                log: Optional[LogCallback] = None,
                preset_name: Optional[str] = None) -> TrainingResult:
    """Train a Realeasy network on the 'train' split of ``dataset`` (§IV-D) and keep the weights
    of the epoch with the lowest validation loss (early stopping after ``config.patience``
    epochs without improvement, or when ``config.max_minutes`` are spent).

    ``progress`` is called after every epoch with its history record, ``log`` with messages.
    ``preset_name``: the :data:`PRESETS` entry ``config`` was made from; the metadata record it
    (``preset``) and the fields set on top of it (``preset_overrides``).
    Deterministic for a seed on CPU. ConfigError (one line) for unusable data.
    """
    started = time.monotonic()
    say = log or (lambda message: None)
    overrides = None if preset_name is None else preset_overrides(config, preset_name)
    check_dataset(dataset, config)
    device = config.resolve_device()
    warmup = config.warmup_steps(dataset.rate)
    shortest = warmup + MIN_LOSS_STEPS
    train_all = dataset.trajectories("train")
    train = [(s, r) for s, r in train_all if len(s) >= shortest]
    if not train:
        longest = max(len(s) for s, _ in train_all)
        raise ConfigError(f"data set '{dataset.label}': all training trajectories are shorter "
                          f"than the warm-up plus {MIN_LOSS_STEPS} steps ({shortest} steps; "
                          f"the longest has {longest})")
    if len(train) < len(train_all):
        say(f"skipping {len(train_all) - len(train)} training trajectories shorter than "
            f"{shortest} steps")
    validation = dataset.trajectories("validation")
    weights = config.loss_weights()
    if config.weighting == GAP:
        weights = weights * gap_weights(train)
    weights = weights.to(device)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        network = build_network(config.spec()).to(device)
        sampler = WindowSampler(train, config.batch_size, config.window_fraction,
                                max(config.min_window, shortest), seed=config.seed)
        optimiser = torch.optim.Adam(network.parameters(), lr=config.learning_rate)
        scheduler = (torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimiser, factor=config.lr_decay, patience=config.lr_decay_patience)
            if config.lr_decay else None)
        budget = None if config.max_minutes is None else 60.0 * config.max_minutes

        best_loss = validation_loss(network, validation, weights, warmup, device)
        best_state = _copy_state(network)
        best_epoch, best_train, stop = 0, float("nan"), None
        history = [{"epoch": 0, "train_loss": None, "validation_loss": best_loss,
                    "seconds": time.monotonic() - started}]
        for epoch in range(1, config.epochs + 1):
            network.train()
            losses = []
            for _ in range(config.batches_per_epoch):
                x, y = (t.to(device) for t in sampler.sample())
                mask = _masked(x.shape[0], x.shape[1], warmup)
                loss = msre_loss(x, y, network(x), weights,
                                 None if mask is None else mask.to(device))
                optimiser.zero_grad()
                loss.backward()
                if config.grad_clip is not None:
                    torch.nn.utils.clip_grad_norm_(network.parameters(), config.grad_clip)
                optimiser.step()
                losses.append(loss.item())
                if budget is not None and time.monotonic() - started > budget:
                    stop = f"time budget of {config.max_minutes:g} min spent in epoch {epoch}"
                    break
            train_loss = float(np.mean(losses))
            val_loss = validation_loss(network, validation, weights, warmup, device)
            record = {"epoch": epoch, "train_loss": train_loss, "validation_loss": val_loss,
                      "seconds": time.monotonic() - started}
            history.append(record)
            if progress is not None:
                progress(record)
            if not (math.isfinite(train_loss) and math.isfinite(val_loss)):
                stop = f"non-finite loss in epoch {epoch}"
            elif val_loss < best_loss:
                best_loss, best_epoch, best_train = val_loss, epoch, train_loss
                best_state = _copy_state(network)
            elif epoch - best_epoch >= config.patience and stop is None:
                stop = f"no validation improvement for {config.patience} epochs"
            if scheduler is not None and math.isfinite(val_loss):
                scheduler.step(val_loss)
            if stop is not None:
                say(f"stopped early after epoch {epoch}: {stop}")
                break

    network.load_state_dict(best_state)
    network.to("cpu").eval()
    wall = time.monotonic() - started
    metadata = {
        "architecture": config.architecture, "epochs_run": len(history) - 1,
        "best_epoch": best_epoch, "best_validation_loss": best_loss,
        "initial_validation_loss": history[0]["validation_loss"],
        "train_loss": None if math.isnan(best_train) else best_train,
        "final_train_loss": history[-1]["train_loss"],
        "stopped_early": stop, "seed": config.seed, "config": config.to_dict(),
        "preset": preset_name, "preset_overrides": overrides,
        "data_label": dataset.label, "trajectories": dataset.counts(),
        "skipped_short_trajectories": len(train_all) - len(train),
        "warmup_steps": warmup, "rate": float(dataset.rate),
        "torch_version": str(torch.__version__), "wall_seconds": wall, "device": str(device),
    }
    model = RealeasyModel(network, config.spec(), dataset.scaler, tuple(dataset.joint_names),
                          float(dataset.rate), warmup, metadata)
    return TrainingResult(model, history)


def _copy_state(network: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in network.state_dict().items()}


__all__ = ["TrainingConfig", "PRESETS", "DEFAULT_PRESET", "preset_config", "preset_overrides",
           "TrainingResult", "WindowSampler", "window_length",
           "check_dataset", "validation_loss", "train_model"]
