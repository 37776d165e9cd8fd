"""Algorithm 1 of paper 001 (GenKer): state-space kernels from a simulated and a deployment
history.

:func:`generate_kernels` (settings :class:`GenerationConfig`, report :class:`GenerationReport`):
paired roll-outs (eq. 7) from S_0 = States(P_sim) ∩ States(P_phy), their divergences
(divergence.py, §3.1) made kernels with e = N(s, sigma^2) at delta's state, d = normalized(p_s,
p_p) and f a linear fit on the deployment's subsequence from delta (transfer.py); seeded, with a
progress bar. Our choices: an optional significance test, duplicates merged and ordered by
support, the fit on the divergent branch or (``fit_rows="states"``) on every deployment row out
of its states, sensor or motor kind per sensor (:func:`held_sensors`, eq. 9, §6.2).

The algorithm and each choice with its reason: README.md, "How it works: roll-out divergence and
Algorithm 1".
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

import numpy as np
from tqdm import tqdm

from kernel_manager_ros.divergence import Divergence, divergence
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.history import History
from kernel_manager_ros.kernel import Kernel, KernelSet
from kernel_manager_ros.rollout import Rollout, roll_out
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.transfer import LinearTransfer
from kernel_manager_ros.transitions import SharedTransitions, estimate_transitions


FIT_ROWS = ("branch", "states")


@dataclass(frozen=True)
class GenerationConfig:
    rollouts: int = 100                      # N_rollouts of Algorithm 1
    max_rollout_length: int = 200            # steps per roll-out (eq. 7 ends earlier at ⊥)
    epsilon_c: Optional[float] = None        # eq. 8 state threshold (None: the spec's)
    epsilon_a: Optional[float] = None        # action threshold (None: the spec's)
    epsilon_p: float = 0.2                   # probability gap of a divergence (divergence.py)
    significance: Optional[float] = None     # Fisher test level of a divergence (None: no test)
    fit_rows: str = "branch"                 # "branch" | "states": the transfer's fit rows
    sigma: Optional[float] = None            # e_k = N(0, sigma^2) (None: epsilon_c)
    activation_threshold: float = 0.5        # e_k ∘ c_k(s) above this: active
    fit_length: int = 3                      # transitions of r_p from delta in the fit
    min_fit_samples: int = 2                 # fewer raw rows: candidate dropped
    ridge: float = 1.0                       # ridge toward identity (transfer.py)
    identity_tolerance: Optional[float] = None   # eq. 8 units (None: 0.1 epsilon_c)
    sensor_kernels: bool = True              # False: drop identity transfers (§6.1)
    seed: int = 0

    def check(self) -> None:
        ints = {"rollouts": (self.rollouts, 1), "max_rollout_length": (self.max_rollout_length, 1),
                "fit_length": (self.fit_length, 1), "min_fit_samples": (self.min_fit_samples, 1)}
        for name, (value, low) in ints.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise KernelError(f"{name} must be an integer >= {low}, got {value!r}")
        for name, value in (("epsilon_c", self.epsilon_c), ("epsilon_a", self.epsilon_a),
                            ("identity_tolerance", self.identity_tolerance)):
            if value is not None and not (np.isfinite(value) and value >= 0.0):
                raise KernelError(f"{name} must be >= 0, got {value!r}")
        if self.sigma is not None and not (np.isfinite(self.sigma) and self.sigma > 0.0):
            raise KernelError(f"sigma must be > 0, got {self.sigma!r}")
        if self.fit_rows not in FIT_ROWS:
            raise KernelError(f"fit_rows must be one of {FIT_ROWS}, got {self.fit_rows!r}")
        if self.significance is not None and not (0.0 < self.significance <= 1.0):
            raise KernelError(f"significance must be in (0, 1], got {self.significance!r}")
        if not (0.0 <= self.epsilon_p < 1.0):
            raise KernelError(f"epsilon_p must be in [0, 1), got {self.epsilon_p!r}")
        if not (0.0 < self.activation_threshold < 1.0):
            raise KernelError(f"activation_threshold must be in (0, 1), got "
                              f"{self.activation_threshold!r}")
        if not (np.isfinite(self.ridge) and self.ridge >= 0.0):
            raise KernelError(f"ridge must be >= 0, got {self.ridge!r}")


@dataclass
class GenerationReport:
    """What GenKer saw and did (the paper's §6 figures: transitions, common states, ...)."""

    states: int = 0                  # shared representative states
    actions: int = 0                 # shared representative actions
    sim_transitions: int = 0         # distinct (s, a, s') in P_sim
    phy_transitions: int = 0
    common_states: int = 0           # |S_0|
    rollouts: int = 0
    divergences: int = 0             # roll-out pairs that diverged
    unique_divergences: int = 0      # distinct divergence states
    dropped_insufficient: int = 0    # not enough samples for the transfer fit
    dropped_sensor: int = 0          # identity transfers dropped (sensor_kernels=False)
    motor_kernels: int = 0
    sensor_kernels: int = 0
    epsilon_c: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Branch:
    """Divergences at one state delta that went to the same delta_p."""

    support: int = 0
    p_sim: float = 0.0
    p_phy: float = 0.0
    entries: set[int] = field(default_factory=set)


@dataclass
class _Candidate:
    """Divergences merged at one state delta (duplicates, Algorithm 1's AddKernel)."""

    state: int
    support: int = 0
    branches: dict[int, _Branch] = field(default_factory=dict)

    def add(self, div: Divergence, entries: list[int]) -> None:
        self.support += 1
        branch = self.branches.setdefault(div.next_phy, _Branch())
        branch.support += 1
        p_s, p_p = div.normalised
        branch.p_sim += p_s
        branch.p_phy += p_p
        branch.entries.update(entries)

    def main_branch(self) -> _Branch:
        return max(self.branches.values(), key=lambda b: b.support)   # first on ties


def fit_entries(r_phy: Rollout, step: int, fit_length: int) -> list[int]:
    """The model entries of r_phy's subsequence from ``step``: at most fit_length transitions,
    ending before a state the subsequence already left from (module docstring)."""
    seen: set[int] = set()
    entries = []
    for t in range(step, min(step + fit_length, len(r_phy))):
        s = int(r_phy.states[t])
        if s in seen:
            break
        seen.add(s)
        entries.append(int(r_phy.entries[t]))
    return entries


def generate_kernels(sim: History, phy: History, spec: StateSpec,
                     config: GenerationConfig = GenerationConfig(),
                     progress: bool = True) -> tuple[KernelSet, GenerationReport]:
    """Algorithm 1 on H_sim and H_phy (see the module docstring)."""
    config.check()
    d, m = len(spec.state_names), len(spec.action_names)
    sim.validate("simulation history", d, m)
    phy.validate("deployment history", d, m)
    eps_c = spec.epsilon_c if config.epsilon_c is None else config.epsilon_c
    eps_a = spec.action_epsilon if config.epsilon_a is None else config.epsilon_a
    sigma = float(config.sigma if config.sigma is not None else eps_c)
    if sigma <= 0.0:
        raise KernelError("sigma must be > 0 (epsilon_c is 0: set sigma explicitly)")
    identity_tol = 0.1 * eps_c if config.identity_tolerance is None \
        else config.identity_tolerance
    report = GenerationReport(epsilon_c=float(eps_c))
    clock = time.perf_counter()
    shared = estimate_transitions(sim, phy, spec.weights, eps_c, spec.action_weights, eps_a)
    report.seconds["transitions"] = time.perf_counter() - clock
    report.states, report.actions = shared.n_states, int(shared.actions.shape[0])
    report.sim_transitions = shared.sim.n_transitions
    report.phy_transitions = shared.phy.n_transitions
    common = shared.common_states()
    report.common_states = int(common.size)

    clock = time.perf_counter()
    candidates: dict[int, _Candidate] = {}
    rng = np.random.default_rng(config.seed)
    if common.size:
        for _ in tqdm(range(config.rollouts), desc="roll-outs", unit="pair",
                      disable=not progress or None, leave=False):
            s0 = int(common[rng.integers(common.size)])
            r_sim = roll_out(shared.sim, s0, rng, config.max_rollout_length)
            r_phy = roll_out(shared.phy, s0, rng, config.max_rollout_length)
            report.rollouts += 1
            div = divergence(r_sim, r_phy, shared, config.epsilon_p, eps_c,
                             config.significance)
            if div is None:
                continue
            report.divergences += 1
            candidates.setdefault(div.state, _Candidate(div.state)).add(
                div, fit_entries(r_phy, div.step, config.fit_length))
    report.seconds["rollouts"] = time.perf_counter() - clock
    report.unique_divergences = len(candidates)

    clock = time.perf_counter()
    kernels = _kernels(candidates, shared, phy, spec, config, sigma, identity_tol, report)
    report.seconds["fit"] = time.perf_counter() - clock
    metadata = {"generator": "kernel_manager_ros.generation.generate_kernels (paper 001 "
                             "Algorithm 1)",
                "config": {k: v for k, v in asdict(config).items()},
                "epsilon_c": float(eps_c), "epsilon_a": float(eps_a), "sigma": sigma,
                "identity_tolerance": float(identity_tol),
                "report": {k: v for k, v in report.to_dict().items() if k != "seconds"}}
    kernel_set = KernelSet(tuple(kernels), spec.state_names, spec.action_names, spec.weights,
                           config.activation_threshold, metadata)
    return kernel_set, report


def _kernels(candidates: dict[int, _Candidate], shared: SharedTransitions, phy: History,
             spec: StateSpec, config: GenerationConfig, sigma: float, identity_tol: float,
             report: GenerationReport) -> list[Kernel]:
    """One kernel per merged candidate, best supported first."""
    ordered = sorted(candidates.values(), key=lambda c: -c.support)   # stable: discovery order
    slices = spec.sensor_slices
    kernels = []
    for cand in ordered:
        branch = cand.main_branch()
        entries = sorted(branch.entries)
        if config.fit_rows == "states":
            entries = shared.phy.entries_from(shared.phy.sources_of(entries))
        rows = np.unique(np.concatenate([shared.phy.samples(e) for e in entries]))
        if rows.size < config.min_fit_samples:
            report.dropped_insufficient += 1
            continue
        transfer = LinearTransfer.fit(phy.states[rows], phy.actions[rows],
                                      phy.next_states[rows], slices, spec.weights, config.ridge)
        held = held_sensors(phy, rows, spec, identity_tol)
        kind = "sensor" if held else "motor"
        if kind == "sensor" and not config.sensor_kernels:
            report.dropped_sensor += 1
            continue
        kernels.append(Kernel(centre=shared.centroids[cand.state], sigma=sigma,
                              p_sim=branch.p_sim / branch.support,
                              p_phy=branch.p_phy / branch.support,
                              transfer=transfer, kind=kind, support=cand.support,
                              held=held))
    report.motor_kernels = sum(k.kind == "motor" for k in kernels)
    report.sensor_kernels = sum(k.kind == "sensor" for k in kernels)
    return kernels


def held_sensors(phy: History, rows: np.ndarray, spec: StateSpec, tol: float
                 ) -> tuple[str, ...]:
    """The sensors that held their value on every given row of ``phy``: time stamp unchanged
    (eq. 9) and values moved by at most ``tol`` (eq. 8 units over the sensor's coordinates)."""
    held = []
    for i, (name, sl) in enumerate(spec.sensor_slices.items()):
        same_stamp = np.array_equal(phy.stamps[rows, i], phy.next_stamps[rows, i])
        moved = np.abs(phy.next_states[rows, sl] - phy.states[rows, sl]) @ spec.weights[sl]
        if same_stamp and float(moved.max()) <= tol:
            held.append(name)
    return tuple(held)
