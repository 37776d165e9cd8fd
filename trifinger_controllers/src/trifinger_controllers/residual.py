"""Residual policy learning, RPL (paper 004 §V "Residual Policy Learning", §VI, Table IV).

A learned policy adds a small corrective torque ``a_r`` in [-0.05, 0.05] N m per joint to the
torque ``a_0`` of a structured controller (CPC, CIC or MP): the agent sees the state and the base
action, ``a_r ~ pi(s, a_0)``, and the robot receives ``a_0 + a_r`` (clipped to the 0.397 N m limit).
It is trained with soft actor-critic (stable-baselines3 SAC) in simulation.

Pieces:

* :func:`policy_input`: the policy's input from what a controller sees (an
  :class:`~trifinger_controllers.types.Observation`) and the base torque; layout
  :data:`OBSERVATION_LAYOUT` (version :data:`OBSERVATION_LAYOUT_VERSION`, fixed scales, no running
  statistics, so that a policy file is self-contained).
* :class:`ResidualFeaturesExtractor` + SB3's SAC ``Actor``: the paper's architecture, "the
  observation and base action are separately embedded into a 64-dimensional space. These
  embeddings are then concatenated and passed to a three-layer feed-forward network that outputs a
  Gaussian distribution over torque actions. Actions are sampled from this distribution, squashed
  using a tanh function, and then scaled to fit in the [-0.05, 0.05] range": each embedding is
  Linear-LayerNorm-ReLU-Linear-LayerNorm (to 64), the two are concatenated and passed through a
  ReLU; the actor's MLP is 256-256 hidden layers plus the Gaussian output layer (mean and log-std
  heads: three layers), tanh-squashed by SB3 to [-1, 1] and scaled by :data:`RESIDUAL_SCALE` here.
  The critics use their own copy of the extractor and SB3's Q-MLP (features ++ action -> 256-256 ->
  1).
* :class:`ResidualEnv`: a gymnasium Env over :class:`SimulatedPlatform` and a base controller.
  One RL step is one period of the base controller (MP 500 Hz = 2 physics steps, CPC 200 Hz = 5,
  CIC 100 Hz = 10): the base controller and the policy are called at the same instants as
  :func:`evaluation.run_episode` calls a controller, and ``a_0 + a_r`` is held for the period.
* :class:`ResidualController`: a base controller plus a loaded policy (deterministic action, the
  tanh of the Gaussian mean), named ``"<base>+rpl"``, at the base controller's rate.
* :func:`save_policy` / :func:`read_policy` / :func:`load_policy`: the policy file is a
  ``torch.save`` of plain values and tensors only (the actor's ``state_dict`` and its metadata: base
  controller, grasp, level, residual scale, observation layout, network sizes, training summary),
  read with ``torch.load(weights_only=True)`` into a freshly built network: no pickle with code is
  ever executed (SB3's own ``.zip`` is not used for that reason: it is loaded with cloudpickle).
* :func:`make_sac` / :func:`train`: SAC on CPU with one torch thread, periodic evaluation on a fixed
  seed set (:func:`evaluation.evaluate`), the learning curve.

Reward per RL step (:class:`RewardWeights`; paper: "a combination of the competition reward as well
as terms for action regularization, maximizing tip force sensor readings, and maintaining a grasp
of the object"), all from the simulator (the policy itself never sees them):

    r = task * R_level(true cube pose)                      RRC reward of the level, in [-1, 0]
        - action * mean(u^2)                                u = a_r / 0.05 in [-1, 1]^9
        + tip_force * (mean(tip sensors) - 0.05)            trifinger_simulation's push sensors
        + grasp * n_hold / 3                                fingertips within HOLD_DISTANCE of the cube
        - drop * [the cube is dropped in this step]         evaluation.DropDetector, once

The tip force sensors are trifinger_simulation's simulated push sensors (``tip_force`` of its
robot observation: the contact normal force of each tip / 5 N + 0.05, clipped to [0, 1]).
Episodes end only by the time limit (truncation) or a base-controller exception; a drop does not
end them (the base controllers re-grasp), so no term rewards ending an episode early.
"""
from __future__ import annotations

