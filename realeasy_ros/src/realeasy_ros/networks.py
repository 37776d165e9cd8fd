"""The Realeasy residual networks (paper 000 §IV-C) and the MSrE loss (§IV-A, eq. 9-10).

Both networks read the normalised 21-dimensional state x_t = [q, qd, tau] of the simulation
(see :mod:`panda_pairs.normalisation`) and output the residual NN(x)_t, so that the corrected,
"realistic" state is x_t + NN(x)_t.

* ``precise`` (Algorithm 1): dropout on the input, bidirectional LSTM layers whose forward and
  backward outputs are concatenated, [h_f^0, h_b^0], as the input of the next bidirectional
  layer; the last layer's forward and backward outputs are summed, h^1 = h_f^1 + h_b^1; a dense
  layer maps h^1 to the residual.
* ``realtime`` (Algorithms 2-3, "Realeasy"): the same without the backward direction, so that
  the hidden states (h_t^l, c_t^l) of step t are all step t + 1 needs: :meth:`RealtimeRealeasy.step`.

The LSTM cells are PyTorch's (eq. 2-7): sigmoid gates, tanh candidate (5) and tanh on the cell
output (7), as §IV-C argues (the residual lies in [-1, 1] and tanh keeps dropout stable).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Optional

import torch
from torch import nn

PRECISE = "precise"
REALTIME = "realtime"
ARCHITECTURES = (PRECISE, REALTIME)

LSTMState = tuple[torch.Tensor, torch.Tensor]   # (h, c), each (num_layers, batch, hidden)


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of a Realeasy network. The defaults follow paper 000 §IV-C: two LSTM layers
    working on 21-dimensional vectors ("the matrix-vector multiplications in (2)-(5) are
    21-dimensional") and dropout on the input."""

    architecture: str = REALTIME
    input_size: int = 21
    hidden_size: int = 21
    num_layers: int = 2
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, "
                             f"got {self.architecture!r}")
        for name in ("input_size", "hidden_size", "num_layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "ModelSpec":
        """Inverse of :meth:`to_dict`; ValueError for unknown keys or bad values."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown model spec key(s) {unknown}")
        return cls(**values)


class PreciseRealeasy(nn.Module):
    """Bidirectional Realeasy network (paper 000 §IV-C, Algorithm 1)."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.spec = spec
        self.input_dropout = nn.Dropout(spec.dropout)
        sizes = [spec.input_size] + [2 * spec.hidden_size] * (spec.num_layers - 1)
        self.layers = nn.ModuleList(
            nn.LSTM(size, spec.hidden_size, batch_first=True, bidirectional=True)
            for size in sizes)
        self.dense = nn.Linear(spec.hidden_size, spec.input_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Residual NN(x) of shape (batch, T, input_size) for x of that shape (whole sequences)."""
        h = self.input_dropout(x)
        for layer in self.layers:
            h, _ = layer(h)                      # (batch, T, 2 hidden) = [h_f, h_b]
        hidden = self.spec.hidden_size
        return self.dense(h[..., :hidden] + h[..., hidden:])   # h^1 = h_f^1 + h_b^1


class RealtimeRealeasy(nn.Module):
    """Unidirectional Realeasy network (paper 000 §IV-C, Algorithms 2-3)."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.spec = spec
        self.input_dropout = nn.Dropout(spec.dropout)
        self.lstm = nn.LSTM(spec.input_size, spec.hidden_size, num_layers=spec.num_layers,
                            batch_first=True)
        self.dense = nn.Linear(spec.hidden_size, spec.input_size)

    def forward(self, x: torch.Tensor, state: Optional[LSTMState] = None) -> torch.Tensor:
        """Residual NN(x) of shape (batch, T, input_size), starting from ``state`` (zeros if
        None, Algorithm 2 line 4)."""
        h, _ = self.lstm(self.input_dropout(x), state)
        return self.dense(h)

    def initial_state(self, batch: int = 1) -> LSTMState:
        """h_{-1}^l = c_{-1}^l = 0 (Algorithm 2 line 4)."""
        zeros = torch.zeros(self.spec.num_layers, batch, self.spec.hidden_size,
                            dtype=self.dense.weight.dtype, device=self.dense.weight.device)
        return zeros, zeros.clone()

    def step(self, x_t: torch.Tensor, state: Optional[LSTMState] = None
             ) -> tuple[torch.Tensor, LSTMState]:
        """One time step (Algorithm 3 lines 4-6): x_t of shape (input_size,) or (batch,
        input_size) and the (h, c) of the previous step give NN(x)_t (same leading shape) and
        the new (h, c). Feeding a sequence step by step equals :meth:`forward` on it."""
        squeeze = x_t.dim() == 1
        x = x_t.reshape(1 if squeeze else x_t.shape[0], 1, self.spec.input_size)
        if state is None:
            state = self.initial_state(x.shape[0])
        h, new_state = self.lstm(self.input_dropout(x), state)
        residual = self.dense(h[:, 0])
        return (residual[0] if squeeze else residual), new_state


def build_network(spec: ModelSpec) -> nn.Module:
    """The network of ``spec.architecture``."""
    return PreciseRealeasy(spec) if spec.architecture == PRECISE else RealtimeRealeasy(spec)


def channel_weights(position: float = 1.0, velocity: float = 1.0, torque: float = 1.0,
                    dof: int = 7) -> torch.Tensor:
    """Per-column loss weights for the [q, qd, tau] layout (paper 000: all equal)."""
    values = (position, velocity, torque)
    if any(not (float(v) >= 0.0) for v in values) or sum(values) <= 0.0:
        raise ValueError(f"channel weights must be non-negative and not all zero, got {values}")
    return torch.tensor(values, dtype=torch.float32).repeat_interleave(dof)


def msre_loss(x: torch.Tensor, y: torch.Tensor, residual: torch.Tensor,
              weights: Optional[torch.Tensor] = None,
              mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Mean squared residual error, paper 000 eq. (9)-(10): mean of (Y_t - (X_t + NN(X)_t))^2.

    ``weights`` (columns,) weight the columns (normalised to mean 1, so equal weights give the
    plain MSE); ``mask`` (batch, T) of 0/1 selects the time steps that count (e.g. not the
    warm-up steps of the realtime model).
    """
    err = (y - (x + residual)) ** 2
    if weights is not None:
        err = err * (weights / weights.mean()).to(err)
    if mask is None:
        return err.mean()
    mask = mask.to(err).unsqueeze(-1)
    count = mask.sum() * err.shape[-1]
    if count <= 0:
        raise ValueError("the loss mask selects no time step")
    return (err * mask).sum() / count
