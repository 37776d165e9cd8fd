"""The ``compliant_sim`` node (nodes/compliant_sim is its start-up): a robot description with
compliant-actuator plugin blocks run in PyBullet, the embedded counterpart of Gazebo +
CompliantActuatorPlugin (paper 003 §3: rigid bodies eq. 1 by PyBullet, the actuators' spring
torques eq. 3-6, motor dynamics eq. 7-10 and PID eq. 11 by the core; embedded.py), with the
plugin's per-joint topics (topics.py). Parameters (:class:`SimParams`), topics, clock and input
checks: compliant_actuator_gazebo/README.md, "Nodes", "compliant_sim".
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import rospy
from rosgraph_msgs.msg import Clock
from sim2real_checks import GuardDiagnostics, node_guard, number_param

from compliant_actuator_gazebo.description import RobotDescription, parse_description
from compliant_actuator_gazebo.embedded import INPUTS, EmbeddedSimulation
from compliant_actuator_gazebo.errors import CompliantError, ParameterError
from compliant_actuator_gazebo.topics import RobotTopics


def _mapping(where: str, value: Any, shapes: tuple[str, ...]) -> dict:
    """``value`` as nested {name: ... finite number} mappings, ``shapes[i]`` the expected form
    at depth i (e.g. "{joint: value}"); ParameterError naming the entry."""
    if not isinstance(value, Mapping):
        raise ParameterError(f"{where} must be a mapping {shapes[0]}, got {value!r}")
    out = {}
    for key, item in value.items():
        if len(shapes) > 1:
            out[str(key)] = _mapping(f"{where}[{key}]", item, shapes[1:])
        elif isinstance(item, bool) or not isinstance(item, (int, float)) \
                or not math.isfinite(item):
            raise ParameterError(f"{where}[{key}] must be a finite number, got {item!r}")
        else:
            out[str(key)] = float(item)
    return out


@dataclass(frozen=True)
class SimParams:
    """compliant_sim's parameters (module docstring), read once at start-up."""

    description: RobotDescription
    physics_rate: float = 1000.0
    publish_rate: float = 100.0            # already capped at physics_rate
    clock_rate: float = 1000.0
    real_time_factor: float = 1.0
    gravity: float = 9.81
    initial_positions: Mapping[str, float] = field(default_factory=dict)
    initial_inputs: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @classmethod
    def from_ros(cls) -> "SimParams":
        """From the parameter server; ParameterError or DescriptionError (one line) otherwise."""
        text = rospy.get_param("~robot_description", None) or rospy.get_param("robot_description",
                                                                              None)
        if not text:
            raise ParameterError("no robot description (set ~robot_description or "
                                 "robot_description)")
        if not isinstance(text, str):
            raise ParameterError(f"the robot description must be URDF text, got "
                                 f"{type(text).__name__}")
        description = parse_description(text)
        physics_rate = number_param("~physics_rate", 1000.0, ParameterError, positive=True)
        initial_positions = _mapping("~initial_positions",
                                     rospy.get_param("~initial_positions", None) or {},
                                     ("{joint: value}",))
        movable = [j.name for j in description.joints if j.type != "fixed"]
        unknown = sorted(set(initial_positions) - set(movable))
        if unknown:
            raise ParameterError(f"~initial_positions: unknown or fixed joints {unknown} "
                                 f"(movable: {', '.join(movable)})")
        initial_inputs = _mapping("~initial_inputs", rospy.get_param("~initial_inputs", None) or {},
                                  ("{joint: {input: value}}", "{input: value}"))
        for joint, inputs in initial_inputs.items():
            if joint not in description.compliant_names:
                raise ParameterError(f"~initial_inputs: {joint!r} is not a compliant joint of "
                                     f"{description.name!r} (compliant joints: "
                                     f"{', '.join(description.compliant_names) or 'none'})")
            unknown = sorted(set(inputs) - set(INPUTS))
            if unknown:
                raise ParameterError(f"~initial_inputs[{joint}]: unknown inputs {unknown} "
                                     f"(inputs: {', '.join(INPUTS)})")
        return cls(
            description=description,
            physics_rate=physics_rate,
            publish_rate=min(number_param("~publish_rate", 100.0, ParameterError, positive=True,
                                          finite=False), physics_rate),
            clock_rate=number_param("~clock_rate", 1000.0, ParameterError, positive=True, finite=False),
            real_time_factor=number_param("~real_time_factor", 1.0, ParameterError, minimum=0.0,
                                          finite=False),
            gravity=number_param("~gravity", 9.81, ParameterError),
            initial_positions=initial_positions, initial_inputs=initial_inputs)