import logging
import math
import os
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from trifinger_controllers import cube, evaluation, task
from trifinger_controllers.controller import Controller
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.pose_filter import ObservationFilter
from trifinger_controllers.sim_options import SimOptions
from trifinger_controllers.types import N_JOINTS, PHYSICS_RATE, TORQUE_LIMIT, Observation

LOG = logging.getLogger(__name__)

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


class PolicyFileError(ValueError):
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


class ResidualFeaturesExtractor(BaseFeaturesExtractor):
    """Embeds the state (first ``state_dim`` inputs) and the base action (the rest) separately to
    ``embedding_size`` each, concatenates them and applies a ReLU (paper §VI)."""

    def __init__(self, observation_space: gym.spaces.Box, state_dim: int = STATE_DIM,
                 embedding_size: int = EMBEDDING_SIZE) -> None:
        super().__init__(observation_space, features_dim=2 * embedding_size)
        n_in = int(np.prod(observation_space.shape))
        if not 0 < state_dim < n_in:
            raise ValueError(f"state_dim {state_dim} must be in (0, {n_in})")
        self.state_dim = int(state_dim)
        self.state_embedding = _embedding(self.state_dim, embedding_size)
        self.action_embedding = _embedding(n_in - self.state_dim, embedding_size)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        state, action = observations[..., :self.state_dim], observations[..., self.state_dim:]
        return torch.relu(torch.cat([self.state_embedding(state), self.action_embedding(action)], -1))


def observation_space(input_dim: int = INPUT_DIM) -> gym.spaces.Box:
    return gym.spaces.Box(-np.inf, np.inf, shape=(input_dim,), dtype=np.float32)


def action_space() -> gym.spaces.Box:
    return gym.spaces.Box(-1.0, 1.0, shape=(N_JOINTS,), dtype=np.float32)


def policy_kwargs(embedding_size: int = EMBEDDING_SIZE, hidden=HIDDEN_LAYERS) -> Dict[str, Any]:
    """SB3 ``policy_kwargs`` of the architecture (actor and critics)."""
    return dict(
        features_extractor_class=ResidualFeaturesExtractor,
        features_extractor_kwargs=dict(state_dim=STATE_DIM, embedding_size=embedding_size),
        net_arch=dict(pi=list(hidden), qf=list(hidden)),
        share_features_extractor=False,
    )


def build_actor(embedding_size: int = EMBEDDING_SIZE, hidden=HIDDEN_LAYERS,
                state_dim: int = STATE_DIM, input_dim: int = INPUT_DIM) -> nn.Module:
    """A fresh SB3 SAC actor of this architecture (the module :func:`read_policy` fills)."""
    from stable_baselines3.sac.policies import Actor
    space = observation_space(input_dim)
    extractor = ResidualFeaturesExtractor(space, state_dim, embedding_size)
    return Actor(space, action_space(), list(hidden), extractor, extractor.features_dim,
                 normalize_images=False)


def zero_mean_head(actor: nn.Module) -> None:
    """Zero the Gaussian mean's output layer: the untrained deterministic residual is exactly 0
    (the combined controller starts as the base controller)."""
    with torch.no_grad():
        actor.mu.weight.zero_()
        actor.mu.bias.zero_()


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
        actor = self.actor
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


def _plain(value: Any, where: str = "metadata") -> Any:
    """``value`` as plain Python (dict/list/str/int/float/bool/None; non-finite floats become
    None), else ValueError."""
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    raise ValueError(f"{where}: {type(value).__name__} is not a plain value")


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
        raise ValueError(f"policy metadata lacks {', '.join(missing)}")
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "metadata": _plain(metadata),
        "state_dict": {k: v.detach().cpu().clone() for k, v in actor.state_dict().items()},
    }
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.tmp"
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


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


# ------------------------------------------------------------------------------ environment
@dataclass(frozen=True)
class RewardWeights:
    """Weights of the reward terms (module docstring)."""

    task: float = 1.0
    action: float = 0.01
    tip_force: float = 0.05
    grasp: float = 0.05
    drop: float = 5.0


def tip_force_sensors(platform: SimulatedPlatform) -> np.ndarray:
    """trifinger_simulation's simulated push sensors (3,) in [0, 1] now (0.05 = no contact)."""
    simfinger = platform.simulation.simfinger
    return np.asarray(simfinger.get_observation(platform.steps).tip_force, float)


