"""Identification by gradient descent on the inverse-dynamics loss L_ID (paper 002 eq. 2): the
one training loop (:func:`fit`, for DiffNEA and the Table 1 baselines alike) and :func:`identify`.

Batch mode shuffles the training samples each epoch (paper §4.1.1, Table 1); online mode feeds
sequential batches of 256 without shuffling and records the NMSE on the whole data set after
every batch (paper §4.1.2, Fig. 1). NMSE per joint is the mean squared torque error divided by
the variance of the measured torque of that joint.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np
import torch

from diffnea_ros.consistency import ConsistencyReport, check_consistency
from diffnea_ros.errors import DataError
from diffnea_ros.learnable import LearnableDynamics, RegressorCache, default_learnable_links
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.plausibility import (BoundTensors, PlausibilityBounds, PlausibilityReport, bound_penalty,
                                      check_plausibility, project_into_bounds)
from diffnea_ros.prior import InertialPrior, PriorTensors, prior_penalty
from diffnea_ros.urdf import with_inertials

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


def evaluate_nmse(dynamics: torch.nn.Module, samples: Samples, chunk: int = 8192,
                  cache: Optional[RegressorCache] = None) -> np.ndarray:
    """NMSE per joint of ``dynamics(q, qd, qdd)`` against the measured torques (through the
    regressor ``cache`` of a LearnableDynamics when given)."""
    if cache is None:
        return predictor_nmse(module_predictor(dynamics, samples), samples, chunk)
    return predictor_nmse(lambda index: dynamics.predict_from_regressor(
        cache.y[index], cache.fixed[index], samples.qd[index]), samples, chunk)


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
    bounds: Optional[PlausibilityBounds] = None   # plausible masses and coms (penalty, report)
    bounds_weight: float = 1.0e4                  # weight of the bounds' penalty on L_ID
    keep_best: bool = True        # end on the epoch with the lowest final objective (fit)
    lr_decay: float = 0.1         # the rate decays along a cosine to this x learning_rate (fit)
    prior: Optional[InertialPrior] = None         # a prior on the inertials (prior.py)
    prior_weights: tuple[float, ...] = (0.0, 1e-4, 1e-3, 1e-2, 1e-1)   # tried; held-out chooses


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
    plausibility: Optional[PlausibilityReport] = None   # with config.bounds
    kept_epoch: Optional[int] = None    # the epoch whose parameters are the result
    prior_choice: Optional["PriorChoice"] = None   # with config.prior


# predict(index) -> tau (len(index), dof) of the training samples at ``index``
Predictor = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class FitConfig:
    epochs: int = 100
    batch_size: int = 256
    learning_rate: float = 1e-2
    stop_nmse: Optional[float] = 0.1    # paper 002 §4.1.1
    online: bool = False
    shuffle: bool = True                # False: the batches in the data's order every epoch
    seed: int = 0
    chunk: int = 2048                   # samples per evaluation chunk
    max_minutes: Optional[float] = None
    keep_best: bool = False             # end on the epoch with the lowest final objective
    lr_decay: float = 1.0               # the last epoch's rate / learning_rate (a cosine)


@dataclass
class FitResult:
    nmse_before: np.ndarray
    nmse_after: np.ndarray
    epochs: int
    epochs_to_threshold: Optional[int]
    seconds: float
    diverged: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)
    online_curve: list[dict[str, Any]] = field(default_factory=list)
    kept_epoch: Optional[int] = None    # with keep_best: the epoch whose parameters were kept


def module_predictor(module: torch.nn.Module, samples: Samples) -> Predictor:
    """predict(index) = module(q, qd, qdd) of the samples at ``index``."""
    return lambda index: module(samples.q[index], samples.qd[index], samples.qdd[index])


def diffnea_predictor(dynamics: LearnableDynamics, samples: Samples,
                      cache: Optional[RegressorCache] = None) -> Predictor:
    """The same torques as ``dynamics(q, qd, qdd)`` through its cached regressor (exact);
    ``cache``: one made for the samples by a LearnableDynamics of the same model and links."""
    cache = cache if cache is not None else dynamics.regressor_cache(samples.q, samples.qd, samples.qdd)
    return lambda index: dynamics.predict_from_regressor(cache.y[index], cache.fixed[index],
                                                         samples.qd[index])


@torch.no_grad()
def predicted_all(predict: Predictor, samples: Samples, chunk: int = 2048) -> torch.Tensor:
    """``predict`` on all ``samples``, ``chunk`` at a time."""
    index = torch.arange(len(samples))
    return torch.cat([predict(i).detach() for i in index.split(chunk)])


def predictor_nmse(predict: Predictor, samples: Samples, chunk: int = 2048) -> np.ndarray:
    """Per-joint NMSE of ``predict`` on all ``samples``."""
    return nmse(predicted_all(predict, samples, chunk), samples.tau)


def fit(parameters: list[torch.nn.Parameter], predict: Predictor, samples: Samples,
        config: FitConfig = FitConfig(), progress: Optional[Progress] = None,
        penalty: Optional[Callable[[float], torch.Tensor]] = None) -> FitResult:
    """Adam on L_ID = mean over a batch of ||tau - f(q, qd, qdd)||² (eq. 2), plus
    ``penalty(progress)`` when given (plausibility.py; progress = epoch / epochs, in (0, 1]),
    for ``parameters``:
    shuffled batches (``shuffle=False``: in the data's order; online: sequential batches of 256,
    the NMSE on all samples after each),
    the training NMSE of every joint after each epoch, stop at <= ``stop_nmse`` (0 epochs when
    the start already meets it) or after ``max_minutes``. A non-finite loss stops the fit
    (``diverged``) and restores the last parameters with a finite one, or with ``keep_best`` the
    kept epoch's.
    ``lr_decay``: the rate decays from ``learning_rate`` along a cosine to ``lr_decay`` times it
    in the last epoch. ``keep_best``: the parameters end as those of the epoch (the start included) with
    the lowest finite final objective, L_ID on all samples plus ``penalty(1)``, unless an epoch met
    ``stop_nmse`` (that one is kept); ``kept_epoch`` names the epoch the parameters are from."""
    if len(samples) == 0:
        raise DataError("no training samples")
    learnable = [p for p in parameters if p.requires_grad]
    optimiser = torch.optim.Adam(learnable, lr=config.learning_rate)
    schedule = (torch.optim.lr_scheduler.CosineAnnealingLR(
        optimiser, max(config.epochs - 1, 1), config.lr_decay * config.learning_rate)
        if config.lr_decay != 1.0 else None)
    generator = torch.Generator().manual_seed(config.seed)

    @torch.no_grad()
    def evaluated() -> tuple[np.ndarray, float]:
        """The training NMSE per joint and the final objective of the parameters now."""
        predicted = predicted_all(predict, samples, config.chunk)
        objective = ((predicted - samples.tau) ** 2).sum(dim=1).mean()
        if penalty is not None:
            objective = objective + penalty(1.0)
        return nmse(predicted, samples.tau), float(objective)

    before, best = evaluated()
    best = best if np.isfinite(best) else float("inf")   # any finite epoch beats a non-finite start
    kept, best_parameters = 0, [p.detach().clone() for p in learnable]
    start = time.monotonic()
    reached: Optional[int] = None
    if config.stop_nmse is not None and np.all(before <= config.stop_nmse):
        reached = 0
    history: list[dict[str, Any]] = []
    curve: list[dict[str, Any]] = []
    batch = ONLINE_BATCH if config.online else config.batch_size
    epoch, diverged = 0, False
    last_good = [p.detach().clone() for p in learnable]
    epochs = range(1, config.epochs + 1) if reached is None else range(0)
    for epoch in (progress(epochs) if progress is not None else epochs):
        order = (torch.arange(len(samples)) if config.online or not config.shuffle
                 else torch.randperm(len(samples), generator=generator))
        for index in order.split(batch):
            optimiser.zero_grad(set_to_none=True)
            loss = ((predict(index) - samples.tau[index]) ** 2).sum(dim=1).mean()
            if penalty is not None:
                loss = loss + penalty(epoch / config.epochs)
            if not torch.isfinite(loss):
                diverged = True   # back to the last parameters with a finite loss
                with torch.no_grad():
                    for p, value in zip(learnable, last_good):
                        p.copy_(value)
                break
            last_good = [p.detach().clone() for p in learnable]
            loss.backward()
            optimiser.step()
            if config.online:
                seen = (curve[-1]["samples"] if curve else 0) + len(index)
                curve.append({"samples": seen,
                              "nmse": predictor_nmse(predict, samples, config.chunk).tolist()})
        if diverged:
            break
        if schedule is not None:
            schedule.step()
        epoch_nmse, objective = evaluated()
        history.append({"epoch": epoch, "train_nmse": epoch_nmse.tolist(), "objective": objective,
                        "seconds": time.monotonic() - start})
        if objective < best:
            kept, best, best_parameters = epoch, objective, [p.detach().clone() for p in learnable]
        if config.stop_nmse is not None and np.all(epoch_nmse <= config.stop_nmse):
            reached = kept = epoch
            break
        if config.max_minutes is not None and time.monotonic() - start > 60.0 * config.max_minutes:
            break
    if config.keep_best and reached is None and kept != epoch:
        with torch.no_grad():
            for p, value in zip(learnable, best_parameters):
                p.copy_(value)
    # without keep_best a divergence leaves the last parameters with a finite loss, inside `epoch`
    return FitResult(nmse_before=before, nmse_after=predictor_nmse(predict, samples, config.chunk),
                     epochs=epoch, epochs_to_threshold=reached,
                     seconds=time.monotonic() - start, diverged=diverged, history=history,
                     online_curve=curve, kept_epoch=(kept if config.keep_best else epoch))


def consistency_of(dynamics: LearnableDynamics) -> ConsistencyReport:
    inertials = dynamics.inertials()
    index = dynamics.link_index
    return check_consistency(inertials.mass[index].detach(), inertials.com[index].detach(),
                             inertials.inertia[index].detach(), names=list(dynamics.learnable_links))


def inside_bounds(model: RigidBodyModel, links: Iterable[str], bounds: PlausibilityBounds) -> RigidBodyModel:
    """``model`` with the inertials of each bounded link of ``links`` moved into its bounds
    (:func:`~diffnea_ros.plausibility.project_into_bounds`): where the fit starts."""
    mass, com, inertia = (x.detach().cpu().numpy().copy() for x in (
        model.nominal_mass, model.nominal_com, model.nominal_inertia))
    for name in links:
        if name in bounds.links:
            i = model.body_names.index(name)
            mass[i], com[i], inertia[i] = project_into_bounds(mass[i], com[i], inertia[i], bounds.links[name])
    return RigidBodyModel(with_inertials(model.description, mass, com, inertia),
                          tuple(model.gravity.detach().cpu().numpy().tolist()), model.dtype)


@dataclass(frozen=True)
class PriorChoice:
    """The prior's weights tried, the mean over joints of each one's held-out NMSE, the one
    chosen (the lowest) and the prior's source."""

    source: str
    weights: tuple[float, ...]
    heldout_nmse_mean: tuple[float, ...]
    chosen: float

    @classmethod
    def of(cls, source: str, weights: Sequence[float], scores: Sequence[float]) -> "PriorChoice":
        """The choice among ``weights`` by their held-out ``scores``: only a finite score can win;
        DataError when none is."""
        finite = [i for i, score in enumerate(scores) if np.isfinite(score)]
        if not finite:
            raise DataError(f"every prior weight's fit has a non-finite held-out NMSE "
                            f"({list(weights)}): lower the learning rate")
        best = min(finite, key=lambda i: scores[i])
        return cls(source, tuple(weights), tuple(float(x) for x in scores), float(weights[best]))

    @property
    def chosen_index(self) -> int:
        return self.weights.index(self.chosen)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "weights": list(self.weights),
                "heldout_nmse_mean": list(self.heldout_nmse_mean), "chosen": self.chosen}


