"""Roll-out divergence (paper 001 §3.1): the first step at which paired roll-outs
Roll_sim(s_0) and Roll_phy(s_0) reach states that differ (eq. 8 distance above epsilon_c) with
sufficiently different probabilities.

The test, step by step t = 0, 1, ... while both roll-outs last: both are at the common state
s = r_sim[t] = r_phy[t] (true at t = 0, and kept true by continuing only while they agree). The
successors are s_s = r_sim[t + 1] and s_p = r_phy[t + 1].
  * c(s_s, s_p) <= epsilon_c: the same state (representatives are > epsilon_c apart, so this is
    s_s == s_p); go on.
  * otherwise compare how likely each successor is under the two transition functions (eq. 5):
        gap = max(P_phy(s_p|s) - P_sim(s_p|s),  P_sim(s_s|s) - P_phy(s_s|s)).
    gap > epsilon_p: a roll-out divergence: deployment went where the simulation (almost)
    never goes, or the simulation went where deployment (almost) never goes. The common point is
    delta = (s, a, p), followed by delta_s = (s_s, a_s, p_s) and delta_p = (s_p, a_p, p_p) with
    p_s = B_sim(s_s|s, a_s), p_p = B_phy(s_p|s, a_p).
    gap <= epsilon_p: both transition functions branch alike here and the roll-outs merely drew
    different branches; that is no divergence, and the roll-outs no longer share a state, so the
    pair yields none.
A roll-out that ends first (no successors recorded) yields none either: there is no evidence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kernel_manager_ros.rollout import Rollout
from kernel_manager_ros.transitions import SharedTransitions


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


def divergence(r_sim: Rollout, r_phy: Rollout, transitions: SharedTransitions,
               epsilon_p: float, epsilon_c: Optional[float] = None) -> Optional[Divergence]:
    """The first divergence of the paired roll-outs (see the module docstring), or None."""
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
        gap = max(phy.state_probability(s, s_p) - sim.state_probability(s, s_p),
                  sim.state_probability(s, s_s) - phy.state_probability(s, s_s))
        if gap <= epsilon_p:
            return None
        return Divergence(step=t, state=s, action_sim=int(r_sim.actions[t]),
                          action_phy=int(r_phy.actions[t]), next_sim=s_s, next_phy=s_p,
                          p_sim=float(r_sim.probs[t]), p_phy=float(r_phy.probs[t]),
                          distance=distance, probability_gap=float(gap))
    return None
