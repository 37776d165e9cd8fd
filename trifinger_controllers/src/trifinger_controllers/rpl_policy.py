"""Residual policy learning, RPL (paper 004 §V "Residual Policy Learning", §VI, Table IV): the
runtime side, what a controller node loads (torch and NumPy only; training is rpl_training.py).

A learned policy adds a small corrective torque ``a_r`` in [-0.05, 0.05] N m per joint to the
torque ``a_0`` of a structured controller (CPC, CIC or MP): the agent sees the state and the base
action, ``a_r ~ pi(s, a_0)``, and the robot receives ``a_0 + a_r`` (clipped to the 0.397 N m limit).

* :func:`policy_input`: the policy's input from what a controller sees (an
  :class:`~trifinger_controllers.types.Observation`) and the base torque; layout
  :data:`OBSERVATION_LAYOUT` (version :data:`OBSERVATION_LAYOUT_VERSION`, fixed scales, no running
  statistics, so that a policy file is self-contained).
* :class:`ResidualActor`: the paper's architecture, "the observation and base action are
  separately embedded into a 64-dimensional space. These embeddings are then concatenated and
  passed to a three-layer feed-forward network that outputs a Gaussian distribution over torque
  actions. Actions are sampled from this distribution, squashed using a tanh function, and then
  scaled to fit in the [-0.05, 0.05] range": each embedding is Linear-LayerNorm-ReLU-Linear-LayerNorm
  (to 64, :func:`embeddings`), the two are concatenated and passed through a ReLU; then 256-256
  hidden layers and the Gaussian's mean and log-std heads (three layers). Its parameters are named
  as in stable-baselines3's SAC ``Actor`` (what rpl_training.py trains), so one state dict fits
  both; deployment uses the deterministic action, the tanh of the mean.
* :class:`ResidualController`: a base controller plus a loaded policy, named ``"<base>+rpl"``, at
  the base controller's rate.
* :func:`save_policy` / :func:`read_policy` / :func:`load_policy`: the policy file is a
  ``torch.save`` of plain values and tensors only (the actor's ``state_dict`` and its metadata: base
  controller, grasp, level, residual scale, observation layout, network sizes, training summary),
  read with ``torch.load(weights_only=True)`` into a freshly built network: no pickle with code is
  ever executed (SB3's own ``.zip`` is not used for that reason: it is loaded with cloudpickle).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch
from torch import nn

from sim2real_checks import atomic_path

from trifinger_controllers import cube
from trifinger_controllers.controllers.base import Controller
from trifinger_controllers.errors import TrifingerError
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.types import N_JOINTS, TORQUE_LIMIT, Observation

FORMAT = "trifinger_controllers/residual-policy"
VERSION = 1
#: Residual torque bound [N m] (paper §VI: [-0.05, 0.05]).
RESIDUAL_SCALE = 0.05
EMBEDDING_SIZE = 64
HIDDEN_LAYERS = (256, 256)
OBSERVATION_LAYOUT_VERSION = 1
#: (name, size, scale): the policy input is concat(value / scale), then the base torque / 0.397.
OBSERVATION_LAYOUT: Tuple[Tuple[str, int, float], ...] = (
    ("joint_position", 9, 1.0),            # rad
    ("joint_velocity", 9, 10.0),           # rad/s
    ("tip_position", 9, 0.1),              # m, world frame (forward kinematics of q)
    ("cube_position", 3, 0.1),             # m, camera (10 Hz, delayed)
    ("cube_rotation", 6, 1.0),             # first two columns of the cube's rotation matrix
    ("goal_position", 3, 0.1),             # m
    ("goal_minus_cube", 3, 0.05),          # m
    ("goal_rotation", 6, 1.0),             # as cube_rotation
    ("tip_in_cube_frame", 9, 0.05),        # m, tips relative to the observed cube
    ("camera_age", 1, 0.1),                # s since the image of the cube pose was taken
)
STATE_DIM = sum(size for _, size, _ in OBSERVATION_LAYOUT)
INPUT_DIM = STATE_DIM + N_JOINTS
#: Velocities and camera ages beyond these many scales are clipped (the rest is bounded anyway).
INPUT_CLIP = 10.0


class PolicyFileError(TrifingerError):
    """A residual policy file that cannot be used (corrupt, unsafe, inconsistent, mismatching)."""


# ------------------------------------------------------------------------------ policy input
def _rotation6(orientation: np.ndarray) -> np.ndarray:
    return cube.to_matrix(np.asarray(orientation, float))[:, :2].T.reshape(6)


def state_features(observation: Observation, kinematics: FingerKinematics) -> np.ndarray:
    """The (STATE_DIM,) state part of the policy input (:data:`OBSERVATION_LAYOUT`, scaled)."""
    robot, pose, goal = observation.robot, observation.cube, observation.goal
    tips = kinematics.tip_positions(robot.position)
    values = (
        robot.position,
        robot.velocity,
        tips.reshape(9),
        pose.position,
        _rotation6(pose.orientation),
        goal.position,
        np.asarray(goal.position, float) - np.asarray(pose.position, float),
        _rotation6(goal.orientation),
        cube.to_cube_frame(pose, tips).reshape(9),
        [robot.time - pose.stamp],
    )
    parts = [np.asarray(v, float).reshape(size) / scale
             for v, (_, size, scale) in zip(values, OBSERVATION_LAYOUT)]
    return np.clip(np.concatenate(parts), -INPUT_CLIP, INPUT_CLIP)


def policy_input(observation: Observation, base_torque: np.ndarray,
                 kinematics: FingerKinematics) -> np.ndarray:
    """(INPUT_DIM,) float32: the scaled state, then the base torque / TORQUE_LIMIT."""
    base = np.asarray(base_torque, float).reshape(N_JOINTS) / TORQUE_LIMIT
    return np.concatenate([state_features(observation, kinematics), base]).astype(np.float32)




# ------------------------------------------------------------------------------ networks
def _embedding(n_in: int, size: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, 2 * size), nn.LayerNorm(2 * size), nn.ReLU(),
                         nn.Linear(2 * size, size), nn.LayerNorm(size))


def embeddings(module: nn.Module, input_dim: int, state_dim: int, embedding_size: int) -> None:
    """Give ``module`` the paper's two embeddings: ``state_embedding`` of the first ``state_dim``
    inputs and ``action_embedding`` of the rest (the base action), ``embedding_size`` each."""
    if not 0 < state_dim < input_dim:
        raise TrifingerError(f"state_dim {state_dim} must be in (0, {input_dim})")
    module.state_dim = int(state_dim)
    module.state_embedding = _embedding(module.state_dim, embedding_size)
    module.action_embedding = _embedding(input_dim - module.state_dim, embedding_size)


def embed(module: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """The features of ``module``'s embeddings (:func:`embeddings`): both embeddings,
    concatenated, through a ReLU (paper §VI)."""
    state, action = inputs[..., :module.state_dim], inputs[..., module.state_dim:]
    return torch.relu(torch.cat([module.state_embedding(state), module.action_embedding(action)], -1))


class ResidualFeatures(nn.Module):
    """The embedding of the state and of the base action (:func:`embeddings`, :func:`embed`)."""

    def __init__(self, input_dim: int = INPUT_DIM, state_dim: int = STATE_DIM,
                 embedding_size: int = EMBEDDING_SIZE) -> None:
        super().__init__()
        embeddings(self, input_dim, state_dim, embedding_size)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return embed(self, inputs)


class ResidualActor(nn.Module):
    """The policy network (module docstring), parameters named as in SB3's SAC ``Actor``:
    ``features_extractor``, ``latent_pi`` (Linear-ReLU per hidden layer), ``mu`` and ``log_std``.
    ``forward`` is the deterministic squashed action in [-1, 1], tanh of the Gaussian's mean."""

    def __init__(self, embedding_size: int = EMBEDDING_SIZE, hidden: Tuple[int, ...] = HIDDEN_LAYERS,
                 state_dim: int = STATE_DIM, input_dim: int = INPUT_DIM) -> None:
        super().__init__()
        self.features_extractor = ResidualFeatures(input_dim, state_dim, embedding_size)
        layers: list = []
        width = 2 * embedding_size
        for size in hidden:
            layers += [nn.Linear(width, int(size)), nn.ReLU()]
            width = int(size)
        self.latent_pi = nn.Sequential(*layers)
        self.mu = nn.Linear(width, N_JOINTS)
        self.log_std = nn.Linear(width, N_JOINTS)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.mu(self.latent_pi(self.features_extractor(inputs))))


