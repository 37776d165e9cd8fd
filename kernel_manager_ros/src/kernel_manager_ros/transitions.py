"""Frequentist transition functions over a shared set of representative states (paper 001
eqs. 3, 5, 6).

Quantisation. The paper compares states with eq. 8: two states are the same when
c(s, s') <= epsilon_c. ``quantise`` turns that into a finite state set by greedy leader
clustering: the distinct points are visited in order of first appearance; a point not yet
covered becomes a representative and covers every uncovered point within epsilon_c of it. A scipy
cKDTree over the w-scaled coordinates queried with p = 1 answers "within epsilon_c" exactly in
eq. 8's metric. Representatives are therefore pairwise more than epsilon_c apart, so "the same
state" is "the same representative index" everywhere downstream. The states AND next states of
BOTH histories are clustered together, so an index means the same region in T_sim and T_phy and
S_0 = States(P_sim) ∩ States(P_phy) (Algorithm 1) is an intersection of index sets. Actions are
quantised the same way with their own weights and epsilon_a.

Estimates. With n(s, a, s') the number of history rows labelled (s, a, s'):
  T(s'|s, a) = n(s, a, s') / n(s, a)                       (eq. 3, frequentist)
  pi(a|s)    = n(s, a) / n(s)
  B(s'|s, a) = T(s'|s, a) pi(a|s) = n(s, a, s') / n(s)      (eq. 5)
  P(s'|s)    = sum_a B(s'|s, a)                             (eq. 5)
  SR(s)      = {(s', a, B(s'|s, a)) : B > 0}               (eq. 6)
A TransitionModel stores SR for all s in compressed-row form (rows = source states, one entry
per observed (a, s')), plus, for every entry, the history rows that instantiate it: the
transfer-function fit (transfer.py) uses those raw samples rather than the representatives.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.spatial import cKDTree

from kernel_manager_ros.distance import scaled, weighted_l1
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.history import History


def quantise(points: np.ndarray, weights: np.ndarray, epsilon: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """Greedy leader clustering under eq. 8 (see the module docstring).

    Returns ``labels`` (n,) (representative index of every point) and ``leaders`` (k,) (the row
    of ``points`` that is each representative; representatives are numbered in order of first
    appearance)."""
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[0] == 0:
        raise KernelError(f"cannot quantise {points.shape} points (need a non-empty (n, d) array)")
    if not np.isfinite(points).all():
        raise KernelError("cannot quantise states holding NaN/Inf")
    # Identical rows first (consecutive transitions share s'_i = s_{i+1}), kept in order of
    # first appearance so that the clustering follows the histories' order.
    unique, first, inverse = np.unique(points, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    unique, first, inverse = unique[order], first[order], rank[inverse.reshape(-1)]
    label = np.full(unique.shape[0], -1, dtype=np.int64)
    leaders: list[int] = []
    if epsilon <= 0.0:
        label[:] = np.arange(unique.shape[0])
        leaders = list(range(unique.shape[0]))
    else:
        coords = scaled(unique, weights)
        tree = cKDTree(coords)
        for i in range(unique.shape[0]):
            if label[i] >= 0:
                continue
            neighbours = np.asarray(tree.query_ball_point(coords[i], epsilon, p=1.0),
                                    dtype=np.int64)
            neighbours = neighbours[label[neighbours] < 0]
            label[neighbours] = len(leaders)
            label[i] = len(leaders)
            leaders.append(i)
    return label[inverse], first[np.asarray(leaders, dtype=np.int64)]


@dataclass(frozen=True)
class TransitionModel:
    """SR(s) of eq. 6 for every representative state s, in compressed-row form.

    Entries of row s are ``indptr[s]:indptr[s + 1]``; entry e is the transition
    (s -> next_state[e] under action[e]) seen count[e] times, with probability prob[e] =
    B(s'|s, a) (eq. 5); rows sum to 1. ``samples(e)`` are the history rows behind entry e."""

    n_states: int
    indptr: np.ndarray       # (n_states + 1,)
    next_state: np.ndarray   # (nnz,)
    action: np.ndarray       # (nnz,)
    count: np.ndarray        # (nnz,)
    prob: np.ndarray         # (nnz,) B(s'|s, a)
    cumprob: np.ndarray      # (nnz,) running sum of prob within each row (sampling)
    sample_ptr: np.ndarray   # (nnz + 1,)
    sample_rows: np.ndarray  # (N,) history rows grouped by entry

    @classmethod
    def from_labels(cls, state: np.ndarray, action: np.ndarray, next_state: np.ndarray,
                    n_states: int, n_actions: int) -> "TransitionModel":
        """Count n(s, a, s') over labelled history rows (vectorised: one sort)."""
        state, action = np.asarray(state, np.int64), np.asarray(action, np.int64)
        next_state = np.asarray(next_state, np.int64)
        key = (state * n_actions + action) * n_states + next_state
        keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        entry_next = keys % n_states
        entry_action = (keys // n_states) % n_actions
        entry_state = keys // (n_states * n_actions)
        indptr = np.searchsorted(entry_state, np.arange(n_states + 1)).astype(np.int64)
        row_total = np.bincount(entry_state, weights=counts, minlength=n_states)
        prob = counts / row_total[entry_state]
        cum = np.cumsum(prob)
        cumprob = cum - (cum - prob)[indptr[entry_state]]
        order = np.argsort(inverse, kind="stable")
        sample_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return cls(n_states=int(n_states), indptr=indptr, next_state=entry_next,
                   action=entry_action, count=counts.astype(np.int64), prob=prob,
                   cumprob=cumprob, sample_ptr=sample_ptr, sample_rows=order)

    @property
    def n_transitions(self) -> int:
        """Number of distinct (s, a, s') transitions (the paper's "951 state transitions")."""
        return int(self.next_state.size)

    @property
    def sources(self) -> np.ndarray:
        """States(P): the representative states with at least one successor."""
        return np.flatnonzero(np.diff(self.indptr) > 0)

    def successors(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """SR(s) of eq. 6 as arrays (next state index, action id, B(s'|s, a))."""
        lo, hi = self.indptr[s], self.indptr[s + 1]
        return self.next_state[lo:hi], self.action[lo:hi], self.prob[lo:hi]

    def state_probability(self, s: int, s_next: int) -> float:
        """P(s'|s) of eq. 5 (0 when s has no successors)."""
        lo, hi = self.indptr[s], self.indptr[s + 1]
        return float(self.prob[lo:hi][self.next_state[lo:hi] == s_next].sum())

    def visits(self, s: int) -> int:
        """n(s): how many history rows leave s."""
        lo, hi = self.indptr[s], self.indptr[s + 1]
        return int(self.count[lo:hi].sum())

    def state_count(self, s: int, s_next: int) -> int:
        """n(s, s') = sum_a n(s, a, s'): how many history rows went s -> s'."""
        lo, hi = self.indptr[s], self.indptr[s + 1]
        return int(self.count[lo:hi][self.next_state[lo:hi] == s_next].sum())

    def transition_probability(self, s: int, a: int, s_next: int) -> float:
        """T(s'|s, a) of eq. 3 (0 when a was never taken in s)."""
        lo, hi = self.indptr[s], self.indptr[s + 1]
        taken = self.action[lo:hi] == a
        n_sa = self.count[lo:hi][taken].sum()
        if n_sa == 0:
            return 0.0
        return float(self.count[lo:hi][taken & (self.next_state[lo:hi] == s_next)].sum() / n_sa)

    def policy(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """pi(a|s) (eq. 5) as arrays (action ids, probabilities)."""
        lo, hi = self.indptr[s], self.indptr[s + 1]
        actions, inverse = np.unique(self.action[lo:hi], return_inverse=True)
        return actions, np.bincount(inverse.reshape(-1), weights=self.prob[lo:hi])

    def sources_of(self, entries: Sequence[int]) -> np.ndarray:
        """The source state s of every entry (sorted, unique)."""
        e = np.asarray(entries, dtype=np.int64)
        return np.unique(np.searchsorted(self.indptr, e, side="right") - 1)

    def entries_from(self, states: Sequence[int]) -> list[int]:
        """Every entry (s -> s' under a) leaving the given states."""
        return [e for s in states for e in range(int(self.indptr[s]), int(self.indptr[s + 1]))]

    def samples(self, entry: int) -> np.ndarray:
        """History rows labelled with entry ``entry``'s (s, a, s')."""
        return self.sample_rows[self.sample_ptr[entry]:self.sample_ptr[entry + 1]]


@dataclass(frozen=True)
class SharedTransitions:
    """T_sim and T_phy over one set of representative states and actions."""

    states: np.ndarray          # (n_states, d) representative (leader) coordinates
    centroids: np.ndarray       # (n_states, d) mean of the points each representative covers
    actions: np.ndarray         # (n_actions, m) representative actions
    weights: np.ndarray         # (d,) eq. 8 weights (sum 1)
    epsilon_c: float
    sim: TransitionModel
    phy: TransitionModel

    @property
    def n_states(self) -> int:
        return int(self.states.shape[0])

    def common_states(self) -> np.ndarray:
        """S_0 = States(P_sim) ∩ States(P_phy) of Algorithm 1."""
        return np.intersect1d(self.sim.sources, self.phy.sources)

    def distance(self, i: int, j: int) -> float:
        """c of eq. 8 between representatives i and j."""
        return float(weighted_l1(self.states[i], self.states[j], self.weights))


def estimate_transitions(sim: History, phy: History, weights: np.ndarray, epsilon_c: float,
                         action_weights: np.ndarray, epsilon_a: float) -> SharedTransitions:
    """Quantise both histories' states, next states and actions together and count T_sim,
    T_phy (eqs. 3, 5, 6); see the module docstring."""
    sim.validate("simulation history")
    phy.validate("deployment history")
    d = sim.state_dim
    if phy.state_dim != d or phy.action_dim != sim.action_dim:
        raise KernelError(f"the histories differ in dimension: simulation states {d}, actions "
                          f"{sim.action_dim}; deployment states {phy.state_dim}, actions "
                          f"{phy.action_dim}")
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (d,):
        raise KernelError(f"{weights.shape[0] if weights.ndim else 0} state weights for "
                          f"{d}-dimensional states")
    n_sim, n_phy = len(sim), len(phy)
    points = np.concatenate([sim.states, phy.states, sim.next_states, phy.next_states])
    labels, leaders = quantise(points, weights, epsilon_c)
    n_states = leaders.size
    sums = np.zeros((n_states, d))
    np.add.at(sums, labels, points)
    centroids = sums / np.bincount(labels, minlength=n_states)[:, None]
    s_sim, s_phy = labels[:n_sim], labels[n_sim:n_sim + n_phy]
    n_sim_next = labels[n_sim + n_phy:2 * n_sim + n_phy]
    n_phy_next = labels[2 * n_sim + n_phy:]
    all_actions = np.concatenate([sim.actions, phy.actions])
    a_labels, a_leaders = quantise(all_actions, action_weights, epsilon_a)
    n_actions = a_leaders.size
    return SharedTransitions(
        states=points[leaders], centroids=centroids, actions=all_actions[a_leaders],
        weights=weights, epsilon_c=float(epsilon_c),
        sim=TransitionModel.from_labels(s_sim, a_labels[:n_sim], n_sim_next, n_states,
                                        n_actions),
        phy=TransitionModel.from_labels(s_phy, a_labels[n_sim:], n_phy_next, n_states,
                                        n_actions))
