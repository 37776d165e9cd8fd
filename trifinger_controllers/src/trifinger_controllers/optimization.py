"""Bayesian optimisation of controller hyperparameters (paper 004 §V "Bayesian Optimization",
§VI "Bayesian Optimization", Table III).

The objective ``f(theta) = E_g[R(theta, g)]`` is the RRC reward of the controller with
hyperparameters ``theta``, averaged over ``K`` simulated episodes (:func:`controller_objective`;
the same goals and initial poses for every candidate: common random numbers). BO models ``f`` on
the unit cube ``[0, 1]^d`` of the :class:`~trifinger_controllers.params.ParameterSet`'s
intervals (:meth:`ParameterSet.to_vector` / :meth:`ParameterSet.from_vector`, logarithmic for
log-scale gains) with a zero-information start, as in the paper: only the intervals are given,
never the manually tuned values.

* ``initial`` (paper: 4) points drawn uniformly at random in ``[0, 1]^d``;
* then per iteration: a BoTorch ``SingleTaskGP`` with a Matérn 5/2 ARD kernel (``nu = 2.5``, the
  dimension-scaled log-normal lengthscale prior of BoTorch's default model), standardised
  outcomes and a fitted Gaussian noise, fitted by ``fit_gpytorch_mll`` (marginal likelihood);
  the next candidate maximises the (log) expected improvement over the best observed value
  (``LogExpectedImprovement``, numerically robust EI), by ``optimize_acqf`` over ``[0, 1]^d``;
* the result is the best *observed* candidate (with common random numbers the objective is a
  deterministic function of ``theta``, so the best observation is not a lucky draw of goals);
* :func:`validate` (an addition, the ``bo-validate`` tool): the few best candidates and the
  manual parameters re-scored on other episodes, the final choice made there (the manual set
  unless a candidate beats it). The best of K = 3 training episodes is still a
  lucky draw of those episodes (measured: MP's drops 0 % on them, 25 % on 20 others).

Deterministic for a seed on the CPU: NumPy draws the initial points, every GP fit and
acquisition optimisation runs under ``torch.manual_seed(seed, iteration)`` in a forked RNG, in
double precision with one torch thread.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from trifinger_controllers.params import ParameterSet
from trifinger_controllers.errors import ConfigurationError

if TYPE_CHECKING:  # torch and BoTorch are imported when BO runs: importing this module is cheap
    import torch

LOG = logging.getLogger(__name__)

#: Random initial points of the paper (§VI: "four randomly sampled initial sets of parameters").
INITIAL_POINTS = 4
#: Metrics of :func:`evaluation.evaluate` the objective may use (mean over all trials).
OBJECTIVE_METRICS = ("cumulative_reward", "reward")
#: optimize_acqf settings: random restarts of L-BFGS-B and raw Sobol samples to start them from.
NUM_RESTARTS = 10
RAW_SAMPLES = 512

Objective = Callable[[ParameterSet], float]


@dataclass
class Evaluation:
    """One evaluated candidate: its index, ``"initial"`` (random) or ``"bo"`` (maximiser of EI),
    its point of the unit cube (of the searched parameters), all parameter values, the objective
    and the wall time of the objective [s]."""

    index: int
    kind: str
    vector: List[float]
    values: Dict[str, float]
    objective: float
    seconds: float


@dataclass
class GPSummary:
    """The final GP (fitted to every evaluation): ARD lengthscales per searched parameter (unit
    cube), noise variance (standardised units), constant mean (standardised units), the outcome
    standardisation, and the posterior mean/std of ``f`` at the best observed candidate."""

    kernel: str
    lengthscales: Dict[str, float]
    noise: float
    mean_constant: float
    outcome_mean: float
    outcome_std: float
    best_posterior_mean: float
    best_posterior_std: float


@dataclass
class OptimizationResult:
    """Every evaluation in order, the best candidate and the final GP (:class:`GPSummary`)."""

    space: str
    searched: List[str]
    seed: int
    evaluations: List[Evaluation]
    best: ParameterSet
    best_value: float
    best_index: int
    gp: Optional[GPSummary]
    wall_seconds: float

    def to_dict(self) -> Dict[str, object]:
        """JSON-ready (the best parameters as ``{name: value}``)."""
        return {
            "space": self.space,
            "searched": list(self.searched),
            "seed": self.seed,
            "best": self.best.to_dict(),
            "best_value": self.best_value,
            "best_index": self.best_index,
            "gp": asdict(self.gp) if self.gp is not None else None,
            "wall_seconds": self.wall_seconds,
            "evaluations": [asdict(e) for e in self.evaluations],
        }


# ---------------------------------------------------------------------------------- the GP
def _fit_gp(x: torch.Tensor, y: torch.Tensor):
    """A SingleTaskGP (Matérn 5/2 ARD, standardised outcomes) fitted by marginal likelihood."""
    import torch
    from botorch.exceptions import ModelFittingError
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from gpytorch.constraints import GreaterThan
    from gpytorch.kernels import MaternKernel
    from gpytorch.mlls import ExactMarginalLogLikelihood
    from gpytorch.priors import LogNormalPrior

    d = x.shape[-1]
    # BoTorch's default dimension-scaled lengthscale prior (Hvarfner et al. 2024), on Matérn 5/2
    prior = LogNormalPrior(loc=math.sqrt(2.0) + 0.5 * math.log(d), scale=math.sqrt(3.0))
    kernel = MaternKernel(nu=2.5, ard_num_dims=d, lengthscale_prior=prior,
                          lengthscale_constraint=GreaterThan(2.5e-2, transform=None,
                                                             initial_value=prior.mode))
    model = SingleTaskGP(x, y, covar_module=kernel, outcome_transform=Standardize(m=1))
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    try:
        fit_gpytorch_mll(mll)
    except ModelFittingError as error:  # the GP keeps its initial (prior-mode) hyperparameters
        LOG.warning("GP fit failed (%s); using the prior-mode hyperparameters", error)
        with torch.no_grad():
            kernel.lengthscale = torch.full_like(kernel.lengthscale, float(prior.mode))
    model.eval()
    return model


def _next_candidate(model, best_f: float, d: int) -> np.ndarray:
    """The maximiser of log expected improvement over ``[0, 1]^d``."""
    import torch
    from botorch.acquisition import LogExpectedImprovement
    from botorch.optim import optimize_acqf

    acq = LogExpectedImprovement(model, best_f=best_f)
    bounds = torch.stack([torch.zeros(d, dtype=torch.double), torch.ones(d, dtype=torch.double)])
    candidate, _ = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=NUM_RESTARTS,
                                 raw_samples=RAW_SAMPLES)
    return candidate.detach().reshape(-1).numpy().clip(0.0, 1.0)


def _summary(model, names: Sequence[str], x_best: np.ndarray) -> GPSummary:
    import torch

    kernel = model.covar_module
    with torch.no_grad():
        posterior = model.posterior(torch.as_tensor(x_best, dtype=torch.double).reshape(1, -1))
        mean = float(posterior.mean.reshape(-1)[0])
        std = float(posterior.variance.clamp_min(0).sqrt().reshape(-1)[0])
        transform = model.outcome_transform
        return GPSummary(
            kernel=f"Matern(nu={kernel.nu}) ARD",
            lengthscales={n: float(v) for n, v in zip(names, kernel.lengthscale.reshape(-1))},
            noise=float(model.likelihood.noise.reshape(-1)[0]),
            mean_constant=float(model.mean_module.constant.reshape(-1)[0]),
            outcome_mean=float(transform.means.reshape(-1)[0]),
            outcome_std=float(transform.stdvs.reshape(-1)[0]),
            best_posterior_mean=mean,
            best_posterior_std=std,
        )


# ---------------------------------------------------------------------------------- BO loop
def optimise(
    objective: Objective,
    space: ParameterSet,
    iterations: int,
    initial: int = INITIAL_POINTS,
    seed: int = 0,
    progress: Optional[Callable[[Evaluation], None]] = None,
    names: Optional[Sequence[str]] = None,
) -> OptimizationResult:
    """Maximise ``objective`` over the intervals of ``space`` by BO (module docstring).

    Args:
        objective: maps a parameter set to the value to maximise (e.g. a mean reward); must be
            finite.
        space: the parameters, their intervals and the values of those not searched.
        iterations: BO iterations after the ``initial`` random points (paper: 50).
        initial: random initial points (paper: 4), at least 2.
        seed: seeds the initial points and every GP fit / acquisition optimisation.
        progress: called with each :class:`Evaluation` once it is done.
        names: the parameters to search (default: all); the others keep their values in
            ``space`` (paper §VI optimises a subset per controller, e.g. MP's speeds).
    """
    import torch

    if iterations < 0:
        raise ConfigurationError(f"iterations must be >= 0, got {iterations}")
    if initial < 2:
        raise ConfigurationError(f"initial must be >= 2 random points, got {initial}")
    names = list(space.names if names is None else names)
    unknown = [n for n in names if n not in space.names]
    if unknown or not names or len(set(names)) != len(names):
        raise ConfigurationError(f"{space.name}: the parameters to search must be distinct names of "
                         f"{', '.join(space.names)}; got {', '.join(names) or 'none'}")
    index = [space.names.index(n) for n in names]
    d = len(names)
    base = space.to_vector()

    def full_set(u: np.ndarray) -> ParameterSet:
        v = base.copy()
        v[index] = u
        searched = space.from_vector(v)
        return space.from_dict({n: searched[n] for n in names})  # the others exactly as given

    rng = np.random.default_rng(seed)
    evaluations: List[Evaluation] = []
    start = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)

    def evaluate(u: np.ndarray, kind: str) -> None:
        params = full_set(u)
        t0 = time.perf_counter()
        value = float(objective(params))
        if not math.isfinite(value):
            raise ConfigurationError(f"objective is not finite ({value}) for {params}")
        # the point actually evaluated (integers rounded, values clipped) is what the GP sees
        u_eval = params.to_vector()[index]
        evaluations.append(Evaluation(len(evaluations), kind, u_eval.tolist(), params.to_dict(),
                                      value, time.perf_counter() - t0))
        if progress is not None:
            progress(evaluations[-1])

    def data():
        x = torch.tensor([e.vector for e in evaluations], dtype=torch.double)
        y = torch.tensor([[e.objective] for e in evaluations], dtype=torch.double)
        return x, y

    try:
        for u in rng.random((initial, d)):
            evaluate(u, "initial")
        for iteration in range(iterations):
            with torch.random.fork_rng():
                torch.manual_seed(int(np.random.SeedSequence([seed, iteration]).generate_state(1)[0]))
                x, y = data()
                model = _fit_gp(x, y)
                u = _next_candidate(model, float(y.max()), d)
            evaluate(u, "bo")
        best_index = int(np.argmax([e.objective for e in evaluations]))
        with torch.random.fork_rng():
            torch.manual_seed(int(np.random.SeedSequence([seed, iterations]).generate_state(1)[0]))
            x, y = data()
            gp = _summary(_fit_gp(x, y), names, np.asarray(evaluations[best_index].vector))
    finally:
        torch.set_num_threads(threads)
    best = evaluations[best_index]
    return OptimizationResult(
        space=space.name, searched=names, seed=seed, evaluations=evaluations,
        best=space.from_dict(best.values), best_value=best.objective, best_index=best_index,
        gp=gp, wall_seconds=time.perf_counter() - start,
    )


# ---------------------------------------------------------------------------------- validation
@dataclass
class Validated:
    """One BO candidate re-scored on validation episodes: its index in the search, its objective
    there (``train``) and on the validation episodes (``validation``), the validation summary."""

    index: int
    values: Dict[str, float]
    train: Optional[float]
    validation: float
    summary: Dict[str, object]


def validate(evaluations: Sequence[Evaluation], objective: Objective, space: ParameterSet,
             top: int, incumbent: Optional[Mapping[str, float]] = None) -> Tuple[List[Validated], int]:
    """Re-score the ``top`` best distinct candidates of a search with ``objective`` on other
    episodes (other goals, tracker noise and physics), and choose by that score: the best of a
    few noisy training episodes is biased upwards (the winner's curse) and can be a set that
    drops the cube on episodes it was not tuned on. ``incumbent`` (e.g. the manual parameters) is
    scored too (index -1, no training objective) and kept unless a candidate beats it there
    without dropping the cube more often (the summaries' ``drop_rate``: a drop penalty trades
    drops for reward, and BO must improve a controller without adding drops).
    Returns the re-scored candidates, best training objective first (the incumbent last), and the
    position of the chosen one in that list."""
    if top < 1:
        raise ConfigurationError(f"top must be >= 1, got {top}")
    ranked: List[Evaluation] = []
    for e in sorted(evaluations, key=lambda e: e.objective, reverse=True):
        if all(e.values != r.values for r in ranked):
            ranked.append(e)
        if len(ranked) == top:
            break
    if not ranked:
        raise ConfigurationError("no candidates to validate")

    def score(index: int, values: Mapping[str, float], train: Optional[float]) -> Validated:
        value = float(objective(space.from_dict(values)))
        summary = objective.summaries[-1] if getattr(objective, "summaries", None) else {}
        return Validated(index, dict(values), train, value, summary)

    scored = [score(e.index, e.values, e.objective) for e in ranked]
    if incumbent is not None:
        scored.append(score(-1, incumbent, None))
    allowed = list(range(len(scored)))
    if incumbent is not None:
        drops = scored[-1].summary.get("drop_rate") or 0.0
        allowed = [i for i, v in enumerate(scored) if (v.summary.get("drop_rate") or 0.0) <= drops]
    best = max(scored[i].validation for i in allowed)
    # ties go to the incumbent: a candidate must beat it
    return scored, max(i for i in allowed if scored[i].validation == best)


# ---------------------------------------------------------------------------------- objective
#: Subtracted from the objective per dropped episode (in units of R, the cumulative reward of a
#: 15-20 s episode: a few hundred to a thousand), so that no candidate buys reward with drops.
DROP_PENALTY = 1000.0


class ControllerObjective:
    """``f(theta)``: the mean over ``episodes`` simulated episodes (all of them, drops included)
    of ``metric`` (paper's R: ``cumulative_reward``, the RRC episode score; or ``reward`` of the
    final pose) for controller ``controller`` with ``grasp`` and parameters ``theta``. Every call
    uses the same goals and initial poses (from ``seed``: common random numbers), the same
    tracker noise and physics samples (``options``: default tracker model and randomised
    physics). Drops are penalised: ``drop_penalty`` (in units of the metric) per dropped episode
    is subtracted from the mean, so that a candidate does not buy reward with drops. The summary
    of each call (mean/std/drop rate of :func:`evaluation.evaluate`) is appended to
    :attr:`summaries`."""

    def __init__(self, controller: str, grasp: Optional[str], level: int, episodes: int, seed: int,
                 seconds: float, metric: str = "cumulative_reward",
                 orientation_error_deg: Optional[float] = None, options=None,
                 drop_penalty: float = DROP_PENALTY) -> None:
        from trifinger_controllers.controllers import default_grasp, default_parameters
        from trifinger_controllers.evaluation import episode_specs

        if episodes < 1:
            raise ConfigurationError(f"episodes must be >= 1, got {episodes}")
        if not seconds > 0:
            raise ConfigurationError(f"episode length must be positive, got {seconds} s")
        if metric not in OBJECTIVE_METRICS:
            raise ConfigurationError(f"unknown metric {metric!r}: expected one of {', '.join(OBJECTIVE_METRICS)}")
        default_parameters(controller)  # unknown controller -> ValueError now, not after a run
        episode_specs(level, 1, seed, orientation_error_deg)  # bad level / error -> ValueError
        self.controller = controller
        self.grasp = grasp or default_grasp(controller)
        self.level = level
        self.episodes = episodes
        self.seed = seed
        self.seconds = seconds
        self.metric = metric
        self.orientation_error_deg = orientation_error_deg
        if not (np.isfinite(drop_penalty) and drop_penalty >= 0):
            raise ConfigurationError(f"drop_penalty must be >= 0, got {drop_penalty}")
        self.drop_penalty = float(drop_penalty)
        if options is None:
            from trifinger_controllers.sim_options import SimOptions
            options = SimOptions.named()
        self.options = options
        self.summaries: List[Dict[str, object]] = []
        self._kinematics = None

    def __call__(self, params: ParameterSet) -> float:
        from trifinger_controllers.controllers import make_controller
        from trifinger_controllers.evaluation import evaluate
        from trifinger_controllers.kinematics import FingerKinematics

        if self._kinematics is None:
            self._kinematics = FingerKinematics()

        def factory():
            return make_controller(self.controller, self.grasp, params, self._kinematics,
                                   level=self.level)

        result = evaluate(factory, self.level, self.episodes, self.seed, self.seconds,
                          self.orientation_error_deg, progress=False,
                          perception=self.options.perception, physics=self.options.physics)
        self.summaries.append({k: result[k] for k in ("mean", "std", "mean_all", "std_all",
                                                      "drop_rate", "errors", "wall_seconds")})
        return float(result["mean_all"][self.metric]) - self.drop_penalty * float(result["drop_rate"])


def controller_objective(controller: str, grasp: Optional[str], level: int, episodes: int,
                         seed: int, seconds: float, metric: str = "cumulative_reward",
                         orientation_error_deg: Optional[float] = None, options=None,
                         drop_penalty: float = DROP_PENALTY) -> ControllerObjective:
    """The BO objective of a registry controller (:class:`ControllerObjective`)."""
    return ControllerObjective(controller, grasp, level, episodes, seed, seconds, metric,
                               orientation_error_deg, options, drop_penalty)
