"""Roll-out divergence (paper 001 §3.1): the first step at which paired roll-outs
Roll_sim(s_0) and Roll_phy(s_0) reach states that differ (eq. 8 distance above epsilon_c) with
sufficiently different probabilities (eq. 5 gap above epsilon_p).

:func:`divergence` returns a :class:`Divergence` (delta, delta_s, delta_p) or ``None``; with
``significance`` (our addition) the gap must also pass Fisher's exact test on the transition
counts (:func:`significance_of`), so that a branch seen once or twice is no divergence.

The test step by step and the counts: README.md, "How it works: roll-out divergence and
Algorithm 1".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from scipy.stats import fisher_exact

from kernel_manager_ros.rollout import Rollout
from kernel_manager_ros.transitions import SharedTransitions, TransitionModel


@dataclass(frozen=True)
class Divergence:
    """delta, delta_s, delta_p of Algorithm 1 (state and action indices into the shared
    representatives)."""

    step: int             # t: delta is the roll-outs' state t
    state: int            # s of delta
    action_sim: int       # a_s
    action_phy: int       # a_p
    next_sim: int         # s_s
    next_phy: int         # s_p
    p_sim: float          # B_sim(s_s|s, a_s)
    p_phy: float          # B_phy(s_p|s, a_p)
    distance: float       # c(s_s, s_p), eq. 8
    probability_gap: float

    @property
    def normalised(self) -> tuple[float, float]:
        """d = normalized(p_s, p_p) of Algorithm 1."""
        total = self.p_sim + self.p_phy
        return self.p_sim / total, self.p_phy / total


def significance_of(sim: TransitionModel, phy: TransitionModel, s: int, x: int) -> float:
    """Two-sided p-value of Fisher's exact test that s -> x is as frequent in both histories
    (module docstring)."""
    k_phy, k_sim = phy.state_count(s, x), sim.state_count(s, x)
    table = [[k_phy, phy.visits(s) - k_phy], [k_sim, sim.visits(s) - k_sim]]
    return float(fisher_exact(table).pvalue)


def divergence(r_sim: Rollout, r_phy: Rollout, transitions: SharedTransitions,
               epsilon_p: float, epsilon_c: Optional[float] = None,
               significance: Optional[float] = None) -> Optional[Divergence]:
    """The first divergence of the paired roll-outs (see the module docstring), or None.
    ``significance``: the level alpha of the evidence test (None: no test, the paper's rule)."""
    eps_c = transitions.epsilon_c if epsilon_c is None else float(epsilon_c)
    sim, phy = transitions.sim, transitions.phy
    if r_sim.states[0] != r_phy.states[0]:
        return None
    for t in range(min(len(r_sim), len(r_phy))):
        s = int(r_sim.states[t])
        s_s, s_p = int(r_sim.states[t + 1]), int(r_phy.states[t + 1])
        if s_s == s_p:
            continue
        distance = transitions.distance(s_s, s_p)
        if distance <= eps_c:
            continue
        gap_phy = phy.state_probability(s, s_p) - sim.state_probability(s, s_p)
        gap_sim = sim.state_probability(s, s_s) - phy.state_probability(s, s_s)
        gap = max(gap_phy, gap_sim)
        if gap <= epsilon_p:
            return None
        if significance is not None and significance_of(
                sim, phy, s, s_p if gap_phy >= gap_sim else s_s) >= significance:
            return None
        return Divergence(step=t, state=s, action_sim=int(r_sim.actions[t]),
                          action_phy=int(r_phy.actions[t]), next_sim=s_s, next_phy=s_p,
                          p_sim=float(r_sim.probs[t]), p_phy=float(r_phy.probs[t]),
                          distance=distance, probability_gap=float(gap))
    return None