ControllerFactory = Callable[[], Controller]


class ResidualEnv(gym.Env):
    """The residual MDP of §V over :class:`SimulatedPlatform` and a base controller.

    Observation: :func:`policy_input` (state from the controller's observation + base torque).
    Action: (9,) in [-1, 1], the residual torque / :data:`RESIDUAL_SCALE`. One step is one period
    of the base controller (``1000 / rate_hz`` physics steps); an episode is a fresh
    :func:`task.sample_episode` of ``level`` (drawn from the env's seeded generator) lasting
    ``episode_seconds``. ``info`` holds the reward terms, ``drop``, ``position_error`` and, if the
    base controller raised, ``error`` (the episode is then truncated).

    Args:
        make_base: returns a fresh base controller (called at every reset).
        level: RRC level of the goals and the reward.
    """

    metadata = {"render_modes": []}

    def __init__(self, make_base: ControllerFactory, level: int = 3, episode_seconds: float = 10.0,
                 weights: RewardWeights = RewardWeights(), kinematics: Optional[FingerKinematics] = None,
                 max_reset_attempts: int = 5, options: Optional[SimOptions] = None) -> None:
        super().__init__()
        self.level = task.check_level(level)
        if not episode_seconds > 0:
            raise ValueError(f"episode_seconds must be positive, got {episode_seconds}")
        self.make_base = make_base
        self.episode_seconds = float(episode_seconds)
        self.weights = weights
        self.kin = kinematics or FingerKinematics()
        self.max_reset_attempts = int(max_reset_attempts)
        self.observation_space = observation_space()
        self.action_space = action_space()
        self.options = options or SimOptions.named()
        self.platform = SimulatedPlatform(perception=self.options.perception, physics=self.options.physics)
        self.estimator = ObservationFilter()   # what the base controller and the policy see
        self.base: Optional[Controller] = self.make_base()
        self.period = evaluation.control_period(self.base)
        self.total_steps = int(round(self.episode_seconds * PHYSICS_RATE))
        self.base_torque = np.zeros(N_JOINTS)
        self.observation: Optional[Observation] = None
        self.errors = 0

    @property
    def dt(self) -> float:
        """Duration [s] of one RL step."""
        return self.period / PHYSICS_RATE

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        last: Optional[Exception] = None
        for _ in range(self.max_reset_attempts):
            goal, initial = task.sample_episode(self.level, self.np_random)
            self.estimator.reset()
            obs = self.estimator(self.platform.reset(initial, goal, seed=int(self.np_random.integers(2 ** 31))))
            self.base = self.make_base()
            try:
                self.base.reset(obs)
                self.base_torque = self.base.compute(obs)
            except Exception as exc:  # e.g. no plan: draw another episode
                LOG.warning("base controller failed to start an episode (%s); drawing another", exc)
                last = exc
                continue
            self.goal, self.initial, self.observation = goal, initial, obs
            self.detector = evaluation.DropDetector(self.kin)
            return policy_input(obs, self.base_torque, self.kin), {"goal": goal, "initial": initial}
        raise RuntimeError(f"the base controller failed to start {self.max_reset_attempts} episodes: {last}")

    def step(self, action: np.ndarray):
        if self.observation is None:
            raise RuntimeError("ResidualEnv: call reset() first")
        unit = np.clip(np.asarray(action, float).reshape(N_JOINTS), -1.0, 1.0)
        residual = RESIDUAL_SCALE * unit
        torque = np.clip(self.base_torque + residual, -TORQUE_LIMIT, TORQUE_LIMIT)
        dropped_before = self.detector.dropped
        obs = self.observation
        for _ in range(self.period):
            obs = self.estimator(self.platform.step(torque))
            self.detector.update(self.platform.true_cube_pose(), obs.robot.position)
        self.observation = obs
        truth = self.platform.true_cube_pose()
        terms = {
            "task": task.reward(self.level, self.goal, truth),
            "action": -float(np.mean(unit ** 2)),
            "tip_force": float(np.mean(tip_force_sensors(self.platform)) - 0.05),
            "grasp": evaluation.holding_fingers(self.kin, truth, obs.robot.position) / 3.0,
            "drop": float(self.detector.dropped and not dropped_before),
        }
        w = self.weights
        reward = (w.task * terms["task"] + w.action * terms["action"] + w.tip_force * terms["tip_force"]
                  + w.grasp * terms["grasp"] - w.drop * terms["drop"])
        info: Dict[str, Any] = {"terms": terms, "drop": self.detector.dropped,
                                "position_error": task.position_error(self.goal, truth),
                                "residual": residual}
        truncated = self.platform.steps >= self.total_steps
        if not truncated:
            try:
                self.base_torque = self.base.compute(obs)
            except Exception as exc:  # the episode ends; logged and counted
                self.errors += 1
                info["error"] = f"{type(exc).__name__}: {exc}"
                LOG.warning("base controller raised at t=%.3f s: %s", obs.robot.time, info["error"])
                truncated = True
        return policy_input(obs, self.base_torque, self.kin), float(reward), False, truncated, info

    def close(self) -> None:
        self.platform.close()


