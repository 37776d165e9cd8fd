"""Histories H = {(s_i, a_i, r_i, s'_i)} (paper 001 eq. 4) with time-stamped sensors (eq. 9).

A History is a flat table of transitions; ``episodes`` says which run each transition came from
(roll-outs never need it, but plots and splits do). Build one from whole episodes
(``History.from_episodes``), from bags (``bag_history.read_history``) or from arrays.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from kernel_manager_ros.errors import KernelError


@dataclass(frozen=True)
class Episode:
    """One run: T + 1 states (the last has no action), T actions and T rewards (r_t follows
    a_t in s_t), and the time stamp of every sensor's value in each state (eq. 9)."""

    states: np.ndarray     # (T + 1, d)
    actions: np.ndarray    # (T, m)
    rewards: np.ndarray    # (T,)
    stamps: np.ndarray     # (T + 1, n_sensors)


@dataclass(frozen=True)
class History:
    """H of eq. 4: row i is the transition (states[i], actions[i], rewards[i], next_states[i]);
    stamps[i] / next_stamps[i] are the sensor time stamps of states[i] / next_states[i]
    (eq. 9); episodes[i] numbers the run the transition belongs to."""

    states: np.ndarray       # (N, d)
    actions: np.ndarray      # (N, m)
    rewards: np.ndarray      # (N,)
    next_states: np.ndarray  # (N, d)
    stamps: np.ndarray       # (N, n_sensors)
    next_stamps: np.ndarray  # (N, n_sensors)
    episodes: np.ndarray     # (N,) int

    def __len__(self) -> int:
        return int(self.states.shape[0])

    @property
    def state_dim(self) -> int:
        return int(self.states.shape[1])

    @property
    def action_dim(self) -> int:
        return int(self.actions.shape[1])

    def validate(self, what: str = "history", state_dim: Optional[int] = None,
                 action_dim: Optional[int] = None) -> "History":
        """Check shapes and values; KernelError on an empty history, mismatched lengths or
        dimensions, or NaN/Inf anywhere. Returns self so calls chain."""
        arrays = {"states": self.states, "actions": self.actions, "rewards": self.rewards,
                  "next_states": self.next_states, "stamps": self.stamps,
                  "next_stamps": self.next_stamps, "episodes": self.episodes}
        for name, array in arrays.items():
            if not isinstance(array, np.ndarray):
                raise KernelError(f"{what}: {name} must be a NumPy array")
        n = self.states.shape[0] if self.states.ndim == 2 else -1
        if n <= 0:
            raise KernelError(f"{what} is empty (no transitions)" if n == 0 else
                              f"{what}: states must be a 2-D array (N, d), got shape "
                              f"{self.states.shape}")
        expected = {"actions": 2, "rewards": 1, "next_states": 2, "stamps": 2,
                    "next_stamps": 2, "episodes": 1}
        for name, ndim in expected.items():
            array = arrays[name]
            if array.ndim != ndim or array.shape[0] != n:
                raise KernelError(f"{what}: {name} has shape {array.shape}, expected {n} rows "
                                  f"({ndim}-D) like states {self.states.shape}")
        if self.next_states.shape[1] != self.states.shape[1]:
            raise KernelError(f"{what}: next_states have {self.next_states.shape[1]} columns, "
                              f"states {self.states.shape[1]}")
        if self.next_stamps.shape[1] != self.stamps.shape[1]:
            raise KernelError(f"{what}: next_stamps have {self.next_stamps.shape[1]} columns, "
                              f"stamps {self.stamps.shape[1]}")
        if state_dim is not None and self.states.shape[1] != state_dim:
            raise KernelError(f"{what}: states have {self.states.shape[1]} dimensions, the "
                              f"spec has {state_dim}")
        if action_dim is not None and self.actions.shape[1] != action_dim:
            raise KernelError(f"{what}: actions have {self.actions.shape[1]} dimensions, the "
                              f"spec has {action_dim}")
        for name in ("states", "actions", "rewards", "next_states", "stamps", "next_stamps"):
            array = arrays[name]
            if not np.issubdtype(array.dtype, np.number):
                raise KernelError(f"{what}: {name} must be numeric, got {array.dtype}")
            bad = ~np.isfinite(array)
            if bad.any():
                row = int(np.argwhere(bad)[0][0])
                raise KernelError(f"{what}: {name} holds NaN/Inf (first at transition {row})")
        return self

    @classmethod
    def from_episodes(cls, episodes: Sequence[Episode], what: str = "history") -> "History":
        """Flatten episodes into transitions (episode k's rows get episodes == k)."""
        if not episodes:
            raise KernelError(f"{what} is empty (no episodes)")
        parts = []
        for k, e in enumerate(episodes):
            states, actions = np.asarray(e.states, float), np.asarray(e.actions, float)
            rewards, stamps = np.asarray(e.rewards, float), np.asarray(e.stamps, float)
            if states.ndim != 2 or actions.ndim != 2 or stamps.ndim != 2 or rewards.ndim != 1:
                raise KernelError(f"{what}: episode {k}: states (T+1, d), actions (T, m), "
                                  f"rewards (T,), stamps (T+1, n) expected")
            t = actions.shape[0]
            if states.shape[0] != t + 1 or rewards.shape[0] != t or stamps.shape[0] != t + 1:
                raise KernelError(f"{what}: episode {k} has {states.shape[0]} states, {t} "
                                  f"actions, {rewards.shape[0]} rewards, {stamps.shape[0]} "
                                  f"stamps (need T + 1, T, T, T + 1)")
            if t == 0:
                continue
            parts.append(cls(states=states[:-1], actions=actions, rewards=rewards,
                             next_states=states[1:], stamps=stamps[:-1],
                             next_stamps=stamps[1:], episodes=np.full(t, k, dtype=np.int64)))
        if not parts:
            raise KernelError(f"{what} is empty (no episode has a transition)")
        return concatenate(parts, what)

    @classmethod
    def concatenate(cls, histories: Sequence["History"], what: str = "history") -> "History":
        """See the module function :func:`concatenate`."""
        return concatenate(histories, what)


def concatenate(histories: Sequence[History], what: str = "history") -> History:
    """One History holding all rows in order; episode numbers are renumbered so that runs of
    different histories never share a number."""
    if not histories:
        raise KernelError(f"{what} is empty (nothing to concatenate)")
    episodes, offset = [], 0
    for h in histories:
        e = np.asarray(h.episodes, dtype=np.int64)
        if e.size:
            _, renumbered = np.unique(e, return_inverse=True)
            episodes.append(renumbered.reshape(-1) + offset)
            offset += int(renumbered.max()) + 1
        else:
            episodes.append(e)
    joined = History(
        states=np.concatenate([h.states for h in histories]),
        actions=np.concatenate([h.actions for h in histories]),
        rewards=np.concatenate([h.rewards for h in histories]),
        next_states=np.concatenate([h.next_states for h in histories]),
        stamps=np.concatenate([h.stamps for h in histories]),
        next_stamps=np.concatenate([h.next_stamps for h in histories]),
        episodes=np.concatenate(episodes))
    return joined.validate(what)
