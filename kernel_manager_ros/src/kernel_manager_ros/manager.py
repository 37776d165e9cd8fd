"""The kernel manager's decision at one simulation step (paper 001 §3.2), without ROS.

Given the simulation's state s and the program's action a, the manager finds the first active
kernel k (KernelIndex) and returns f_k(s, a). What the caller does with it depends on the kind:
  * motor kernel: the caller sets the simulator's state to next_state through the simulator's
    configuration interface (the parameters phi of §3.2), so the simulation returns f_k(s, a)
    and its sensors report it;
  * sensor kernel: only the data of the sensors it holds (``held``) are replaced (republished on
    <topic>_kernel): they keep reporting what they reported last, values and time stamps (eq. 9,
    §6.2; f_k is the identity on them); the other sensors and the simulation are untouched.
States outside every kernel's region get None: the simulation runs unmodified.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.kernel import KernelSet
from kernel_manager_ros.kernel_index import KernelIndex


@dataclass(frozen=True)
class Decision:
    index: int                 # kernel index in the set (application order)
    kind: str                  # "motor" | "sensor"
    activation: float          # e_k ∘ c_k(s)
    distance: float            # c_k(s), eq. 8
    next_state: np.ndarray     # f_k(s, a)
    held: tuple[str, ...] = ()  # sensor kernel: the sensors whose data it replaces


class KernelManager:
    """decide(state, action) -> Decision | None; pure (no ROS, no state between calls)."""

    def __init__(self, kernel_set: KernelSet) -> None:
        self.kernel_set = kernel_set
        self.index = KernelIndex(kernel_set)
        self.state_dim = kernel_set.state_dim
        self.action_dim = kernel_set.action_dim

    def check(self, state: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The state and action as float vectors; KernelError on wrong sizes or NaN/Inf."""
        s = np.asarray(state, dtype=float).reshape(-1)
        a = np.asarray(action, dtype=float).reshape(-1)
        if s.size != self.state_dim:
            raise KernelError(f"state has {s.size} values, the kernels expect {self.state_dim} "
                              f"({', '.join(self.kernel_set.state_names)})")
        if a.size != self.action_dim:
            raise KernelError(f"action has {a.size} values, the kernels expect "
                              f"{self.action_dim} ({', '.join(self.kernel_set.action_names)})")
        if not (np.isfinite(s).all() and np.isfinite(a).all()):
            raise KernelError("state or action holds NaN/Inf")
        return s, a

    def decide(self, state: np.ndarray, action: np.ndarray) -> Optional[Decision]:
        s, a = self.check(state, action)
        hit = self.index.first_active(s)
        if hit is None:
            return None
        k, activation = hit
        kernel = self.kernel_set.kernels[k]
        next_state = kernel.transfer.apply(s, a)
        if not np.isfinite(next_state).all():
            raise KernelError(f"kernel {k}'s transfer gives NaN/Inf at this state")
        return Decision(index=k, kind=kernel.kind, activation=activation,
                        distance=kernel.distance(s, self.kernel_set.weights),
                        next_state=next_state, held=kernel.held)
