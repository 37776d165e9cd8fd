"""The online identifier's training step: Adam on the loss L_ID (paper 002 eq. 2) of a
:class:`~diffnea_ros.learnable.LearnableDynamics`, never leaving a parameter NaN or Inf."""
from __future__ import annotations

import threading
from typing import Optional

import torch

from diffnea_ros.identification import Samples
from diffnea_ros.learnable import LearnableDynamics


class OnlineTrainer:
    """Adam (``learning_rate``) on the trainable parameters of ``dynamics``. Thread-safe."""

    def __init__(self, dynamics: LearnableDynamics, learning_rate: float) -> None:
        self.dynamics = dynamics
        self.parameters = [p for p in dynamics.parameters() if p.requires_grad]
        self._optimiser = torch.optim.Adam(self.parameters, lr=learning_rate)
        self._lock = threading.Lock()        # dynamics + optimiser

    def update(self, batch: Samples) -> Optional[list[torch.Tensor]]:
        """One Adam step on L_ID (eq. 2) over ``batch``: copies of the trained parameters' new
        values, or None when the loss, a gradient or the result is not finite (parameters
        unchanged)."""
        with self._lock:
            self._optimiser.zero_grad(set_to_none=True)
            loss = ((self.dynamics(batch.q, batch.qd, batch.qdd) - batch.tau) ** 2).sum(dim=1).mean()
            finite = bool(torch.isfinite(loss))
            if finite:
                loss.backward()
                finite = all(p.grad is None or bool(torch.isfinite(p.grad).all())
                             for p in self.parameters)
            if not finite:
                self._optimiser.zero_grad(set_to_none=True)
                return None
            before = [p.detach().clone() for p in self.parameters]
            self._optimiser.step()
            if not all(bool(torch.isfinite(p).all()) for p in self.parameters):
                with torch.no_grad():
                    for p, old in zip(self.parameters, before):
                        p.copy_(old)
                return None
            return [p.detach().clone() for p in self.parameters]