# ------------------------------------------------------------------------------ training
@dataclass
class SACConfig:
    """SAC hyperparameters (SB3 names). ``learning_starts`` steps of uniform random residuals fill
    the buffer first; the actor's mean head starts at zero (:func:`zero_mean_head`)."""

    learning_rate: float = 3e-4
    buffer_size: int = 1_000_000
    learning_starts: int = 2000
    batch_size: int = 256
    tau: float = 0.005
    gamma: float = 0.99
    train_freq: int = 1
    gradient_steps: int = 1
    ent_coef: str = "auto"


def make_sac(env: gym.Env, seed: int, config: SACConfig = SACConfig()):
    """An SB3 SAC agent of this architecture on CPU (one torch thread)."""
    from stable_baselines3 import SAC
    torch.set_num_threads(1)
    values = asdict(config)
    model = SAC("MlpPolicy", env, seed=seed, device="cpu", policy_kwargs=policy_kwargs(), verbose=0,
                learning_rate=values.pop("learning_rate"), **values)
    zero_mean_head(model.actor)
    return model


@dataclass
class TrainingResult:
    """What :func:`train` returns (JSON-ready via :meth:`to_dict`, the policy saved already)."""

    config: Dict[str, Any]
    learning_curve: List[Dict[str, Any]] = field(default_factory=list)
    episodes: List[Dict[str, Any]] = field(default_factory=list)
    throughput: Dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return _plain(asdict(self))


def _eval_summary(result: Dict[str, Any]) -> Dict[str, Any]:
    keys = ("reward", "cumulative_reward", "position_error_cm")
    return {"mean_all": {k: result["mean_all"][k] for k in keys},
            "mean": {k: result["mean"][k] for k in keys},
            "drop_rate": result["drop_rate"], "errors": result["errors"]}


def _source_digest(cls: type) -> Optional[str]:
    """SHA-256 of the file defining ``cls`` (which version of the base controller a policy was
    trained on; recorded, not enforced)."""
    import hashlib
    import inspect
    try:
        with open(inspect.getsourcefile(cls) or "", "rb") as stream:
            return hashlib.sha256(stream.read()).hexdigest()
    except (OSError, TypeError):
        return None


