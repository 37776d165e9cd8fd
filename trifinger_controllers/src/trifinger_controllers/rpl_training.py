"""Residual policy learning, RPL (paper 004 §V, §VI, Table IV): the offline training side, with
soft actor-critic (stable-baselines3 SAC) in simulation; the policy it saves is read by
rpl_policy.py, which the controller nodes import (without gymnasium or SB3).

* :class:`ResidualFeaturesExtractor`: rpl_policy's embeddings as SB3's features extractor (SB3's
  SAC ``Actor`` is :class:`~trifinger_controllers.rpl_policy.ResidualActor`);
* :class:`ResidualEnv`: a gymnasium Env over :class:`SimulatedPlatform` and a base controller,
  one RL step per base-controller period, reward weighted by :class:`RewardWeights` (task,
  action, tip force, grasp, drop: the paper's combination);
* :func:`make_sac` / :func:`train`: SAC on CPU, periodic evaluation, the learning curve.

The reward's terms, the tip force sensors and the episode ends: README.md, "How the controllers
work", "Residual policy learning, training side (`rpl_training.py`)".
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from trifinger_controllers import evaluation, task
from trifinger_controllers.controllers.base import Controller
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.pose_filter import ObservationFilter
from trifinger_controllers.rpl_policy import (
    EMBEDDING_SIZE, HIDDEN_LAYERS, INPUT_DIM, RESIDUAL_SCALE, STATE_DIM, ResidualController,
    ResidualPolicy, plain, embed, embeddings, policy_input, policy_metadata, save_policy,
)
from trifinger_controllers.sim_options import SimOptions
from trifinger_controllers.types import N_JOINTS, PHYSICS_RATE, TORQUE_LIMIT, Observation
from trifinger_controllers.errors import ConfigurationError

LOG = logging.getLogger(__name__)


# ------------------------------------------------------------------------------ networks
class ResidualFeaturesExtractor(BaseFeaturesExtractor):
    """rpl_policy's embeddings of the state (first ``state_dim`` inputs) and of the base action
    (the rest) as an SB3 features extractor (``2 * embedding_size`` features)."""

    def __init__(self, observation_space: gym.spaces.Box, state_dim: int = STATE_DIM,
                 embedding_size: int = EMBEDDING_SIZE) -> None:
        super().__init__(observation_space, features_dim=2 * embedding_size)
        embeddings(self, int(np.prod(observation_space.shape)), state_dim, embedding_size)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return embed(self, observations)



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



def build_sb3_actor(embedding_size: int = EMBEDDING_SIZE, hidden=HIDDEN_LAYERS,
                    state_dim: int = STATE_DIM, input_dim: int = INPUT_DIM) -> nn.Module:
    """A fresh SB3 SAC actor of this architecture (what :func:`make_sac` trains; its state dict
    fits rpl_policy's :class:`~trifinger_controllers.rpl_policy.ResidualActor`)."""
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
            raise ConfigurationError(f"episode_seconds must be positive, got {episode_seconds}")
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
        return plain(asdict(self))


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
        raise ConfigurationError(f"steps must be >= 1, got {steps}")
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
    "ResidualFeaturesExtractor", "observation_space", "action_space", "policy_kwargs", "build_sb3_actor",
    "zero_mean_head", "RewardWeights", "ResidualEnv", "SACConfig", "make_sac", "train", "TrainingResult",
]
