"""State-space kernels for the Panda (issue 7, "Applied to the Panda"): paper 001 §3 on
panda_sim2real's pair bags, with the PyBullet simulator (``/sim``) as M_sim and the reality
stand-in (``/real``, MuJoCo with the identified dynamics; never a real robot) as M_phy.

Histories (eq. 4). A pair bag holds, per trajectory id, the joint states of both robots in the
window [START, END] and the commanded JointTrajectory. With the spec of
``config/panda_topics.yaml`` (sensor fields ``position[j]``, ``velocity[j]``, ``effort[j]`` of
the robot's JointState; j in the joint order both robots publish, panda_sim2real's
``panda_limits.yaml``), each trajectory is one Episode per robot: the joint states every
``step`` seconds (a multiple of the publish period) form s_t, the action a_t is the commanded
position q_ref(t_t) (the command sampled as the controller samples it, which panda_sim
publishes live on ``joint_trajectory_controller/reference``), r_t = -c_q(q_ref, q) at t_{t+1}
(eq. 8 over the positions; pair bags carry no reward) and the stamps (eq. 9) are the sample
times. The stand-in's side is read with the spec remapped from /sim to /real
(:func:`remap_namespace`).

Evaluation on held-out trajectories (not used for the kernels). For each one the simulator
(panda_sim2real's SimulatedRobot with the sim config) is put at rest at the trajectory's start,
holds it for ``settle`` seconds (as the pair collection does before each move, the PID
integral carries the load), then executes the same command. Every step the kernel manager sees
the simulation's state s_t and the action a_t; after the simulator ran the step:
  * motor kernel: the simulation is set to f_k(s_t, a_t) through ``SimulatedRobot.set_state``
    (what panda_sim's ``set_joint_state`` topic does live), so it reports it and goes on from it;
  * sensor kernel: only the reported state is f_k(s_t, a_t) (``/sim/joint_states_kernel``
    live); the physics is untouched.
Per-joint MSE of the reported positions and velocities against the stand-in's recording at the
step times, with and without kernels (the replay without kernels is the same procedure without
the manager). Figures are labelled "reality stand-in".
"""
from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
from tqdm import tqdm

from kernel_manager_ros.config_files import config_path
from kernel_manager_ros.distance import weighted_l1
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.generation import GenerationConfig, generate_kernels
from kernel_manager_ros.history import Episode, History
from kernel_manager_ros.kernel import KernelSet
from kernel_manager_ros.manager import KernelManager
from kernel_manager_ros.state_spec import Channel, FieldPath, StateSpec

PANDA_TOPICS = config_path("panda_topics.yaml")
LABEL = "reality stand-in"
SIM_NS, REAL_NS = "/sim", "/real"
_COLUMNS = {"position": "q", "velocity": "qd", "effort": "tau"}   # JointState field -> Stream


def remap_namespace(spec: StateSpec, old: str, new: str) -> StateSpec:
    """The same spec with every topic under ``old`` (e.g. /sim) moved to ``new`` (/real)."""
    def moved(c: Channel) -> Channel:
        if c.topic == old or c.topic.startswith(old.rstrip("/") + "/"):
            return dataclasses.replace(c, topic=new.rstrip("/") + c.topic[len(old.rstrip("/")):])
        return c
    return dataclasses.replace(spec, sensors=tuple(moved(c) for c in spec.sensors),
                               actions=tuple(moved(c) for c in spec.actions),
                               reward=moved(spec.reward))


def _joint_field(text: str, dof: int, where: str) -> tuple[str, int]:
    """('position' | 'velocity' | 'effort', joint index) of a field path like position[3]."""
    steps = FieldPath.parse(text).steps
    if len(steps) != 1 or steps[0][0] not in _COLUMNS or steps[0][1] is None \
            or not 0 <= steps[0][1] < dof:
        raise KernelError(f"{where}: field {text!r} is not position[j], velocity[j] or "
                          f"effort[j] with 0 <= j < {dof}")
    return steps[0][0], int(steps[0][1])


