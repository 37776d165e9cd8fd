"""Paired real/sim trajectory collection (paper 000 §IV-B: "the same trajectories [executed] once
on a real robot and once in a simulated environment"), recorded to a rosbag.

The in-process collector steps both robots in lock-step at the physics rate (deterministic for a
seed, no ROS master of the user's): the simulator is a SimulatedRobot (PyBullet) or a GazeboRobot
(Gazebo 11, stepped through step_world), the robot the reality stand-in; the ``pair_runner`` node
does the same over topics against live robots.
Both write the same bag layout:

* ``/sim/joint_states``, ``/real/joint_states`` (sensor_msgs/JointState, stamp = robot time)
* ``/sim/joint_trajectory_controller/command``, ``/real/...`` (trajectory_msgs/JointTrajectory)
* ``/pairs/event`` (panda_sim2real/PairEvent: START at the planned start, END at start + duration)
* ``/real/label`` (std_msgs/String: "reality stand-in" unless recorded on a real robot)
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Sequence

import numpy as np
import rosbag
from std_msgs.msg import String

from panda_sim2real import (COMMAND, EVENTS, JOINT_STATES, JointMeasurement, LABEL, PlannedTrajectory,
                            REAL_NS, SIM_NS, SimulatedRobot, TrajectoryGenerator, joint_state_msg,
                            joint_trajectory_msg, to_time, topic)
from panda_sim2real.msg import PairEvent


class LockStepRobot(Protocol):
    """What the collector and the re-simulation drive: SimulatedRobot and GazeboRobot."""

    dt: float
    label: str

    @property
    def t(self) -> float: ...

    def command(self, trajectory: PlannedTrajectory) -> PlannedTrajectory: ...

    def advance(self, until: float) -> list[JointMeasurement]: ...


def pair_event(trajectory_id: int, kind: str, event: int, stamp: float, duration: float) -> PairEvent:
    msg = PairEvent()
    msg.header.stamp = to_time(stamp)
    msg.trajectory_id = int(trajectory_id)
    msg.kind = kind
    msg.event = event
    msg.duration = float(duration)
    return msg


class PairBagWriter:
    """Writes the pair layout above into a new bag (use as a context manager)."""

    def __init__(self, path: str, joint_names: Sequence[str], label: str) -> None:
        self._bag = rosbag.Bag(path, "w")
        self._names = list(joint_names)
        self._bag.write(LABEL, String(data=label), to_time(0.0))

    def __enter__(self) -> "PairBagWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def joint_state(self, namespace: str, measurement: JointMeasurement) -> None:
        self._bag.write(topic(namespace, JOINT_STATES), joint_state_msg(measurement, self._names),
                        to_time(measurement.stamp))

    def command(self, namespace: str, trajectory: PlannedTrajectory, stamp: float) -> None:
        self._bag.write(topic(namespace, COMMAND), joint_trajectory_msg(trajectory, self._names),
                        to_time(stamp))

    def event(self, msg: PairEvent, stamp: float) -> None:
        self._bag.write(EVENTS, msg, to_time(stamp))

    def close(self) -> None:
        self._bag.close()


@dataclass(frozen=True)
class CollectionSummary:
    trajectories: int
    kinds: dict[str, int]
    simulated_seconds: float


def collect_pairs(sim: LockStepRobot, real: SimulatedRobot, generator: TrajectoryGenerator,
                  count: int, kinds: Sequence[str], writer: PairBagWriter,
                  lead_time: float = 0.05, settle_time: float = 2.0,
                  progress: Optional[Callable[[int], None]] = None) -> CollectionSummary:
    """Execute ``count`` generated trajectories on both robots from the same start, stepping them
    in lock-step, and record every published state, command and start/end event.

    Each trajectory starts ``lead_time`` after the previous one ended (both robots at rest) from
    the previous planned end configuration; the first starts at the robots' home pose after
    ``settle_time`` seconds of holding it (the simulator's PID needs its integral to carry the
    gravity load), so that every trajectory begins with both robots at rest. The robots do not
    interact: each runs to the next event on its own, a simulator that waits for another process
    (``concurrent``, Gazebo) while the stand-in steps here.
    """
    if abs(sim.dt - real.dt) > 1e-12:
        raise ValueError("both robots must run at the same physics rate for lock-step collection")
    start_q = np.asarray(real.executor.reference(real.t)[0])
    counts: dict[str, int] = {}
    t_begin = real.t
    pool = ThreadPoolExecutor(1) if getattr(sim, "concurrent", False) else None

    def run_until(until: float) -> None:
        if pool is not None:             # the simulator in its process while the stand-in steps
            future = pool.submit(sim.advance, until)
            real_states = real.advance(until)
            sim_states = future.result()
        else:
            sim_states = sim.advance(until)
            real_states = real.advance(until)
        for m in sim_states:
            writer.joint_state(SIM_NS, m)
        for m in real_states:
            writer.joint_state(REAL_NS, m)

    try:
        run_until(real.t + settle_time)
        for trajectory_id in range(count):
            move = generator.next(start_q, kinds)
            start = real.t + lead_time
            planned = move.trajectory.at(start)
            for namespace, robot in ((SIM_NS, sim), (REAL_NS, real)):
                robot.command(planned)
                writer.command(namespace, planned, real.t)
            writer.event(pair_event(trajectory_id, move.kind, PairEvent.START, start, planned.duration), start)
            end = start + planned.duration
            run_until(end)
            writer.event(pair_event(trajectory_id, move.kind, PairEvent.END, end, planned.duration), end)
            start_q = planned.positions[-1]
            counts[move.kind] = counts.get(move.kind, 0) + 1
            if progress is not None:
                progress(1)
    finally:
        if pool is not None:
            pool.shutdown()
    return CollectionSummary(count, counts, real.t - t_begin)
