"""The redesign of paper 001 §4 with SARSA: a learned speed rule for the delivery program.

The paper: "we chose to use a SARSA reinforcement learning algorithm in conjunction with the
kernel-modified simulation to select modified control values that maximized the reward. The
resulting robot program issued faster velocity values when non-zero pitch values were
encountered." It gives no state, action or reward details; ours (our choices, stated):

* state: the bin of the program's pitch reading |pitch| (``edges``, default the program's
  dead band 0.05 rad: flat / pitched);
* action: a factor on the program's commanded speed (``factors``, default 1, 1.25, 1.5, 2),
  chosen when the pitch bin changes (and at a mission's start) and held while it does not: a
  decision per flat or pitched stretch (SARSA over these temporally extended actions). Measured
  first with a decision at every 10 Hz control step: one step's factor barely changes the
  mission's reward, all Q values came out within 0.06 of each other and the greedy rule was
  the design's (factor 1 everywhere, redeploy ATR -7.37);
* reward: the performance measure perf(t) of §4 summed over the control steps of the stretch
  (+1 at a goal on time, -1 for every step past a deadline, 0 otherwise; the sum over a mission
  is its total reward), undiscounted (gamma 1), the mission's end terminal;
* on-policy tabular SARSA, epsilon-greedy, Q = 0 at the start (``SarsaSpeedPolicy``), trained
  over missions of the kernel-modified simulation (the program calls ``factor`` and ``end``,
  ``MissionProgram.speed_policy``); the redesigned program is the greedy table
  (``TableSpeedPolicy``), which does not learn.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from kernel_manager_ros.errors import KernelError


def _bin(edges: np.ndarray, pitch: float) -> int:
    return int(np.searchsorted(edges, abs(float(pitch)), side="right"))


class TableSpeedPolicy:
    """A fixed speed rule: factor = ``table[bin(|pitch|)]``; learns nothing."""

    def __init__(self, edges: Sequence[float], table: Sequence[float]) -> None:
        self.edges = np.asarray(edges, dtype=float)
        self.table = [float(f) for f in table]
        if len(self.table) != self.edges.size + 1:
            raise KernelError(f"speed table: {self.edges.size + 1} factors needed, got "
                              f"{len(self.table)}")

    def factor(self, pitch: float, perf: float) -> float:
        return self.table[_bin(self.edges, pitch)]

    def end(self, perf: float) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"pitch_edges": self.edges.tolist(), "speed_factors": list(self.table)}


class SarsaSpeedPolicy:
    """Tabular SARSA over (pitch bin, speed factor) with epsilon-greedy actions, an action held
    while the pitch bin stays the same (module docstring). ``factor(pitch, perf)``: perf is the
    reward of the previous control step."""

    def __init__(self, edges: Sequence[float] = (0.05,),
                 factors: Sequence[float] = (1.0, 1.25, 1.5, 2.0), alpha: float = 0.1,
                 gamma: float = 1.0, epsilon: float = 0.1,
                 rng: Optional[np.random.Generator] = None) -> None:
        if not factors or any(f <= 0 for f in factors):
            raise KernelError(f"SARSA: speed factors must be > 0, got {list(factors)}")
        if not 0 < alpha <= 1 or not 0 <= gamma <= 1 or not 0 <= epsilon <= 1:
            raise KernelError(f"SARSA: need 0 < alpha <= 1, 0 <= gamma, epsilon <= 1; got "
                              f"{alpha}, {gamma}, {epsilon}")
        self.edges = np.sort(np.asarray(edges, dtype=float))
        self.factors = [float(f) for f in factors]
        self.alpha, self.gamma, self.epsilon = float(alpha), float(gamma), float(epsilon)
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.q = np.zeros((self.edges.size + 1, len(self.factors)))
        self.visits = np.zeros_like(self.q, dtype=int)
        self.updates = 0
        self._prev: Optional[tuple[int, int]] = None
        self._reward = 0.0             # perf summed since the last decision

    def _choose(self, state: int) -> int:
        if self.rng.random() < self.epsilon:
            return int(self.rng.integers(len(self.factors)))
        row = self.q[state]
        return int(self.rng.choice(np.flatnonzero(row == row.max())))   # ties at random

    def _update(self, target: float) -> None:
        if self._prev is None:
            return
        s, a = self._prev
        self.q[s, a] += self.alpha * (self._reward + target - self.q[s, a])
        self.updates += 1

    def factor(self, pitch: float, perf: float) -> float:
        state = _bin(self.edges, pitch)
        if self._prev is not None:
            self._reward += float(perf)
            if state == self._prev[0]:              # the same stretch: the action holds
                return self.factors[self._prev[1]]
        action = self._choose(state)
        self._update(self.gamma * self.q[state, action])
        self._prev, self._reward = (state, action), 0.0
        self.visits[state, action] += 1
        return self.factors[action]

    def end(self, perf: float) -> None:
        """The mission's last step: terminal update (no successor), next mission starts fresh."""
        if self._prev is not None:
            self._reward += float(perf)
        self._update(0.0)
        self._prev, self._reward = None, 0.0

    def greedy(self) -> TableSpeedPolicy:
        """The learned program: the best factor per pitch bin (ties: the smaller factor)."""
        return TableSpeedPolicy(self.edges, [self.factors[int(np.argmax(row))]
                                             for row in self.q])

    def to_dict(self) -> dict[str, Any]:
        return {"pitch_edges": self.edges.tolist(), "speed_factors": list(self.factors),
                "alpha": self.alpha, "gamma": self.gamma, "epsilon": self.epsilon,
                "q": self.q.round(4).tolist(), "visits": self.visits.tolist(),
                "updates": self.updates}