def build_actor(embedding_size: int = EMBEDDING_SIZE, hidden: Tuple[int, ...] = HIDDEN_LAYERS,
                state_dim: int = STATE_DIM, input_dim: int = INPUT_DIM) -> ResidualActor:
    """A fresh actor of this architecture (the module :func:`read_policy` fills)."""
    return ResidualActor(embedding_size, tuple(hidden), state_dim, input_dim)


# ------------------------------------------------------------------------------ policy + controller
@dataclass
class ResidualPolicy:
    """A residual actor with its metadata; :meth:`residual` is the deterministic torque [N m]."""

    actor: nn.Module
    metadata: Dict[str, Any]

    @property
    def base_controller(self) -> str:
        return str(self.metadata["base_controller"])

    @property
    def scale(self) -> float:
        return float(self.metadata["residual_scale"])

    def action(self, inputs: np.ndarray) -> np.ndarray:
        """Deterministic squashed action(s) in [-1, 1] for policy inputs (INPUT_DIM,) or (n, INPUT_DIM):
        tanh of the Gaussian's mean, what SB3's ``actor(x, deterministic=True)`` returns, computed
        without building the distribution (~40 % faster per call)."""
        x = torch.as_tensor(np.asarray(inputs, np.float32))
        single = x.ndim == 1
        actor = self.actor   # a ResidualActor, or SB3's Actor while training (same parameter names)
        with torch.inference_mode():
            out = torch.tanh(actor.mu(actor.latent_pi(actor.features_extractor(x[None] if single else x))))
        out = out.numpy().astype(float)
        return out[0] if single else out

    def residual(self, observation: Observation, base_torque: np.ndarray,
                 kinematics: FingerKinematics) -> np.ndarray:
        """The (9,) residual torque [N m], within +-scale."""
        return self.scale * np.clip(self.action(policy_input(observation, base_torque, kinematics)), -1, 1)