def identify(model: RigidBodyModel, train: Samples, heldout: Optional[Samples] = None,
             config: IdentificationConfig = IdentificationConfig(),
             progress: Optional[Progress] = None) -> IdentificationResult:
    """Learn the inertials (and damping, friction) of ``model`` from ``train`` with Adam on L_ID.

    Returns the learned :class:`LearnableDynamics`, NMSE per joint before and after on the
    training and held-out samples, the epochs used (and the first epoch at which every joint's
    training NMSE reached ``config.stop_nmse``), and the consistency of the result.
    With ``config.prior``: one fit per weight w of ``config.prior_weights`` (L_ID + w sum_j
    var(tau_j) R(theta), R of prior.py, the variances of the training torques), from one start
    and one regressor cache, ``config.max_minutes`` shared equally; the fit with the lowest
    finite mean held-out NMSE is the result, so its held-out figures are those the weight was
    chosen on (``prior_choice``). Online mode (paper 002 §4.1.2) neither keeps the best epoch
    nor decays the rate.
    """
    if len(train) == 0:
        raise DataError("no training samples")
    if train.q.dtype != model.dtype:
        raise DataError(f"samples are {train.q.dtype} but the model is {model.dtype}; "
                        f"convert one of them")
    weights = (0.0,)
    if config.prior is not None:
        weights = tuple(float(w) for w in config.prior_weights)
        if not weights or not all(np.isfinite(w) and w >= 0.0 for w in weights):
            raise DataError(f"prior weights must be finite and >= 0, got {list(weights)}")
        if heldout is None or len(heldout) == 0:
            raise DataError("choosing the prior's weight needs held-out samples")
    start = _Start.of(model, train, heldout, config)
    minutes = config.max_minutes / len(weights) if config.max_minutes is not None else None
    results = [_identify_with(start, train, heldout, config, w, minutes, progress) for w in weights]
    if config.prior is None:
        return results[0]
    choice = PriorChoice.of(config.prior.source, weights,
                            [float(np.mean(r.nmse_heldout_after)) for r in results])
    chosen = results[choice.chosen_index]
    chosen.prior_choice = choice
    return chosen


