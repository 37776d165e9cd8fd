"""In-process runs of the delivery mission on the vehicle simulation (no ROS master), and the
rosbag they would have produced as ROS nodes.

``run_missions`` plays what vehicle.launch plays: the vehicle publishes its sensor messages at
their own rates, the program reads the latest ones every control period, commands the vehicle and
reports perf(t). A *step hook* may stand between the two as the kernel manager does (paper 001
Fig. 2, §3.2): after the vehicle has executed action a_t for one control period it gets s_t, a_t
and the state the simulation now reports, may change the simulation through its configuration
interface (``VehicleModel.set_state``: a motor kernel) and may return the sensor values the
program reads instead (a sensor kernel's output, or a motor kernel's f_k(s, a) reported at once).

Each mission is one Episode (eq. 4 with the eq. 9 stamps) in the spec's state layout: state s_t
at every control step, action a_t, and reward r_t = perf at the next step, so the sum of r_t plus
perf at the first step (0: a mission never starts inside epsilon of its first goal) is the total
reward. Missions are separated by ``mission_gap`` seconds without messages, and the vehicle is
placed at a new start pose in between (§4). The recorded messages (``write_bag``) are what the
nodes publish, in the order they do, so that ``bag_history.read_history(bag, spec,
episode_gap=...)`` with a gap between the control period and ``mission_gap`` gives back
``RunResult.history()``.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
from tqdm import tqdm

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.history import Episode, History
from kernel_manager_ros.vehicle.mission import (
    Command, MissionConfig, MissionProgram, average_total_reward)
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.vehicle.messages import (
    CMD_TOPIC, GPS_TOPIC, GPS_VEL_TOPIC, PERF_TOPIC, PITCH_TOPIC, attitude_message,
    command_message, gps_messages, observation, perf_message, sensor_messages, sensor_stamps,
    state_vector, to_time, with_state)
from kernel_manager_ros.vehicle.model import VehicleConfig, VehicleModel


@dataclass(frozen=True)
class StepContext:
    """What a step hook sees: the step's time, s_t and its stamps, a_t, and what the simulation
    reports one control period later (before any change the hook makes)."""

    t: float
    state: np.ndarray
    stamps: np.ndarray
    action: np.ndarray
    next_state: np.ndarray
    next_stamps: np.ndarray
    vehicle: VehicleModel
    spec: StateSpec


@dataclass(frozen=True)
class SensorOverride:
    """Sensor values the program reads instead of the simulation's (with the stamps unchanged
    unless ``stamps`` is given, eq. 9)."""

    state: np.ndarray
    stamps: Optional[np.ndarray] = None


StepHook = Callable[[StepContext], Optional[SensorOverride]]

# Receive-time order within one control step in recorded bags: the sensor updates (at the step
# time), a hook's sensor override, the program's perf(t), then its command; 1 us apart.
_OVERRIDE_DELAY = 1e-6
_PERF_DELAY = 2e-6
_CMD_DELAY = 3e-6


@dataclass
class MissionLog:
    """One mission: its episode, total reward, times and true poses (x, y, yaw, speed, pitch) at
    every control step, the goal index each step worked on, the leg durations of the goals it
    reached, and (if recorded) every message as (time, topic, message)."""

    episode: Episode
    total_reward: float
    perf: np.ndarray          # (T + 1,) perf(t) at every control step
    times: np.ndarray         # (T + 1,)
    poses: np.ndarray         # (T + 1, 5)
    goal_index: np.ndarray    # (T + 1,)
    leg_durations: list[float]
    completed: bool
    messages: list[tuple[float, str, Any]] = field(default_factory=list)


@dataclass
class RunResult:
    missions: list[MissionLog]
    label: str = ""

    @property
    def totals(self) -> np.ndarray:
        return np.array([m.total_reward for m in self.missions], dtype=float)

    @property
    def atr(self) -> np.ndarray:
        """ATR after each mission (§4)."""
        return average_total_reward(self.totals)

    def history(self, what: str = "history") -> History:
        return History.from_episodes([m.episode for m in self.missions], what)

    def summary(self) -> dict[str, Any]:
        legs = [m.leg_durations for m in self.missions]
        n_goals = max((len(x) for x in legs), default=0)
        return {"label": self.label, "missions": len(self.missions),
                "atr": float(self.atr[-1]) if self.missions else math.nan,
                "total_reward_mean": float(self.totals.mean()) if self.missions else math.nan,
                "completed": int(sum(m.completed for m in self.missions)),
                "leg_duration_max": [max((x[k] for x in legs if len(x) > k), default=math.nan)
                                     for k in range(n_goals)]}


def run_missions(vehicle_config: VehicleConfig, mission: MissionConfig, spec: StateSpec,
                 missions: int, seed: int = 0, hook: Optional[StepHook] = None,
                 record_messages: bool = False, mission_gap: float = 2.0,
                 progress: bool = False, label: str = "",
                 speed_policy: Optional[Any] = None) -> RunResult:
    """Run ``missions`` missions of the program (``mission.program``) on a fresh vehicle
    simulation. ``seed`` seeds the program (start poses, command noise); the vehicle's sensor
    noise is seeded by ``vehicle_config.seed``. ``speed_policy``: a learned speed rule the
    program applies (``MissionProgram.speed_policy``, vehicle/sarsa.py)."""
    if missions < 1:
        raise KernelError(f"missions must be >= 1, got {missions}")
    vehicle = VehicleModel(vehicle_config)
    program = MissionProgram(mission, np.random.default_rng(seed))
    program.speed_policy = speed_policy
    period_steps = vehicle.steps_for(mission.period)
    logs = []
    for k in tqdm(range(missions), desc=label or "missions", disable=not progress, unit="mission"):
        t0 = vehicle.t + (mission_gap if k else 0.0)
        x, y, yaw = program.start_pose()
        vehicle.reset(x, y, yaw, t=t0)
        logs.append(_run_one(vehicle, program, spec, period_steps, hook, record_messages))
    return RunResult(logs, label)


def _run_one(vehicle: VehicleModel, program: MissionProgram, spec: StateSpec, period_steps: int,
             hook: Optional[StepHook], record: bool) -> MissionLog:
    messages: list[tuple[float, str, Any]] = []
    t = vehicle.t
    last = vehicle.readings()
    latest = sensor_messages(last)
    received = {topic: t for topic in latest}
    if record:
        messages.extend((t, topic, msg) for topic, msg in latest.items())
    program.start(t)
    states, stamps, actions, perfs, times, poses, goals = [], [], [], [], [], [], []
    legs: list[float] = []
    leg_start = t
    while True:
        t = vehicle.t
        obs = observation(latest[GPS_TOPIC], latest[GPS_VEL_TOPIC], latest[PITCH_TOPIC])
        tick = program.tick(obs, t)
        s, st = state_vector(spec, latest), sensor_stamps(spec, latest, received)
        states.append(s)
        stamps.append(st)
        perfs.append(tick.perf)
        times.append(t)
        truth = vehicle.get_state()
        poses.append((truth.x, truth.y, truth.yaw, truth.speed, truth.pitch))
        goals.append(tick.goal_index)
        if record:
            messages.append((t + _PERF_DELAY, PERF_TOPIC, perf_message(tick.perf)))
        if program.goal_index != tick.goal_index:      # reached this step's goal
            legs.append(t - leg_start)
            leg_start = t
        cmd = command_message(tick.command or Command(0.0, 0.0), t)
        if record:     # the node stops the vehicle with a last zero command at the end
            messages.append((t + _CMD_DELAY, CMD_TOPIC, cmd))
        if tick.done:
            break
        a = np.concatenate([c.values(cmd) for c in spec.actions])
        actions.append(a)
        vehicle.command(tick.command.speed, tick.command.steering)
        for _ in range(period_steps):
            vehicle.step()
            readings = vehicle.readings()
            fresh: dict[str, Any] = {}
            if readings.gps is not last.gps:
                fresh[GPS_TOPIC], fresh[GPS_VEL_TOPIC] = gps_messages(readings.gps)
            if readings.attitude is not last.attitude:
                fresh[PITCH_TOPIC] = attitude_message(readings.attitude)
            last = readings
            for topic, msg in fresh.items():
                latest[topic], received[topic] = msg, vehicle.t
                if record:
                    messages.append((vehicle.t, topic, msg))
        if hook is not None:
            override = hook(StepContext(t, s, st, a, state_vector(spec, latest),
                                        sensor_stamps(spec, latest, received), vehicle, spec))
            if override is not None:
                latest = with_state(spec, latest, override.state, override.stamps)
                if record:
                    messages.extend((vehicle.t + _OVERRIDE_DELAY, c.topic, latest[c.topic])
                                    for c in spec.sensors)
    episode = Episode(states=np.array(states), actions=np.array(actions).reshape(-1, len(
        spec.action_names)), rewards=np.array(perfs[1:], dtype=float), stamps=np.array(stamps))
    return MissionLog(episode, float(sum(perfs)), np.array(perfs, dtype=float), np.array(times),
                      np.array(poses), np.array(goals), legs,
                      completed=program.goal_index == len(program.config.goals),
                      messages=messages)


def write_bag(path: Union[str, os.PathLike], run: RunResult,
              missions: Optional[Sequence[int]] = None) -> int:
    """Write the recorded messages of ``run`` (``record_messages=True``) to a rosbag, each at its
    publication time, as ``rosbag record`` of vehicle.launch would; returns the message count."""
    import rosbag   # Debian's rosbag; imported here so the runner needs only genpy

    chosen = range(len(run.missions)) if missions is None else missions
    count = 0
    with rosbag.Bag(os.fspath(path), "w") as bag:
        for k in chosen:
            log = run.missions[k]
            if not log.messages:
                raise KernelError(f"mission {k} has no recorded messages (run with "
                                  f"record_messages=True)")
            for t, topic, msg in log.messages:
                bag.write(topic, msg, t=to_time(t))
                count += 1
    return count