class ResidualController(Controller):
    """``base`` plus the residual of ``policy`` (paper §V): name ``"<base>+rpl"``, the base
    controller's rate; :attr:`last_base` and :attr:`last_residual` hold the latest torques."""

    def __init__(self, base: Controller, policy: ResidualPolicy,
                 kinematics: Optional[FingerKinematics] = None) -> None:
        check_compatible(policy.metadata, base)
        self.base = base
        self.policy = policy
        self.name = f"{base.name}+rpl"
        self.rate_hz = float(base.rate_hz)
        self.kin = kinematics or getattr(base, "kin", None) or FingerKinematics()
        self.last_base = np.zeros(N_JOINTS)
        self.last_residual = np.zeros(N_JOINTS)

    def reset(self, observation: Observation) -> None:
        self.base.reset(observation)
        self.last_base = np.zeros(N_JOINTS)
        self.last_residual = np.zeros(N_JOINTS)

    def set_asynchronous_planning(self, enabled: bool) -> None:
        self.base.set_asynchronous_planning(enabled)

    def _torque(self, observation: Observation) -> np.ndarray:
        self.last_base = self.base.compute(observation)
        self.last_residual = self.policy.residual(observation, self.last_base, self.kin)
        return self.last_base + self.last_residual


def check_compatible(metadata: Dict[str, Any], controller: Controller, grasp: Optional[str] = None) -> None:
    """PolicyFileError unless the policy was trained on ``controller``'s kind (name and rate) and,
    if given, ``grasp``."""
    base = str(metadata.get("base_controller"))
    if base != controller.name:
        raise PolicyFileError(f"residual policy was trained on base controller {base!r}, "
                              f"not {controller.name!r}")
    rate = float(metadata.get("rate_hz", float("nan")))
    if not math.isclose(rate, float(controller.rate_hz)):
        raise PolicyFileError(f"residual policy was trained at {rate:g} Hz, the {controller.name} "
                              f"controller runs at {float(controller.rate_hz):g} Hz")
    if grasp is not None and metadata.get("grasp") != grasp:
        raise PolicyFileError(f"residual policy was trained with grasp {metadata.get('grasp')!r}, "
                              f"not {grasp!r}")


# ------------------------------------------------------------------------------ policy files
_REQUIRED_METADATA = ("base_controller", "grasp", "level", "rate_hz", "residual_scale",
                      "observation_layout", "state_dim", "input_dim", "embedding_size", "hidden")


def plain(value: Any, where: str = "metadata") -> Any:
    """``value`` as plain Python (dict/list/str/int/float/bool/None; non-finite floats become
    None), else ValueError."""
    if isinstance(value, dict):
        return {str(k): plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, where) for v in value]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    raise TrifingerError(f"{where}: {type(value).__name__} is not a plain value")


