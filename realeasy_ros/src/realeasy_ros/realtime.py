"""The fast real-time Realeasy step (paper 000 §IV-E, Algorithms 2-3) on physical joint states.

:class:`RealtimeResidual` runs one step of the unidirectional network per call in C++
(``realeasy_ros._realtime_lstm``, built by catkin from include/realeasy_ros/realtime_lstm.hpp):
the hidden states (h_t^l, c_t^l) of step t are kept for step t + 1, so each new joint state
costs two 21-dimensional LSTM cells and the dense layer, not a pass over the whole history.
The paper reports < 0.39 ms per step; bench/realtime_step.py measures this implementation.
"""
from __future__ import annotations

import numpy as np

from panda_sim2real import ConfigError
from realeasy_ros.networks import REALTIME
from realeasy_ros.model import RealeasyModel

try:
    from realeasy_ros._realtime_lstm import RealtimeLstm
except ImportError as exc:   # the extension is built by catkin, not by setup.py
    RealtimeLstm = None
    _IMPORT_ERROR = exc


def _lstm_core(model: RealeasyModel) -> "RealtimeLstm":
    """The C++ step built from ``model.network`` (RealtimeRealeasy: .lstm, .dense) and its
    scaler, in float64."""
    if RealtimeLstm is None:
        raise ConfigError(f"the C++ realtime step is not built ({_IMPORT_ERROR}); run "
                          f"'make workspace' and 'source env.sh'")
    lstm, dense = model.network.lstm, model.network.dense
    if lstm.bidirectional or not lstm.bias or lstm.proj_size != 0:
        raise ConfigError("the realtime step needs a unidirectional nn.LSTM with biases and "
                          "no projection")

    def array(name: str, module) -> np.ndarray:
        return getattr(module, name).detach().cpu().double().numpy()

    layers = range(lstm.num_layers)
    try:
        return RealtimeLstm(
            [array(f"weight_ih_l{k}", lstm) for k in layers],
            [array(f"weight_hh_l{k}", lstm) for k in layers],
            [array(f"bias_ih_l{k}", lstm) for k in layers],
            [array(f"bias_hh_l{k}", lstm) for k in layers],
            array("weight", dense), array("bias", dense),
            np.asarray(model.scaler.lower, dtype=np.float64),
            np.asarray(model.scaler.scale, dtype=np.float64))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"realtime model does not fit the C++ step: {exc}") from exc


def _describe(value: object) -> str:
    if isinstance(value, np.ndarray):
        flags = ("" if value.flags.c_contiguous else " non-contiguous") + (
            "" if value.flags.writeable else " read-only")
        return f"{value.dtype} {value.shape}{flags}"
    return type(value).__name__


class RealtimeResidual:
    """Realeasy in real time (paper 000 Algorithms 2-3): one C++ LSTM step per joint state.

    Each :meth:`update` feeds the physical simulator state x_t (float64, shape (3 dof,),
    [q, qd, tau] in rad, rad/s, N m) through the LSTM layers and the dense layer, keeping
    (h, c) for the next call. The first ``warmup_steps`` updates after construction or
    :meth:`reset` are the warm-up of Algorithm 2: the hidden state fills, the published state is
    the simulator's own (residual 0). Afterwards (Algorithm 3) the corrected state is x_t +
    NN(x_t). Over a trajectory this equals ``model.correct(states)`` (float64 instead of
    float32 arithmetic).

    Nothing is allocated per call: the caller passes the output arrays.
    """

    def __init__(self, model: RealeasyModel) -> None:
        if model.architecture != REALTIME:
            raise ConfigError(f"the real-time step needs a {REALTIME} model, got a "
                              f"{model.architecture} one (its bidirectional layers need the "
                              f"whole trajectory, Algorithm 1)")
        self._core = _lstm_core(model)
        self._shape = (self._core.input_size,)
        self._warmup = int(model.warmup_steps)
        self._joint_names = tuple(model.joint_names)
        self._steps = 0

    def update(self, x: np.ndarray, corrected_out: np.ndarray, residual_out: np.ndarray) -> bool:
        """One step on x (float64, C-contiguous, shape (3 dof,)): writes the physical residual
        into ``residual_out`` and x + residual into ``corrected_out`` (both float64 (3 dof,);
        ``corrected_out`` may be x itself). During warm-up the residual written is 0 and
        ``corrected_out`` is x. Returns True when the residual was applied (warmed up).
        ValueError for arrays of another dtype, shape or layout (the state is then unchanged)."""
        if residual_out is x or residual_out is corrected_out:
            raise ValueError("residual_out must be an array of its own, not x or corrected_out")
        if (not isinstance(corrected_out, np.ndarray) or corrected_out.dtype != np.float64
                or corrected_out.shape != self._shape or not corrected_out.flags.c_contiguous
                or not corrected_out.flags.writeable):
            raise ValueError(f"corrected_out must be a writeable C-contiguous float64 array of "
                             f"shape {self._shape}, got {_describe(corrected_out)}")
        self._core.step(x, residual_out)     # validates x and residual_out (dtype, shape, layout)
        self._steps += 1
        if self._steps <= self._warmup:
            residual_out.fill(0.0)
            np.copyto(corrected_out, x)
            return False
        np.add(x, residual_out, out=corrected_out)
        return True

    def reset(self) -> None:
        """Zero (h, c) and restart the warm-up (Algorithm 2 line 4), e.g. for a new episode."""
        self._core.reset()
        self._steps = 0

    @property
    def steps(self) -> int:
        """Updates since construction or the last :meth:`reset`."""
        return self._steps

    @property
    def warmup_steps(self) -> int:
        """T_Warmup of Algorithm 2 (from the model file)."""
        return self._warmup

    @property
    def warmed_up(self) -> bool:
        """True once ``warmup_steps`` updates have filled the hidden state: the next update
        applies the residual."""
        return self._steps >= self._warmup

    @property
    def hidden_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of (h, c), each (num_layers, hidden_size), as of the last update."""
        return np.array(self._core.h), np.array(self._core.c)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self._joint_names

    @property
    def dof(self) -> int:
        return len(self._joint_names)


__all__ = ["RealtimeResidual"]