class SimNode:
    """The simulation of :class:`SimParams`, its per-joint topics, /clock and diagnostics;
    :meth:`spin` runs it, :meth:`close` ends it."""

    def __init__(self, params: SimParams) -> None:
        self.params = params
        try:
            self.sim = EmbeddedSimulation(params.description, physics_rate=params.physics_rate,
                                          gravity=params.gravity,
                                          initial_positions=params.initial_positions,
                                          initial_inputs=params.initial_inputs)
        except CompliantError:
            raise
        except (KeyError, ValueError) as exc:     # what SimParams could not check
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise ParameterError(f"~initial_positions / ~initial_inputs: {message}") from None
        try:
            self._warned: set[str] = set()
            self.warn_unstable()
            guard = node_guard()
            self.topics = RobotTopics.for_description(self.sim.description, guard)
            self.diagnostics = GuardDiagnostics(guard)
        except BaseException:
            self.sim.close()
            raise
        sim_time = bool(rospy.get_param("/use_sim_time", False))
        self.clock = rospy.Publisher("/clock", Clock, queue_size=10) if sim_time else None
        self.origin = rospy.Time(0) if sim_time else rospy.Time.now()
        self.steps_per_publish = max(1, round(params.physics_rate / params.publish_rate))
        rospy.loginfo(f"compliant_sim: robot {self.sim.description.name!r}, compliant joints "
                      f"{', '.join(self.sim.joints) or 'none'}; {params.physics_rate:g} Hz "
                      f"physics, publishing every {self.steps_per_publish} steps, real-time "
                      f"factor {params.real_time_factor:g}")

    @classmethod
    def from_parameters(cls) -> "SimNode":
        return cls(SimParams.from_ros())

    def warn_unstable(self) -> None:
        """The stability report's new lines as warnings (at start and after each preset change)."""
        for line in self.sim.stability_report():
            if line not in self._warned:
                self._warned.add(line)
                rospy.logwarn(f"compliant_sim: {line}")

    def now(self) -> rospy.Time:
        """The stamp of the current simulated time, exact in ns."""
        return self.origin + rospy.Duration(0, round(self.sim.time * 1e9))

    def spin(self) -> None:
        """Step, pace against wall time, publish /clock and the states until shutdown."""
        sim, topics, clock = self.sim, self.topics, self.clock
        rtf, clock_period = self.params.real_time_factor, 1.0 / self.params.clock_rate
        wall_start = last_clock = time.monotonic()
        if clock is not None:
            clock.publish(Clock(clock=self.now()))
        topics.publish(sim, self.now())
        while not rospy.is_shutdown():
            for i in range(self.steps_per_publish):
                if topics.apply_inputs(sim):      # a stiffness preset changed
                    self.warn_unstable()
                sim.step()
                wall = time.monotonic()
                if clock is not None and (wall - last_clock >= clock_period
                                          or i == self.steps_per_publish - 1):
                    clock.publish(Clock(clock=self.now()))   # never behind the stamps published
                    last_clock = wall
                if rtf > 0.0:
                    ahead = wall_start + sim.time / rtf - wall
                    if ahead > 0.001:
                        time.sleep(ahead)
            topics.publish(sim, self.now())

    def close(self) -> None:
        self.diagnostics.shutdown()
        self.sim.close()