def policy_metadata(base_controller: str, grasp: str, level: int, rate_hz: float,
                    training: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The metadata :func:`save_policy` writes for a policy of this module's architecture."""
    return dict(base_controller=base_controller, grasp=grasp, level=int(level), rate_hz=float(rate_hz),
                residual_scale=RESIDUAL_SCALE, observation_layout=OBSERVATION_LAYOUT_VERSION,
                observation_names=[name for name, _, _ in OBSERVATION_LAYOUT],
                state_dim=STATE_DIM, input_dim=INPUT_DIM, embedding_size=EMBEDDING_SIZE,
                hidden=list(HIDDEN_LAYERS), training=dict(training or {}))


def save_policy(path: str, actor: nn.Module, metadata: Dict[str, Any]) -> None:
    """Write the actor's weights (tensors) and ``metadata`` (plain values) to ``path``
    (atomically: a temporary file, then rename)."""
    missing = [k for k in _REQUIRED_METADATA if k not in metadata]
    if missing:
        raise TrifingerError(f"policy metadata lacks {', '.join(missing)}")
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "metadata": plain(metadata),
        "state_dict": {k: v.detach().cpu().clone() for k, v in actor.state_dict().items()},
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def _fail(path: str, why: str) -> PolicyFileError:
    return PolicyFileError(f"residual policy file {path}: {why}")


def read_policy(path: str) -> ResidualPolicy:
    """The policy in ``path``, read without executing code from it: ``torch.load`` with
    ``weights_only=True`` (tensors and plain values only) into a freshly built actor.
    FileNotFoundError if missing; PolicyFileError (a ValueError, one line) if the file is corrupt,
    holds anything but tensors and plain values, or does not fit this module's architecture."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"residual policy file not found: {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds for a bad file
        detail = " ".join(str(exc).split())
        found = re.search(r"GLOBAL ([\w.]+)", detail)
        if found:  # the restricted unpickler met a class or function to call
            raise _fail(path, f"refused: it holds objects other than tensors and plain values "
                              f"({found.group(1)}); loading it could run code") from None
        unpickler = re.search(r"WeightsUnpickler error: (.*?)(?: Check the documentation|$)", detail)
        reason = unpickler.group(1) if unpickler else f"{type(exc).__name__}: {detail[:200]}"
        raise _fail(path, f"not a tensors-only policy file, or corrupt; the safe loader stopped "
                          f"({reason})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise _fail(path, f"not a residual policy file (no format '{FORMAT}')")
    if payload.get("version") != VERSION:
        raise _fail(path, f"version {payload.get('version')} is not supported (this library reads {VERSION})")
    metadata, state = payload.get("metadata"), payload.get("state_dict")
    if not isinstance(metadata, dict) or not isinstance(state, dict):
        raise _fail(path, "lacks metadata or state_dict")
    missing = [k for k in _REQUIRED_METADATA if k not in metadata]
    if missing:
        raise _fail(path, f"metadata lacks {', '.join(missing)}")
    expected = dict(observation_layout=OBSERVATION_LAYOUT_VERSION, state_dim=STATE_DIM, input_dim=INPUT_DIM)
    for key, value in expected.items():
        if metadata[key] != value:
            raise _fail(path, f"{key} {metadata[key]!r} differs from this library's {value!r} "
                              f"(retrain the policy)")
    scale = metadata["residual_scale"]
    if not isinstance(scale, (int, float)) or not 0 < scale <= TORQUE_LIMIT:
        raise _fail(path, f"residual_scale {scale!r} must be in (0, {TORQUE_LIMIT}]")
    try:
        actor = build_actor(int(metadata["embedding_size"]), tuple(int(h) for h in metadata["hidden"]))
        actor.load_state_dict(state, strict=True)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise _fail(path, " ".join(str(exc).split())[:300]) from None
    if not all(torch.all(torch.isfinite(p)) for p in actor.state_dict().values()):
        raise _fail(path, "has non-finite weights")
    actor.eval()
    return ResidualPolicy(actor, metadata)


def load_policy(path: str, controller: Controller, grasp: Optional[str] = None) -> ResidualController:
    """``controller`` wrapped with the residual policy of ``path`` (:func:`read_policy`);
    PolicyFileError if the policy was trained on another base controller (or, if given, grasp)."""
    policy = read_policy(path)
    try:
        check_compatible(policy.metadata, controller, grasp)
    except PolicyFileError as exc:
        raise _fail(path, str(exc)) from None
    return ResidualController(controller, policy)


__all__ = [
    "FORMAT", "VERSION", "RESIDUAL_SCALE", "OBSERVATION_LAYOUT", "OBSERVATION_LAYOUT_VERSION",
    "STATE_DIM", "INPUT_DIM", "PolicyFileError", "policy_input", "state_features", "embeddings", "embed",
    "ResidualFeatures", "ResidualActor", "build_actor", "ResidualPolicy", "ResidualController",
    "check_compatible", "plain", "policy_metadata", "save_policy", "read_policy", "load_policy",
]
