"""Identification by gradient descent on the inverse-dynamics loss L_ID (paper 002 eq. 2).

Batch mode shuffles the training samples each epoch (paper §4.1.1, Table 1); online mode feeds
sequential batches of 256 without shuffling and records the NMSE on the whole data set after
every batch (paper §4.1.2, Fig. 1). NMSE per joint is the mean squared torque error divided by
the variance of the measured torque of that joint.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

import numpy as np
import torch

from diffnea_ros.consistency import ConsistencyReport, check_consistency
from diffnea_ros.errors import DataError
from diffnea_ros.learnable import LearnableDynamics, RegressorCache
from diffnea_ros.model import RigidBodyModel

ONLINE_BATCH = 256   # paper 002 §4.1.2
Progress = Callable[[Iterable], Iterable]


@dataclass
class Samples:
    """Joint-space samples (N, dof) as tensors: q, qd, qdd and the measured torque tau."""

    q: torch.Tensor
    qd: torch.Tensor
    qdd: torch.Tensor
    tau: torch.Tensor

    @classmethod
    def from_arrays(cls, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, tau: np.ndarray,
                    dtype: torch.dtype = torch.float64) -> "Samples":
        arrays = [np.asarray(x, dtype=float) for x in (q, qd, qdd, tau)]
        if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 2:
            raise DataError(f"q, qd, qdd, tau must share one (N, dof) shape, got "
                            f"{[a.shape for a in arrays]}")
        if not all(np.all(np.isfinite(a)) for a in arrays):
            raise DataError("identification samples contain NaN or Inf")
        return cls(*(torch.as_tensor(a, dtype=dtype) for a in arrays))

    def __len__(self) -> int:
        return int(self.q.shape[0])

    def subset(self, index: torch.Tensor) -> "Samples":
        return Samples(self.q[index], self.qd[index], self.qdd[index], self.tau[index])


def nmse(predicted: torch.Tensor, measured: torch.Tensor) -> np.ndarray:
    """Per-joint normalised MSE: mean((pred - tau)²) / var(tau)."""
    error = ((predicted - measured) ** 2).mean(dim=0)
    variance = measured.var(dim=0, unbiased=False).clamp_min(1e-12)
    return (error / variance).detach().cpu().double().numpy()


@torch.no_grad()
def evaluate_nmse(dynamics: torch.nn.Module, samples: Samples, chunk: int = 8192,
                  cache: Optional[RegressorCache] = None) -> np.ndarray:
    """NMSE per joint of ``dynamics(q, qd, qdd)`` against the measured torques (through the
    regressor ``cache`` of a LearnableDynamics when given)."""
    if cache is not None:
        predicted = dynamics.predict_from_regressor(cache.y, cache.fixed, samples.qd)
    else:
        predicted = torch.cat([dynamics(samples.q[i:i + chunk], samples.qd[i:i + chunk],
                                        samples.qdd[i:i + chunk])
                               for i in range(0, len(samples), chunk)])
    return nmse(predicted, samples.tau)


@dataclass
class IdentificationConfig:
    parametrisation: str = "cov"
    epochs: int = 30
    batch_size: int = 256
    learning_rate: float = 1e-2
    friction: bool = False
    offset: bool = False      # also a constant torque offset per joint
    online: bool = False
    seed: int = 0
    stop_nmse: Optional[float] = None      # stop once every joint's training NMSE <= this
    max_minutes: Optional[float] = None
    learnable_links: Optional[tuple[str, ...]] = None
    use_regressor: bool = True   # cache the regressor once (exact, much faster epochs)


@dataclass
class IdentificationResult:
    dynamics: LearnableDynamics
    config: IdentificationConfig
    nmse_train_before: np.ndarray
    nmse_train_after: np.ndarray
    nmse_heldout_before: Optional[np.ndarray]
    nmse_heldout_after: Optional[np.ndarray]
    epochs: int
    epochs_to_threshold: Optional[int]
    seconds: float
    consistency: ConsistencyReport
    history: list[dict[str, Any]] = field(default_factory=list)
    online_curve: list[dict[str, Any]] = field(default_factory=list)
    diverged: bool = False    # the loss became NaN/Inf; the parameters are the last with a finite loss


def _batches(n: int, batch: int, shuffle: bool, generator: torch.Generator) -> list[torch.Tensor]:
    order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
    return list(order.split(batch))


def consistency_of(dynamics: LearnableDynamics) -> ConsistencyReport:
    inertials = dynamics.inertials()
    index = dynamics.link_index
    return check_consistency(inertials.mass[index].detach(), inertials.com[index].detach(),
                             inertials.inertia[index].detach(), names=list(dynamics.learnable_links))


def identify(model: RigidBodyModel, train: Samples, heldout: Optional[Samples] = None,
             config: IdentificationConfig = IdentificationConfig(),
             progress: Optional[Progress] = None) -> IdentificationResult:
    """Learn the inertials (and damping, friction) of ``model`` from ``train`` with Adam on L_ID.

    Returns the learned :class:`LearnableDynamics`, NMSE per joint before and after on the
    training and held-out samples, the epochs used (and the first epoch at which every joint's
    training NMSE reached ``config.stop_nmse``), and the consistency of the result.
    """
    if len(train) == 0:
        raise DataError("no training samples")
    if train.q.dtype != model.dtype:
        raise DataError(f"samples are {train.q.dtype} but the model is {model.dtype}; "
                        f"convert one of them")
    generator = torch.Generator().manual_seed(config.seed)
    dynamics = LearnableDynamics(model, config.parametrisation, config.learnable_links,
                                 friction=config.friction, offset=config.offset)
    learnable = [p for p in dynamics.parameters() if p.requires_grad]
    optimiser = torch.optim.Adam(learnable, lr=config.learning_rate)
    cache = (dynamics.regressor_cache(train.q, train.qd, train.qdd)
             if config.use_regressor else None)
    held_cache = (dynamics.regressor_cache(heldout.q, heldout.qd, heldout.qdd)
                  if config.use_regressor and heldout is not None else None)

    def predict(part: Samples, index: torch.Tensor) -> torch.Tensor:
        if cache is None:
            return dynamics(part.q, part.qd, part.qdd)
        return dynamics.predict_from_regressor(cache.y[index], cache.fixed[index], part.qd)

    def train_nmse() -> np.ndarray:
        return evaluate_nmse(dynamics, train, cache=cache)

    before_train = train_nmse()
    before_heldout = evaluate_nmse(dynamics, heldout, cache=held_cache) if heldout is not None else None
    batch = ONLINE_BATCH if config.online else config.batch_size
    start = time.monotonic()
    history: list[dict[str, Any]] = []
    curve: list[dict[str, Any]] = []
    reached: Optional[int] = None
    if config.stop_nmse is not None and np.all(before_train <= config.stop_nmse):
        reached = 0
    epochs = range(1, config.epochs + 1) if reached is None else range(0)
    epoch = 0
    diverged = False
    last_good = [p.detach().clone() for p in learnable]
    for epoch in (progress(epochs) if progress is not None else epochs):
        for index in _batches(len(train), batch, shuffle=not config.online, generator=generator):
            part = train.subset(index)
            optimiser.zero_grad(set_to_none=True)
            loss = ((predict(part, index) - part.tau) ** 2).sum(dim=1).mean()
            if not torch.isfinite(loss):
                diverged = True   # e.g. NoStr's mass through zero (com = h / m)
                with torch.no_grad():   # back to the last parameters with a finite loss
                    for p, good in zip(learnable, last_good):
                        p.copy_(good)
                break
            last_good = [p.detach().clone() for p in learnable]
            loss.backward()
            optimiser.step()
            if config.online:
                seen = (curve[-1]["samples"] if curve else 0) + len(index)
                curve.append({"samples": seen, "nmse": train_nmse().tolist()})
        if diverged:
            break
        epoch_nmse = train_nmse()
        history.append({"epoch": epoch, "train_nmse": epoch_nmse.tolist(),
                        "seconds": time.monotonic() - start})
        if config.stop_nmse is not None and reached is None and np.all(epoch_nmse <= config.stop_nmse):
            reached = epoch
            break
        if config.max_minutes is not None and time.monotonic() - start > 60.0 * config.max_minutes:
            break
    return IdentificationResult(
        dynamics=dynamics, config=config, nmse_train_before=before_train,
        nmse_train_after=train_nmse(), nmse_heldout_before=before_heldout,
        nmse_heldout_after=(evaluate_nmse(dynamics, heldout, cache=held_cache)
                            if heldout is not None else None),
        epochs=epoch, epochs_to_threshold=reached, seconds=time.monotonic() - start,
        consistency=consistency_of(dynamics), history=history, online_curve=curve,
        diverged=diverged)
