"""Policy roll-outs Roll(s) of paper 001 eq. 7 by Monte Carlo sampling of SR(s) (eq. 6).

From s, a successor (s', a, p) is drawn from SR(s) with probability p = B(s'|s, a) (eq. 5) and
the roll-out continues from s'; it ends (the ⊥ of eq. 7) at a state without successors or after
``max_length`` steps (roll-outs of a stationary program can cycle for ever).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.transitions import TransitionModel


@dataclass(frozen=True)
class Rollout:
    """states[0] = the start s_0; step t went states[t] -> states[t + 1] with actions[t] and
    probability probs[t] = B(states[t+1]|states[t], actions[t]); entries[t] is the model entry
    (TransitionModel row entry) that was drawn."""

    states: np.ndarray    # (L + 1,) representative state indices
    actions: np.ndarray   # (L,) action ids
    probs: np.ndarray     # (L,)
    entries: np.ndarray   # (L,)

    def __len__(self) -> int:
        return int(self.actions.size)


def roll_out(model: TransitionModel, start: int, rng: np.random.Generator,
             max_length: int) -> Rollout:
    """Sample Roll(start) of eq. 7 (at most ``max_length`` steps)."""
    if not 0 <= start < model.n_states:
        raise KernelError(f"roll-out start {start} is not a state index (0..{model.n_states - 1})")
    if max_length < 0:
        raise KernelError(f"max_length must be >= 0, got {max_length}")
    indptr, cumprob = model.indptr, model.cumprob
    draws = rng.random(max_length)
    states = [int(start)]
    entries: list[int] = []
    s = int(start)
    for u in draws:
        lo, hi = int(indptr[s]), int(indptr[s + 1])
        if lo == hi:
            break
        k = int(np.searchsorted(cumprob[lo:hi], u, side="right"))
        e = lo + min(k, hi - lo - 1)       # guards u against the last cumprob rounding below 1
        entries.append(e)
        s = int(model.next_state[e])
        states.append(s)
    e_arr = np.asarray(entries, dtype=np.int64)
    return Rollout(states=np.asarray(states, dtype=np.int64), actions=model.action[e_arr],
                   probs=model.prob[e_arr], entries=e_arr)