@dataclass(frozen=True)
class _Start:
    """What every fit of one :func:`identify` shares: the model it starts from (the given one, or
    its inertials moved into the bounds), the regressor caches of the training and held-out
    samples, and the given model's NMSE (the "before" figures)."""

    model: RigidBodyModel
    train_cache: Optional[RegressorCache]
    heldout_cache: Optional[RegressorCache]
    nmse_train: np.ndarray
    nmse_heldout: Optional[np.ndarray]

    @classmethod
    def of(cls, model: RigidBodyModel, train: Samples, heldout: Optional[Samples],
           config: IdentificationConfig) -> "_Start":
        links = config.learnable_links or default_learnable_links(model)
        start = inside_bounds(model, links, config.bounds) if config.bounds is not None else model
        given = _dynamics(model, config)
        probe = _dynamics(start, config) if start is not model else given
        caches = [probe.regressor_cache(s.q, s.qd, s.qdd) if config.use_regressor and s is not None
                  else None for s in (train, heldout)]
        # "before" is the given model's, also when the fit starts from its inertials moved into bounds
        own = start is model
        return cls(start, caches[0], caches[1],
                   evaluate_nmse(given, train, cache=caches[0] if own else None),
                   (evaluate_nmse(given, heldout, cache=caches[1] if own else None)
                    if heldout is not None else None))