def train(controller: str, grasp: Optional[str], level: int, steps: int, seed: int, out: str,
          episode_seconds: float = 10.0, eval_every: int = 10_000, eval_trials: int = 3,
          eval_seconds: float = 15.0, eval_seed: int = 1000, config: SACConfig = SACConfig(),
          weights: RewardWeights = RewardWeights(), progress: bool = True,
          params=None, options: Optional[SimOptions] = None) -> TrainingResult:
    """Train a residual policy for ``controller`` (+ ``grasp``, default its pairing) on ``level``
    for ``steps`` RL steps, evaluating the deterministic combined controller every ``eval_every``
    steps (and at 0 and at the end) on ``eval_trials`` episodes of seed ``eval_seed``; saves the
    final policy to ``out`` and returns the learning curve."""
    from stable_baselines3.common.callbacks import BaseCallback
    from trifinger_controllers.controllers import default_grasp, make_controller

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    grasp = grasp or default_grasp(controller)
    kin = FingerKinematics()
    make_base = lambda: make_controller(controller, grasp, params, kin, level=level)  # noqa: E731
    options = options or SimOptions.named()
    env = ResidualEnv(make_base, level, episode_seconds, weights, kin, options=options)
    model = make_sac(env, seed, config)
    rate = float(env.base.rate_hz)
    run_config = dict(controller=controller, grasp=grasp, level=level, steps=steps, seed=seed,
                      episode_seconds=episode_seconds, rl_step_seconds=env.dt,
                      physics_steps_per_rl_step=env.period, eval_every=eval_every,
                      eval_trials=eval_trials, eval_seconds=eval_seconds, eval_seed=eval_seed,
                      sac=asdict(config), reward_weights=asdict(weights), residual_scale=RESIDUAL_SCALE,
                      base_source_sha256=_source_digest(type(env.base)), **options.describe(),
                      params=params.to_dict() if params is not None else None)
    result = TrainingResult(config=run_config)
    policy = ResidualPolicy(model.actor, policy_metadata(controller, grasp, level, rate))
    start = time.perf_counter()
    eval_wall = [0.0]
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=steps, unit="step", desc=f"RPL {controller}-{grasp} L{level}", dynamic_ncols=True)

    def run_eval(step: int) -> None:
        t0 = time.perf_counter()
        res = evaluation.evaluate(lambda: ResidualController(make_base(), policy, kin), level,
                                  eval_trials, eval_seed, eval_seconds, progress=False,
                                  perception=options.perception, physics=options.physics)
        eval_wall[0] += time.perf_counter() - t0
        point = dict(step=step, wall_seconds=time.perf_counter() - start, **_eval_summary(res))
        result.learning_curve.append(point)
        if bar is not None:
            bar.set_postfix(eval_R=f"{res['mean_all']['cumulative_reward']:.1f}",
                            eval_pos_cm=f"{res['mean_all']['position_error_cm']:.2f}",
                            drops=f"{res['drop_rate']:.2f}")

    class Callback(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals.get("infos", []):
                episode = info.get("episode")
                if episode is not None:
                    result.episodes.append(dict(step=self.num_timesteps, return_=float(episode["r"]),
                                                length=int(episode["l"]), drop=bool(info.get("drop")),
                                                final_position_error_cm=100 * float(info.get("position_error", np.nan)),
                                                error=info.get("error")))
            if bar is not None:
                bar.update(1)
            if eval_every > 0 and self.num_timesteps % eval_every == 0 and self.num_timesteps < steps:
                run_eval(self.num_timesteps)
            return True

    try:
        if eval_trials > 0:
            run_eval(0)
        model.learn(total_timesteps=steps, callback=Callback(), progress_bar=False)
        train_wall = time.perf_counter() - start - eval_wall[0]
        if eval_trials > 0:
            run_eval(steps)
    finally:
        if bar is not None:
            bar.close()
        env.close()
    result.throughput = dict(rl_steps_per_second=steps / train_wall, train_wall_seconds=train_wall,
                             eval_wall_seconds=eval_wall[0],
                             simulated_seconds=steps * env.dt,
                             env_errors=env.errors)
    training = dict(steps=steps, seed=seed, episode_seconds=episode_seconds, reward_weights=asdict(weights),
                    base_source_sha256=_source_digest(type(env.base)),
                    sac=asdict(config), final_eval=result.learning_curve[-1] if result.learning_curve else None)
    save_policy(out, model.actor, policy_metadata(controller, grasp, level, rate, training))
    return result


__all__ = [
    "FORMAT", "VERSION", "RESIDUAL_SCALE", "OBSERVATION_LAYOUT", "OBSERVATION_LAYOUT_VERSION",
    "STATE_DIM", "INPUT_DIM", "PolicyFileError", "policy_input", "state_features",
    "ResidualFeaturesExtractor", "build_actor", "policy_kwargs", "zero_mean_head", "ResidualPolicy",
    "ResidualController", "check_compatible", "policy_metadata", "save_policy", "read_policy",
    "load_policy", "RewardWeights", "ResidualEnv", "SACConfig", "make_sac", "train", "TrainingResult",
]