@dataclass(frozen=True)
class PandaLayout:
    """Where the spec's state and action values live in a robot's joint-state stream.

    ``state_columns[i]`` = (field, joint) of state coordinate i; ``action_joints[k]`` = joint of
    action coordinate k (a commanded position); ``position_index[j]`` / ``velocity_index[j]`` =
    the state coordinate of joint j's position / velocity, or -1 (set_state keeps the
    simulator's value for a joint the state does not hold)."""

    spec: StateSpec
    dof: int
    state_columns: tuple[tuple[str, int], ...]
    action_joints: tuple[int, ...]
    position_index: tuple[int, ...]
    velocity_index: tuple[int, ...]

    @classmethod
    def from_spec(cls, spec: StateSpec, dof: int) -> "PandaLayout":
        if len(spec.sensors) != 1 or spec.sensors[0].msg_type != "sensor_msgs/JointState":
            raise KernelError("the Panda spec needs exactly one sensor: the robot's "
                              "sensor_msgs/JointState topic")
        if len(spec.actions) != 1 or spec.actions[0].msg_type != "sensor_msgs/JointState":
            raise KernelError("the Panda spec needs exactly one action channel: the commanded "
                              "reference (sensor_msgs/JointState positions)")
        columns = tuple(_joint_field(f, dof, f"sensor {spec.sensors[0].name}")
                        for f in spec.sensors[0].fields)
        actions = []
        for f in spec.actions[0].fields:
            kind, j = _joint_field(f, dof, f"action {spec.actions[0].name}")
            if kind != "position":
                raise KernelError(f"action {spec.actions[0].name}: field {f!r}: the action is "
                                  f"the commanded position, use position[j]")
            actions.append(j)
        pos, vel = [-1] * dof, [-1] * dof
        for i, (kind, j) in enumerate(columns):
            if kind == "position":
                pos[j] = i
            elif kind == "velocity":
                vel[j] = i
        return cls(spec, dof, columns, tuple(actions), tuple(pos), tuple(vel))

    def states(self, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """(n, d) states from (n, dof) positions, velocities and efforts."""
        source = {"position": np.atleast_2d(q), "velocity": np.atleast_2d(qd),
                  "effort": np.atleast_2d(tau)}
        return np.stack([source[kind][:, j] for kind, j in self.state_columns], axis=1)

    def actions(self, q_ref: np.ndarray) -> np.ndarray:
        return np.atleast_2d(q_ref)[:, list(self.action_joints)]

    def joints(self, state: np.ndarray, q: np.ndarray, qd: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities for set_state: the state's values, ``q``/``qd`` for joints
        the state does not hold."""
        q, qd = q.copy(), qd.copy()
        for j in range(self.dof):
            if self.position_index[j] >= 0:
                q[j] = state[self.position_index[j]]
            if self.velocity_index[j] >= 0:
                qd[j] = state[self.velocity_index[j]]
        return q, qd

    def tracking_reward(self, q_ref: np.ndarray, q: np.ndarray) -> np.ndarray:
        """r = -c_q(q_ref, q): eq. 8 over the position coordinates (weights renormalised)."""
        w = np.zeros(self.dof)
        for i, (kind, j) in enumerate(self.state_columns):
            if kind == "position":
                w[j] += self.spec.weights[i]
        if w.sum() <= 0.0:
            return np.zeros(np.atleast_2d(q).shape[0])
        return -weighted_l1(np.atleast_2d(q_ref), np.atleast_2d(q), w / w.sum())


@dataclass(frozen=True)
class PandaTrajectory:
    """One pair of a pair bag with its command: ``plan`` has the absolute start (panda_sim2real
    PlannedTrajectory), ``sim``/``real`` the recorded streams in [start, end]."""

    trajectory_id: int
    kind: str
    plan: Any     # panda_sim2real.trajectory.PlannedTrajectory
    sim: Any      # panda_sim2real.pair_bag.Stream
    real: Any

    @property
    def start(self) -> float:
        return float(self.plan.start)

    @property
    def end(self) -> float:
        return float(self.plan.start + self.plan.duration)


def read_pair_trajectories(path: str, spec: StateSpec, limits: Any = None
                           ) -> tuple[list[PandaTrajectory], str]:
    """The complete pairs of a panda_sim2real pair bag with their commands, and the bag's label.
    KernelError for a missing or unreadable bag, a bag without /real (or /sim) joint states or
    pair events, or a pair without its command."""
    from panda_sim2real.bag_layout import COMMAND, topic
    from panda_sim2real.errors import Sim2RealError
    from panda_sim2real.joint_state_bag import BagFile
    from panda_sim2real.limits import JointLimits
    from panda_sim2real.pair_bag import read_pairs
    from panda_sim2real.ros_conversions import trajectory_from_msg

    limits = limits or JointLimits.from_yaml()
    sim_topic = spec.sensors[0].topic
    real_topic = remap_namespace(spec, SIM_NS, REAL_NS).sensors[0].topic
    if real_topic == sim_topic:
        raise KernelError(f"the spec's sensor topic {sim_topic} is not under {SIM_NS}: the "
                          f"stand-in's side cannot be found")
    command_topic = topic(SIM_NS, COMMAND)
    try:
        recording = read_pairs(path, limits.joint_names, sim_topic=sim_topic)
        with BagFile(path) as bag:
            commands = [msg for _, msg in bag.messages([command_topic])]
    except Sim2RealError as exc:
        raise KernelError(str(exc)) from exc
    plans = []
    for msg in commands:
        try:
            plans.append(trajectory_from_msg(msg, limits))
        except Sim2RealError as exc:
            raise KernelError(f"bag {path}: a command on {command_topic} is invalid: "
                              f"{exc}") from exc
    starts = np.array([p.start if p.start is not None else -1.0 for p in plans])
    trajectories = []
    for pair in recording.pairs:
        k = int(np.argmin(np.abs(starts - pair.start))) if starts.size else -1
        if k < 0 or abs(starts[k] - pair.start) > 1e-3:
            raise KernelError(f"bag {path}: trajectory {pair.trajectory_id} (start "
                              f"{pair.start:.3f} s) has no command on {command_topic}")
        if len(pair.sim) < 2 or len(pair.real) < 2:
            continue
        trajectories.append(PandaTrajectory(pair.trajectory_id, pair.kind, plans[k],
                                            pair.sim, pair.real))
    if not trajectories:
        raise KernelError(f"bag {path} has no trajectory with joint states of both robots")
    return trajectories, recording.label


def step_indices(stream_t: np.ndarray, step: float) -> np.ndarray:
    """Indices of the samples one ``step`` [s] apart (the first sample, then every k-th)."""
    if stream_t.size < 2:
        return np.arange(stream_t.size)
    period = float(np.median(np.diff(stream_t)))
    k = max(1, int(round(step / period)))
    return np.arange(0, stream_t.size, k)


def reference(plan: Any, times: np.ndarray) -> np.ndarray:
    """q_ref at absolute ``times`` (the controller's cubic Hermite sample of the command)."""
    return np.array([plan.sample(t - plan.start)[0] for t in times])


def episode(trajectory: PandaTrajectory, stream: Any, layout: PandaLayout, step: float) -> Episode:
    """One robot's run of ``trajectory`` as an Episode (module docstring)."""
    idx = step_indices(stream.t, step)
    t = stream.t[idx]
    q_ref = reference(trajectory.plan, t)
    states = layout.states(stream.q[idx], stream.qd[idx], stream.tau[idx])
    return Episode(states=states, actions=layout.actions(q_ref[:-1]),
                   rewards=layout.tracking_reward(q_ref[1:], stream.q[idx][1:]),
                   stamps=t[:, None].copy())


def histories(trajectories: Sequence[PandaTrajectory], layout: PandaLayout, step: float
              ) -> tuple[History, History]:
    """H_sim and H_phy (eq. 4) of the given trajectories."""
    sim = History.from_episodes([episode(tr, tr.sim, layout, step) for tr in trajectories],
                                "simulation history")
    phy = History.from_episodes([episode(tr, tr.real, layout, step) for tr in trajectories],
                                "stand-in history")
    return sim, phy


@dataclass
class Replay:
    """The simulator's run of one held-out trajectory: step times, reported states (what the
    sensors, or the manager's ``_kernel`` topics, report), the measured joint torques and what
    the manager did."""

    times: np.ndarray
    states: np.ndarray
    efforts: Optional[np.ndarray] = None
    motor: int = 0
    sensor: int = 0
    refused: int = 0        # motor kernels whose f_k(s, a) set_state refused (joint limits)
    steps: int = 0
    kernels_used: set[int] = field(default_factory=set)


def replay(robot: Any, trajectory: PandaTrajectory, layout: PandaLayout, step: float,
           manager: Optional[KernelManager] = None, settle: float = 2.0) -> Replay:
    """Run ``trajectory``'s command on ``robot`` (a panda_sim2real SimulatedRobot) with the kernel
    manager applied every step, or without (module docstring)."""
    idx = step_indices(trajectory.real.t, step)
    times = trajectory.real.t[idx]
    plan = trajectory.plan
    robot.reset(plan.positions[0], t=plan.start - settle)
    robot.command(plan)
    robot.run_until(times[0])

    def measured() -> np.ndarray:
        m = robot.measure()
        out.efforts[k] = m.effort
        return layout.states(m.position, m.velocity, m.effort)[0]

    out = Replay(times=times, states=np.empty((times.size, len(layout.state_columns))),
                 efforts=np.empty((times.size, layout.dof)))
    k = 0
    s = measured()
    out.states[0] = s
    for k in range(1, times.size):
        q_ref, _ = robot.reference()
        a = layout.actions(q_ref)[0]
        robot.run_until(times[k])
        reported = measured()
        if manager is not None:
            decision = manager.decide(s, a)
            out.steps += 1
            if decision is not None:
                out.kernels_used.add(decision.index)
                if decision.kind == "motor":
                    q, qd = robot.physics.state()
                    try:
                        robot.set_state(*layout.joints(decision.next_state, q, qd))
                    except ValueError:
                        out.refused += 1
                    else:
                        out.motor += 1
                        reported = measured()
                else:
                    out.sensor += 1
                    out.states[k] = decision.next_state
                    s = reported
                    continue
        out.states[k] = reported
        s = reported
    return out


def joint_mse(replays: Sequence[Replay], targets: Sequence[np.ndarray], layout: PandaLayout
              ) -> dict[str, list[Optional[float]]]:
    """Per-joint MSE of positions [rad^2] and velocities [(rad/s)^2] over all steps (None for
    a joint the state does not hold)."""
    n = [min(r.states.shape[0], t.shape[0]) for r, t in zip(replays, targets)]
    pred = np.concatenate([r.states[:k] for r, k in zip(replays, n)])
    true = np.concatenate([t[:k] for t, k in zip(targets, n)])
    err = np.square(pred - true).mean(axis=0)
    return {"position_mse": [float(err[i]) if i >= 0 else None for i in layout.position_index],
            "velocity_mse": [float(err[i]) if i >= 0 else None for i in layout.velocity_index]}


def _ratio(with_k: Sequence[Optional[float]], without: Sequence[Optional[float]]
           ) -> list[Optional[float]]:
    return [w / o if w is not None and o is not None and o > 0 else None
            for w, o in zip(with_k, without)]


@dataclass(frozen=True)
class PandaExperiment:
    """Settings of :func:`run_experiment` (``panda-kernels`` options)."""

    bag: Optional[str] = None              # a pair bag; None: collect one into out_dir
    out_dir: str = "panda_kernels_out"
    trajectories: int = 40                 # collected pairs (when bag is None)
    seed: int = 0
    held_out: float = 0.25                 # fraction of trajectories for the evaluation
    step: float = 0.01                     # s, the kernel MDP's step (publish period: 0.01)
    settle: float = 2.0                    # s at rest before each replayed trajectory
    spec_path: str = PANDA_TOPICS
    sim_config: Optional[str] = None       # panda_sim2real sim config (None: its default)
    # epsilon_c from the spec (0.004, ~1 % of each coordinate's range); sigma = 2 epsilon_c:
    # a kernel is active within c < 1.18 sigma of its centre. Wider regions (sigma >= 0.02)
    # fire more on held-out data but their local linear fits extrapolate badly there (README).
    generation: GenerationConfig = GenerationConfig(rollouts=2000, max_rollout_length=300,
                                                    sigma=0.008, epsilon_p=0.2, fit_length=3)

    def check(self) -> None:
        if not 0.0 < self.held_out < 1.0:
            raise KernelError(f"held_out must be in (0, 1), got {self.held_out}")
        if not (math.isfinite(self.step) and self.step > 0.0):
            raise KernelError(f"step must be > 0 s, got {self.step}")
        if not (math.isfinite(self.settle) and self.settle >= 0.0):
            raise KernelError(f"settle must be >= 0 s, got {self.settle}")
        if self.bag is None and self.trajectories < 2:
            raise KernelError(f"need at least 2 trajectories (training and held-out), got "
                              f"{self.trajectories}")
        self.generation.check()


def split(n: int, held_out: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random split of n trajectories: (training indices, held-out indices), both
    non-empty."""
    if n < 2:
        raise KernelError(f"need at least 2 trajectories to hold some out, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    n_test = min(n - 1, max(1, int(round(held_out * n))))
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def collect(out: str, trajectories: int, seed: int, progress: bool) -> dict[str, Any]:
    """Record a pair bag with panda_sim2real's in-process collector (both robots in lock-step)."""
    from panda_sim2real.collection import CollectionRequest, run_collection
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    return run_collection(CollectionRequest(out=out, trajectories=trajectories, seed=seed,
                                            show_progress=progress)).figures


def run_experiment(config: PandaExperiment, progress: bool = True
                   ) -> tuple[dict[str, Any], KernelSet, dict[str, Any]]:
    """Pair bag -> H_sim, H_phy (training trajectories) -> kernels -> held-out replays with and
    without the kernel manager. Returns (JSON figures, kernels, data for plots)."""
    from panda_sim2real.limits import JointLimits
    from panda_sim2real.robot import SimulatedRobot
    from panda_sim2real.robot_config import SIM_CONFIG_FILE, RobotConfig

    config.check()
    seconds: dict[str, float] = {}
    figures: dict[str, Any] = {"label": LABEL}
    clock = time.perf_counter()
    bag = config.bag
    if bag is None:
        bag = os.path.join(config.out_dir, "panda_pairs.bag")
        figures["collection"] = collect(bag, config.trajectories, config.seed, progress)
        seconds["collect"] = time.perf_counter() - clock
    spec = StateSpec.from_yaml(config.spec_path)
    limits = JointLimits.from_yaml()
    layout = PandaLayout.from_spec(spec, limits.dof)
    clock = time.perf_counter()
    trajectories, bag_label = read_pair_trajectories(bag, spec, limits)
    train, test = split(len(trajectories), config.held_out, config.seed)
    h_sim, h_phy = histories([trajectories[i] for i in train], layout, config.step)
    seconds["read"] = time.perf_counter() - clock
    kernel_set, report = generate_kernels(h_sim, h_phy, spec, config.generation, progress)
    seconds["generate"] = sum(report.seconds.values())
    kernel_set.metadata.update(bag=os.path.abspath(bag), step=config.step,
                               train_trajectories=[trajectories[i].trajectory_id for i in train],
                               label=f"kernels from simulation vs {bag_label}")

    clock = time.perf_counter()
    robot = SimulatedRobot(RobotConfig.from_yaml(config.sim_config or SIM_CONFIG_FILE), limits)
    manager = KernelManager(kernel_set) if len(kernel_set) else None
    held = [trajectories[i] for i in test]
    plain, kernelled, targets, recorded = [], [], [], []
    try:
        for tr in tqdm(held, desc="held-out replays", unit="traj", disable=not progress):
            plain.append(replay(robot, tr, layout, config.step, None, config.settle))
            kernelled.append(replay(robot, tr, layout, config.step, manager, config.settle))
            idx = step_indices(tr.real.t, config.step)
            targets.append(layout.states(tr.real.q[idx], tr.real.qd[idx], tr.real.tau[idx]))
            recorded.append(_recorded(tr, idx, layout))
    finally:
        robot.close()
    seconds["replay"] = time.perf_counter() - clock
    without = joint_mse(plain, targets, layout)
    with_k = joint_mse(kernelled, targets, layout)
    in_bag = joint_mse(recorded, targets, layout)
    steps = sum(r.steps for r in kernelled)
    figures.update({
        "label": bag_label or LABEL,
        "bag": os.path.abspath(bag),
        "trajectories": {"train": len(train), "held_out": len(test),
                         "held_out_ids": [tr.trajectory_id for tr in held]},
        "step_seconds": config.step,
        "history": {"sim_transitions": len(h_sim), "phy_transitions": len(h_phy)},
        "kernels": {**kernel_set.counts(), "total": len(kernel_set)},
        "generation": {k: v for k, v in report.to_dict().items() if k != "seconds"},
        "settings": {"epsilon_c": report.epsilon_c,
                     "sigma": kernel_set.metadata.get("sigma"),
                     "activation_threshold": kernel_set.activation_threshold,
                     "rollouts": config.generation.rollouts,
                     "max_rollout_length": config.generation.max_rollout_length,
                     "epsilon_p": config.generation.epsilon_p,
                     "fit_length": config.generation.fit_length, "seed": config.seed,
                     "settle_seconds": config.settle},
        "without_kernels": without,
        "with_kernels": with_k,
        "recorded_sim": in_bag,
        "ratio": {"position_mse": _ratio(with_k["position_mse"], without["position_mse"]),
                  "velocity_mse": _ratio(with_k["velocity_mse"], without["velocity_mse"]),
                  "position_mse_sum": _sum_ratio(with_k["position_mse"],
                                                 without["position_mse"]),
                  "velocity_mse_sum": _sum_ratio(with_k["velocity_mse"],
                                                 without["velocity_mse"])},
        "applications": {"steps": steps, "motor": sum(r.motor for r in kernelled),
                         "sensor": sum(r.sensor for r in kernelled),
                         "refused": sum(r.refused for r in kernelled),
                         "active_fraction": (sum(r.motor + r.sensor for r in kernelled) / steps
                                             if steps else 0.0),
                         "distinct_kernels": len(set().union(*(r.kernels_used
                                                               for r in kernelled)))},
        "seconds": seconds,
    })
    plots = {"held": held, "plain": plain, "kernelled": kernelled, "targets": targets,
             "layout": layout}
    return figures, kernel_set, plots


def _sum_ratio(with_k: Sequence[Optional[float]], without: Sequence[Optional[float]]
               ) -> Optional[float]:
    a = sum(v for v in with_k if v is not None)
    b = sum(v for v in without if v is not None)
    return a / b if b > 0 else None


def _recorded(trajectory: PandaTrajectory, idx: np.ndarray, layout: PandaLayout) -> Replay:
    """The bag's own simulation stream at the step samples (a check of the replay)."""
    sim = trajectory.sim
    idx = idx[idx < sim.t.size]
    return Replay(times=sim.t[idx], states=layout.states(sim.q[idx], sim.qd[idx], sim.tau[idx]))


def plot(figures: dict[str, Any], plots: dict[str, Any], folder: str) -> list[str]:
    """Per-joint MSE bars (with / without kernels) and one held-out trajectory's positions and
    velocities (stand-in, simulation, simulation + kernels); matplotlib Agg, PNG files."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(folder, exist_ok=True)
    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    joints = np.arange(1, 8)
    for ax, key, unit in zip(axes, ("position_mse", "velocity_mse"), ("rad²", "(rad/s)²")):
        without = [v or 0.0 for v in figures["without_kernels"][key]]
        with_k = [v or 0.0 for v in figures["with_kernels"][key]]
        ax.bar(joints - 0.2, without, 0.4, label="simulation", color="tab:blue")
        ax.bar(joints + 0.2, with_k, 0.4, label="simulation + kernels", color="tab:red")
        ax.set_yscale("log")
        ax.set_xlabel("joint")
        ax.set_ylabel(f"MSE [{unit}]")
        ax.set_title(f"{key.split('_')[0]} vs {LABEL}")
    axes[0].legend(fontsize=8)
    k = figures["kernels"]
    fig.suptitle(f"Panda, held-out trajectories ({LABEL}); {k['motor']} motor + "
                 f"{k['sensor']} sensor kernels", fontsize=10)
    fig.tight_layout()
    paths.append(os.path.join(folder, "panda_mse.png"))
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    layout: PandaLayout = plots["layout"]
    lengths = [r.times.size for r in plots["plain"]]
    i = int(np.argmax(lengths))
    tr = plots["held"][i]
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for ax, index, unit in ((axes[0], layout.position_index, "rad"),
                            (axes[1], layout.velocity_index, "rad/s")):
        errs = [np.abs(plots["plain"][i].states[:, c] - plots["targets"][i][:, c]).max()
                if c >= 0 else -1.0 for c in index]
        c = index[int(np.argmax(errs))]
        if c < 0:
            continue
        t = plots["plain"][i].times - tr.start
        ax.plot(t, plots["targets"][i][:, c], color="tab:green", label=LABEL)
        ax.plot(t, plots["plain"][i].states[:, c], color="tab:blue", label="simulation")
        ax.plot(t, plots["kernelled"][i].states[:, c], color="tab:red", lw=0.8,
                label="simulation + kernels")
        ax.set_ylabel(f"{layout.spec.state_names[c]} [{unit}]")
    axes[0].legend(fontsize=8)
    axes[1].set_xlabel(f"t [s] (held-out trajectory {tr.trajectory_id}, {tr.kind})")
    fig.tight_layout()
    paths.append(os.path.join(folder, "panda_trajectory.png"))
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths
