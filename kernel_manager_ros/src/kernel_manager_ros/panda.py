"""State-space kernels for the Panda (issue 7, "Applied to the Panda"): paper 001 §3 on
panda_pairs' pair bags, with the PyBullet simulator (``/sim``) as M_sim and the reality
stand-in (``/real``, MuJoCo with the identified dynamics; never a real robot) as M_phy. The
held-out experiment with its figures and plots is :mod:`kernel_manager_ros.experiments.panda`.

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

Replay (:func:`replay`). The simulator (panda_sim2real's SimulatedRobot with the sim config) is
put at rest at a trajectory's start, holds it for ``settle`` seconds (as the pair collection
does before each move, the PID integral carries the load), then executes the same command.
Every step the kernel manager sees the simulation's state s_t and the action a_t; after the
simulator ran the step:
  * motor kernel: the simulation is set to f_k(s_t, a_t) through ``SimulatedRobot.set_state``
    (what panda_sim's ``set_joint_state`` topic does live), so it reports it and goes on from it;
  * sensor kernel: only the reported state is f_k(s_t, a_t) (``/sim/joint_states_kernel``
    live); the physics is untouched.
The replay without kernels is the same procedure without the manager.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from kernel_manager_ros.config_files import config_path
from kernel_manager_ros.distance import weighted_l1
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.generation import GenerationConfig, GenerationReport, generate_kernels
from kernel_manager_ros.history import Episode, History
from kernel_manager_ros.kernel import KernelSet
from kernel_manager_ros.manager import KernelManager
from kernel_manager_ros.state_spec import Channel, FieldPath, StateSpec
from panda_pairs import TrajectoryPair, read_pairs
from panda_sim2real import REAL_NS, SIM_NS, JointLimits, PandaError

PANDA_TOPICS = config_path("panda_topics.yaml")
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


def read_pair_trajectories(path: str, spec: StateSpec, limits: Any = None
                           ) -> tuple[list[TrajectoryPair], str]:
    """The complete pairs of a pair bag with their commands (panda_pairs' reader), those with at
    least two samples of each robot, and the bag's label. KernelError for a missing or unreadable
    bag, a bag without /real (or /sim) joint states or pair events, or a pair without its
    command."""
    limits = limits or JointLimits.from_yaml()
    sim_topic = spec.sensors[0].topic
    real_topic = remap_namespace(spec, SIM_NS, REAL_NS).sensors[0].topic
    if real_topic == sim_topic:
        raise KernelError(f"the spec's sensor topic {sim_topic} is not under {SIM_NS}: the "
                          f"stand-in's side cannot be found")
    try:
        recording = read_pairs(path, limits.joint_names, sim_topic=sim_topic, with_commands=True,
                               limits=limits)
    except PandaError as exc:
        raise KernelError(str(exc)) from exc
    trajectories = [pair for pair in recording.pairs if len(pair.sim) >= 2 and len(pair.real) >= 2]
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


def episode(trajectory: TrajectoryPair, stream: Any, layout: PandaLayout, step: float) -> Episode:
    """One robot's run of ``trajectory`` as an Episode (module docstring)."""
    idx = step_indices(stream.t, step)
    t = stream.t[idx]
    q_ref = reference(trajectory.command, t)
    states = layout.states(stream.q[idx], stream.qd[idx], stream.tau[idx])
    return Episode(states=states, actions=layout.actions(q_ref[:-1]),
                   rewards=layout.tracking_reward(q_ref[1:], stream.q[idx][1:]),
                   stamps=t[:, None].copy())


def histories(trajectories: Sequence[TrajectoryPair], layout: PandaLayout, step: float
              ) -> tuple[History, History]:
    """H_sim and H_phy (eq. 4) of the given trajectories."""
    sim = History.from_episodes([episode(tr, tr.sim, layout, step) for tr in trajectories],
                                "simulation history")
    phy = History.from_episodes([episode(tr, tr.real, layout, step) for tr in trajectories],
                                "stand-in history")
    return sim, phy


@dataclass(frozen=True)
class PairKernels:
    """What :func:`pair_kernels` made: the kernels, Algorithm 1's report and the histories'
    sizes (transitions of H_sim and H_phy)."""

    kernels: KernelSet
    report: GenerationReport
    sim_transitions: int
    phy_transitions: int


def select_trajectories(trajectories: Sequence[TrajectoryPair], ids: Optional[Sequence[int]],
                        bag: str) -> list[TrajectoryPair]:
    """The pairs with the given trajectory ids, in the order of ``ids`` (all of them when
    ``ids`` is None); KernelError naming an id the bag does not hold."""
    if ids is None:
        return list(trajectories)
    if not ids:
        raise KernelError("no trajectory id given to make kernels from")
    by_id = {int(t.trajectory_id): t for t in trajectories}
    missing = [int(i) for i in ids if int(i) not in by_id]
    if missing:
        raise KernelError(f"bag {bag} holds no complete pair with trajectory id "
                          f"{', '.join(map(str, missing))} (it holds {min(by_id)}..{max(by_id)})")
    return [by_id[int(i)] for i in ids]


def pair_kernels(trajectories: Sequence[TrajectoryPair], spec: StateSpec, layout: PandaLayout,
                 step: float, config: GenerationConfig, progress: bool = False) -> PairKernels:
    """Kernels of pair trajectories: H_sim and H_phy (eq. 4) every ``step`` seconds, then
    Algorithm 1; the kernel set's metadata records the step and the trajectory ids."""
    h_sim, h_phy = histories(trajectories, layout, step)
    kernel_set, report = generate_kernels(h_sim, h_phy, spec, config, progress)
    kernel_set.metadata.update(step=step,
                               train_trajectories=[int(t.trajectory_id) for t in trajectories])
    return PairKernels(kernel_set, report, len(h_sim), len(h_phy))


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


def replay(robot: Any, trajectory: TrajectoryPair, layout: PandaLayout, step: float,
           manager: Optional[KernelManager] = None, settle: float = 2.0) -> Replay:
    """Run ``trajectory``'s command on ``robot`` (a panda_sim2real SimulatedRobot) with the kernel
    manager applied every step, or without (module docstring)."""
    idx = step_indices(trajectory.real.t, step)
    times = trajectory.real.t[idx]
    plan = trajectory.command
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
