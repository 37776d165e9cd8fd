"""The Realeasy model file: weights, architecture, scaler, joint names and order, rate, warm-up and
training metadata in one ``.pt`` that loads on another machine with this library alone.

The file is a ``torch.save`` of a dict holding only tensors, strings, numbers, lists and dicts,
and it is read with ``torch.load(..., weights_only=True)``: unpickling is restricted to those
types, so a file carrying code (a pickle with a ``__reduce__`` payload) is refused, never run.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import torch
from torch import nn

from panda_sim2real import ConfigError
from realeasy_ros.networks import PRECISE, REALTIME, ModelSpec, build_network
from panda_pairs import JointLimitScaler
from sim2real_checks import atomic_path

FORMAT = "realeasy_ros/model"
VERSION = 1
_REQUIRED = ("format", "version", "spec", "state_dict", "scaler_lower", "scaler_upper",
             "joint_names", "rate", "warmup_steps", "metadata")


@dataclass
class RealeasyModel:
    """A trained Realeasy network with everything needed to use it on physical joint states.

    ``warmup_steps`` is T_Warmup of Algorithm 2: for the realtime network, the first that many
    steps of a stream publish the simulator's state unchanged while the hidden state fills.
    """

    network: nn.Module
    spec: ModelSpec
    scaler: JointLimitScaler
    joint_names: tuple[str, ...]
    rate: float                       # Hz of the data it was trained on
    warmup_steps: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return self.spec.architecture

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def data_label(self) -> str:
        """The robot the training data came from (``train`` stores it as ``data_label``)."""
        return str(self.metadata.get("data_label") or self.metadata.get("label") or "unknown data")

    @property
    def effective_warmup_steps(self) -> int:
        """Steps at the start of a sequence whose residual is not used: T_Warmup for the
        realtime network (Algorithm 2), none for the precise one (Algorithm 1)."""
        return int(self.warmup_steps) if self.architecture == REALTIME else 0

    def check_compatible(self, joint_names: Sequence[str], source: str = "the data") -> None:
        """ConfigError unless ``joint_names`` are the model's joints in the model's order."""
        if tuple(joint_names) != self.joint_names:
            raise ConfigError(f"model is for joints {list(self.joint_names)}, {source} has "
                              f"{list(joint_names)}")

    @torch.no_grad()
    def residual(self, states: np.ndarray, warmup: bool = True) -> np.ndarray:
        """Physical residual (T, 3 dof) of one whole trajectory of physical simulator states
        (T, 3 dof) [rad, rad/s, N m]. For the realtime network with ``warmup``, the residual of
        the first ``warmup_steps`` steps is zero (Algorithm 2: the simulator's state is used
        while the hidden state fills)."""
        states = np.asarray(states, dtype=float)
        if states.ndim != 2 or states.shape[1] != self.spec.input_size:
            raise ValueError(f"expected states of shape (T, {self.spec.input_size}), "
                             f"got {states.shape}")
        self.network.eval()
        x = torch.as_tensor(self.scaler.transform(states), dtype=torch.float32)[None]
        residual = self.network(x)[0].double().numpy() * self.scaler.scale
        if warmup:
            residual[:self.effective_warmup_steps] = 0.0
        return residual

    def correct(self, states: np.ndarray, warmup: bool = True) -> np.ndarray:
        """Corrected ("realistic") physical states X + NN(X) of one trajectory (eq. 9)."""
        return np.asarray(states, dtype=float) + self.residual(states, warmup=warmup)

    def save(self, path: str) -> None:
        """Write the model file (atomically: temp file, then rename)."""
        payload = {
            "format": FORMAT, "version": VERSION, "spec": self.spec.to_dict(),
            "state_dict": {k: v.detach().cpu().clone() for k, v in
                           self.network.state_dict().items()},
            "scaler_lower": torch.as_tensor(self.scaler.lower, dtype=torch.float64),
            "scaler_upper": torch.as_tensor(self.scaler.upper, dtype=torch.float64),
            "joint_names": list(self.joint_names), "rate": float(self.rate),
            "warmup_steps": int(self.warmup_steps), "metadata": dict(self.metadata),
        }
        with atomic_path(path) as tmp:
            torch.save(payload, tmp)


def _fail(path: str, why: str) -> ConfigError:
    return ConfigError(f"model file {path}: {why}")


def load_model(path: str, architecture: Optional[str] = None) -> RealeasyModel:
    """Read a model file written by :meth:`RealeasyModel.save`, without executing code from it.

    Raises ConfigError (one line) if the file is missing, corrupt, carries anything but
    tensors and plain values, or is inconsistent; and if ``architecture`` is given and differs.
    """
    if not os.path.isfile(path):
        raise ConfigError(f"model file not found: {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:   # noqa: BLE001 - torch raises many kinds for a bad file
        detail = " ".join(str(exc).split())
        found = re.search(r"GLOBAL ([\w.]+)", detail)
        if found:   # the restricted unpickler met a global: a class or function to call
            raise _fail(path, f"refused: it holds objects other than tensors and plain "
                              f"values ({found.group(1)}); loading it could run code") from exc
        unpickler = re.search(r"WeightsUnpickler error: (.*?)(?: Check the documentation|$)",
                              detail)
        reason = unpickler.group(1) if unpickler else (detail[:200] or type(exc).__name__)
        raise _fail(path, f"not a tensors-only torch model file, or corrupt; the safe loader "
                          f"stopped ({reason})") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise _fail(path, f"not a Realeasy model file (no format '{FORMAT}')")
    missing = [k for k in _REQUIRED if k not in payload]
    if missing:
        raise _fail(path, f"lacks {', '.join(missing)}")
    if payload["version"] != VERSION:
        raise _fail(path, f"version {payload['version']} is not supported (this library reads "
                          f"version {VERSION})")
    try:
        spec = ModelSpec.from_dict(dict(payload["spec"]))
        names = tuple(str(n) for n in payload["joint_names"])
        scaler = JointLimitScaler.from_arrays({
            "lower": np.asarray(payload["scaler_lower"], dtype=float),
            "upper": np.asarray(payload["scaler_upper"], dtype=float),
            "joint_names": np.array(names, dtype=str)})
        if spec.input_size != 3 * len(names):
            raise ValueError(f"input size {spec.input_size} does not fit {len(names)} joints "
                             f"x [q, qd, tau]")
        network = build_network(spec)
        network.load_state_dict(payload["state_dict"], strict=True)
        rate = float(payload["rate"])
        warmup = int(payload["warmup_steps"])
        if not rate > 0.0 or warmup < 0:
            raise ValueError(f"rate {rate} must be positive and warm-up {warmup} non-negative")
        metadata = dict(payload["metadata"])
    except (ValueError, TypeError, KeyError, RuntimeError, ConfigError) as exc:
        raise _fail(path, " ".join(str(exc).split())[:300]) from exc
    if architecture is not None and spec.architecture != architecture:
        raise _fail(path, f"holds a {spec.architecture} model, a {architecture} one is needed")
    for p in network.parameters():
        if not torch.all(torch.isfinite(p)):
            raise _fail(path, "has non-finite weights")
    network.eval()
    return RealeasyModel(network, spec, scaler, names, rate, warmup, metadata)


__all__ = ["FORMAT", "VERSION", "PRECISE", "REALTIME", "RealeasyModel", "load_model"]
