"""Re-simulation of a recorded pair bag with another simulator configuration.

The simulator (e.g. with a URDF identified by diffnea_ros, paper 002) executes the bag's own
commands at their recorded times, from the recorded start pose, and its joint states replace the
bag's ``/sim`` side; everything the robot recorded (``/real``, the pair events, the label) is
copied unchanged. A bag recorded on a real robot through ``fci_bridge`` and ``pair_runner`` thus
gets new sim/real pairs without moving the robot again, with the same trajectories and the same
time parametrisation (issue 17, step 3).

One pass in bag time order: the simulator runs from one command to the next (in PyBullet, or in
Gazebo 11 lock-stepped: ``sim``; at most STRETCH_MESSAGES copied messages at a time), and the
states it published in between are written merged with the copied messages of that stretch, so
the output is written in time order. The simulator starts at
rest at the first command's start pose at the bag's first stamp (the collector and the pair
runner hold that pose before the first move) and receives every command when the original
simulator did (the bag time of ``/sim/joint_trajectory_controller/command``; ``/real/...`` for a
bag without it). Other ``/sim`` topics of the input (the old simulator's reference, its
corrected states) would contradict the new states and are left out.
"""
from __future__ import annotations

import heapq
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import rosbag

from panda_sim2real import (COMMAND, JOINT_STATES, JointLimits, PandaError, REAL_NS, SIM_CONFIG_FILE, SIM_NS,
                            joint_state_msg, to_time, topic, trajectory_from_msg)
from panda_pairs.collection import load_simulator
from panda_pairs.errors import BagError
from panda_pairs.joint_state_bag import BagFile, decode, unreadable_bag

SIM_STATES = topic(SIM_NS, JOINT_STATES)
STRETCH_MESSAGES = 20000
"""Copied messages held at most before the simulator runs up to them and they are written."""
COMMAND_TOPICS = (topic(SIM_NS, COMMAND), topic(REAL_NS, COMMAND))


@dataclass(frozen=True)
class ResimulationRequest:
    """What ``rosrun panda_pairs resimulate`` asks for."""

    bag: str
    out: str
    sim_config: str = SIM_CONFIG_FILE
    seed: int = 0                    # as collect's --seed: shifts the simulator's noise seed
    rate: Optional[float] = None     # publish rate [Hz]; None: the sim config's
    sim: str = "pybullet"            # the simulator: the sim config's engine, or gazebo


@dataclass(frozen=True)
class ResimulationSummary:
    bag: str
    out: str
    label: str                       # the simulator's label (its config's)
    commands: int
    copied_messages: int
    sim_states: int
    simulated_seconds: float
    wall_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def command_topic(bag: BagFile) -> str:
    """The command topic the simulator follows: the simulator's own, else the robot's."""
    for name in COMMAND_TOPICS:
        if name in bag.topics:
            return name
    raise BagError(f"bag {bag.path} has no trajectory commands ({' or '.join(COMMAND_TOPICS)}); "
                   f"it is not a pair bag")


def _first_command(bag: BagFile, commands: str, limits: JointLimits) -> tuple[float, Any]:
    """(bag start time [s], the first command) of ``bag``."""
    first = next(bag.messages([commands]), None)
    if first is None:
        raise BagError(f"bag {bag.path}: {commands} holds no message")
    try:
        return bag.start_time(), trajectory_from_msg(first[1], limits)
    except PandaError as exc:
        raise BagError(f"bag {bag.path}: the first command on {commands} is invalid: "
                       f"{exc}") from exc


def resimulate(request: ResimulationRequest, limits: Optional[JointLimits] = None,
               progress: Optional[Callable[[int], None]] = None) -> ResimulationSummary:
    """Write ``request.out``: ``request.bag`` with its simulator side re-simulated (module
    docstring). BagError for a missing, corrupt or non-pair bag or an invalid command in it;
    ConfigError for an unusable simulator configuration; the output is then not left behind."""
    limits = limits or JointLimits.from_yaml()
    sim = load_simulator(request.sim, request.sim_config, limits, request.seed, request.rate)
    wall = time.perf_counter()
    out: Optional[rosbag.Bag] = None
    copied = states = n_commands = 0
    try:
        with BagFile(request.bag) as bag:
            commands = command_topic(bag)
            if topic(REAL_NS, JOINT_STATES) not in bag.topics:
                raise BagError(f"bag {request.bag} has no {topic(REAL_NS, JOINT_STATES)}: "
                               f"nothing to pair the simulation with")
            t0, first = _first_command(bag, commands, limits)
            sim.reset(first.positions[0], t=t0)
            keep = [name for name in bag.topics if not name.startswith(SIM_NS + "/")
                    or name in COMMAND_TOPICS]
            out = rosbag.Bag(request.out, "w")
            names = list(limits.joint_names)
            stretch: list = []          # the copied messages since the last command

            def flush(until: float) -> int:
                """Run the simulator to ``until``; write its states and the stretch in time order."""
                simulated = [(m.stamp, SIM_STATES, joint_state_msg(m, names), None)
                             for m in sim.advance(until)]
                for t, name, msg, stamp in heapq.merge(simulated, stretch, key=lambda e: e[0]):
                    if stamp is None:
                        out.write(name, msg, to_time(t))
                    else:
                        out.write(name, msg, stamp, raw=True)
                stretch.clear()
                return len(simulated)

            for name, msg, stamp in bag.raw_messages(keep):
                t = stamp.to_sec()
                if name == commands:
                    try:
                        plan = trajectory_from_msg(decode(msg), limits)
                    except PandaError as exc:
                        raise BagError(f"bag {request.bag}: a command on {commands} at "
                                       f"{t:.3f} s is invalid: {exc}") from exc
                    states += flush(t)
                    sim.command(plan)
                    n_commands += 1
                elif len(stretch) >= STRETCH_MESSAGES:      # bounded memory on long stretches
                    states += flush(t)
                stretch.append((t, name, msg, stamp))
                copied += 1
                if progress is not None:
                    progress(1)
            if stretch:
                states += flush(stretch[-1][0])
            simulated = sim.t - t0
        out.close()
        out = None
    except BaseException:
        if out is not None:
            out.close()
            _remove(request.out)
        raise
    finally:
        sim.close()
    return ResimulationSummary(request.bag, request.out, sim.label, n_commands, copied, states,
                               simulated, time.perf_counter() - wall)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def message_count(path: str) -> int:
    """The number of messages of a bag (for a progress bar); BagError if unreadable."""
    try:
        with rosbag.Bag(path, "r") as bag:
            return int(bag.get_message_count())
    except Exception as exc:   # rosbag raises many types for a bad file
        raise unreadable_bag(path, exc) from exc