def _dynamics(model: RigidBodyModel, config: IdentificationConfig) -> LearnableDynamics:
    return LearnableDynamics(model, config.parametrisation, config.learnable_links,
                             friction=config.friction, offset=config.offset)


def _identify_with(start: _Start, train: Samples, heldout: Optional[Samples],
                   config: IdentificationConfig, prior_weight: float, max_minutes: Optional[float],
                   progress: Optional[Progress]) -> IdentificationResult:
    """One fit of :func:`identify`, from ``start``, with the prior (if any) at ``prior_weight``."""
    dynamics = _dynamics(start.model, config)
    predict = (diffnea_predictor(dynamics, train, start.train_cache) if config.use_regressor
               else module_predictor(dynamics, train))
    bounds = config.bounds
    terms: list[Callable[[float], torch.Tensor]] = []
    if bounds is not None:
        tensors = BoundTensors.of(dynamics.learnable_links, bounds, start.model.dtype)

        def bounds_term(progress: float) -> torch.Tensor:
            """The weight grows geometrically from 1e-3 x to 1 x bounds_weight over the
            epochs (a continuation, as penalty methods raise theirs). The fit starts inside the
            bounds (inside_bounds); the penalty keeps it there, the decaying rate and keep_best
            keep a late kick of the stiff penalty out of the result."""
            mass, com, inertia = dynamics.learned_inertials()
            weight = config.bounds_weight * 10.0 ** (-3.0 * (1.0 - progress))
            return weight * bound_penalty(mass, com, inertia, tensors)
        terms.append(bounds_term)
    if config.prior is not None and prior_weight > 0.0:
        prior = PriorTensors.of(dynamics.learnable_links, config.prior, start.model.dtype)
        # in units of the training torques' summed variance: the weight means the same for any robot
        scale = prior_weight * float(train.tau.var(dim=0).sum())
        terms.append(lambda progress: scale * prior_penalty(*dynamics.learned_inertials(), prior))
    penalty = (lambda progress: sum(term(progress) for term in terms)) if terms else None
    fitted = fit(list(dynamics.parameters()), predict, train,
                 FitConfig(epochs=config.epochs, batch_size=config.batch_size,
                           learning_rate=config.learning_rate, stop_nmse=config.stop_nmse,
                           online=config.online, seed=config.seed, max_minutes=max_minutes,
                           keep_best=config.keep_best and not config.online,
                           lr_decay=1.0 if config.online else config.lr_decay),
                 progress, penalty)
    return IdentificationResult(
        dynamics=dynamics, config=config,
        nmse_train_before=start.nmse_train, nmse_train_after=fitted.nmse_after,
        nmse_heldout_before=start.nmse_heldout,
        nmse_heldout_after=(evaluate_nmse(dynamics, heldout, cache=start.heldout_cache)
                            if heldout is not None else None),
        epochs=fitted.epochs, epochs_to_threshold=fitted.epochs_to_threshold,
        seconds=fitted.seconds, consistency=consistency_of(dynamics), history=fitted.history,
        online_curve=fitted.online_curve, diverged=fitted.diverged, kept_epoch=fitted.kept_epoch,
        plausibility=(check_plausibility(dynamics.link_inertials(), bounds)
                      if bounds is not None else None))
