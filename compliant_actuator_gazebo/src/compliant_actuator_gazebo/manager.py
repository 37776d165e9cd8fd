"""Logic of the Plugin Manager node (paper 003 §3.2, Fig. 6 A and Fig. 7), without ROS.

The manager turns two whole-robot arrays into per-joint commands and collects the per-joint
states into whole-robot arrays. Everything here is plain Python (no rospy, no master), so that
the node's ROS side (manager_node.py) stays a thin shell and this module is tested with pytest.

Layout (the manager YAML, loaded as the node's ~config or given as ~robot/~joints)::

    robot: arm                      # topics live under /<robot>/
    joints:                         # order = order of the array elements
      - {name: joint_1, mode: 3}    # operation mode 0..6 of that joint's actuator plugin
      - {name: joint_2, mode: 5}

Fan-out (§3.2; reference sheet): element j of /<robot>/reference_1 and /<robot>/reference_2
goes to /<robot>/<joint_j>/<input>, the input chosen by the joint's mode (`MODE_INPUTS`).
Modes 0 and 1 take only the first array; their element of the second array is ignored.

Aggregation: the latest link_state / motor_1_state / motor_2_state of every joint are kept;
the whole-robot arrays (robot_state, motor_1_state, motor_2_state as JointState-like arrays,
robot_stiffness with stiffness and deflection, which the reference release dropped) exist only
once EVERY joint has reported on that stream and are stamped with the newest per-joint stamp.
When they are published is `schedule.StreamSchedule`'s decision (only after new data: a paused
simulation is not republished as fresh data).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from sim2real_checks import Rejected, read_yaml

from compliant_actuator_gazebo.bounds import JointBounds
from compliant_actuator_gazebo.errors import CompliantError

# Per operation mode (paper 003 §3.1 / §3.2): input fed by reference_1, input fed by reference_2
# (None: the second array is ignored in that mode).
MODE_INPUTS: dict[int, tuple[str, Optional[str]]] = {
    0: ("torque_command", None),                          # rigid joint, link torque
    1: ("link_command", None),                            # PID on the link position
    2: ("reference_1", "reference_2"),                    # given motor positions
    3: ("equilibrium_position", "stiffness_preset"),      # compliance model from (eq, preset)
    4: ("motor_1_command", "motor_2_command"),            # motor torques
    5: ("reference_1", "reference_2"),                    # motor PID to motor positions
    6: ("equilibrium_position", "stiffness_preset"),      # motor PID from (eq, preset)
}
ARRAYS = ("reference_1", "reference_2")
# Per-joint state streams and the whole-robot outputs built from them.
STREAMS = ("link_state", "motor_1_state", "motor_2_state")
OUTPUTS: dict[str, str] = {"robot_state": "link_state", "motor_1_state": "motor_1_state",
                           "motor_2_state": "motor_2_state", "robot_stiffness": "link_state"}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")   # one ROS graph-name segment


class LayoutError(CompliantError):
    """The manager layout (YAML file or parameters) is unusable; the message is one line. A
    ValueError (through :class:`CompliantError`)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class ArrayRejected(Rejected):
    """A whole-robot reference array is unusable: ``size`` (length), ``type`` (not numbers),
    ``non_finite``, ``bounds`` (beyond the input's physical range); one line."""


@dataclass(frozen=True)
class JointSpec:
    name: str
    mode: int


@dataclass(frozen=True)
class RobotLayout:
    """Robot name and its joints (name, operation mode) in array order."""

    robot: str
    joints: tuple[JointSpec, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(j.name for j in self.joints)

    @classmethod
    def from_dict(cls, data: Any, source: str = "manager layout") -> "RobotLayout":
        """Validate {robot: str, joints: [{name: str, mode: 0..6}, ...]} (the mapping a launch
        file loaded as the node's ~config, or a file's content: :meth:`from_yaml` reads the
        file, then calls this); LayoutError naming `source` and the entry otherwise (unknown
        keys are refused: they are usually typos)."""
        if not isinstance(data, Mapping):
            raise LayoutError(f"{source}: expected a mapping with keys 'robot' and 'joints', "
                              f"got {type(data).__name__}")
        _check_keys(data, ("robot", "joints"), source)
        robot = data["robot"]
        if not isinstance(robot, str) or not _NAME.match(robot.strip("/")):
            raise LayoutError(f"{source}: 'robot' must be a ROS name such as 'arm', got {robot!r}")
        entries = data["joints"]
        if not isinstance(entries, list) or not entries:
            raise LayoutError(f"{source}: 'joints' must be a non-empty list of "
                              "{{name: <joint>, mode: 0..6}}")
        joints = [_joint_spec(entry, i, source) for i, entry in enumerate(entries)]
        seen: set[str] = set()
        for joint in joints:
            if joint.name in seen:
                raise LayoutError(f"{source}: joint '{joint.name}' is listed twice")
            seen.add(joint.name)
        return cls(robot.strip("/"), tuple(joints))

    @classmethod
    def from_yaml(cls, path: str) -> "RobotLayout":
        """Read a manager YAML file; one-line LayoutError for a missing, unreadable, corrupt or
        invalid file."""
        data = read_yaml(path, "manager config", LayoutError)
        return cls.from_dict(data, source=f"manager config {path}")

    def robot_topic(self, name: str) -> str:
        """/<robot>/<name>: the whole-robot arrays."""
        return f"/{self.robot}/{name}"

    def joint_topic(self, joint: str, name: str) -> str:
        """/<robot>/<joint>/<name>: one joint's plugin topics (reference sheet)."""
        return f"/{self.robot}/{joint}/{name}"

    def input_topics(self, array: str) -> list[Optional[str]]:
        """Per joint, the input topic fed by `array` ('reference_1' or 'reference_2'); None where
        the joint's mode ignores that array."""
        column = _array_index(array)
        return [None if MODE_INPUTS[j.mode][column] is None
                else self.joint_topic(j.name, MODE_INPUTS[j.mode][column])
                for j in self.joints]


def _check_keys(data: Mapping, keys: tuple[str, str], where: str) -> None:
    """Exactly ``keys``: a missing one or an unknown one (usually a typo) is a LayoutError."""
    for key in keys:
        if key not in data:
            raise LayoutError(f"{where}: missing key '{key}'")
    unknown = sorted(set(map(str, data)) - set(keys))
    if unknown:
        raise LayoutError(f"{where}: unknown key(s) {', '.join(unknown)} "
                          f"(expected '{keys[0]}' and '{keys[1]}')")


def _joint_spec(entry: Any, index: int, source: str) -> JointSpec:
    where = f"{source}: joints[{index}]"
    if not isinstance(entry, Mapping):
        raise LayoutError(f"{where} must be a mapping {{name: <joint>, mode: 0..6}}, got {entry!r}")
    _check_keys(entry, ("name", "mode"), where)
    name, mode = entry["name"], entry["mode"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise LayoutError(f"{where}: 'name' must be a joint name such as 'joint_1', got {name!r}")
    if isinstance(mode, bool) or not isinstance(mode, int) or mode not in MODE_INPUTS:
        raise LayoutError(f"{where} ('{name}'): 'mode' must be an integer 0..6, got {mode!r}")
    return JointSpec(name, mode)


def _array_index(array: str) -> int:
    if array not in ARRAYS:
        raise CompliantError(f"unknown array {array!r}: expected one of {ARRAYS}")
    return ARRAYS.index(array)


def check_array(layout: RobotLayout, array: str, values: Sequence[float],
                bounds: Optional[Mapping[str, JointBounds]] = None) -> list[float]:
    """The array as floats, or ArrayRejected naming the problem: a length other than the number
    of joints (the reference release read out of bounds), a NaN/infinite/non-numeric value, or
    (with the joints' ``bounds``) a value beyond the range of the input it goes to."""
    try:
        n = len(values)
    except TypeError:
        raise ArrayRejected("type", f"{array} is not an array: {values!r}") from None
    if n != len(layout.joints):
        raise ArrayRejected("size", f"{array} has {n} values, robot '{layout.robot}' has "
                                    f"{len(layout.joints)} joints ({', '.join(layout.names)})")
    column = _array_index(array)
    result = []
    for i, (value, joint) in enumerate(zip(values, layout.joints)):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ArrayRejected("type", f"{array}[{i}] ({joint.name}) is not a number: "
                                        f"{value!r}") from None
        if not math.isfinite(number):
            raise ArrayRejected("non_finite", f"{array}[{i}] ({joint.name}) is {number}: "
                                              f"finite values only")
        target = MODE_INPUTS[joint.mode][column]
        accepted = bounds[joint.name].inputs[target] \
            if bounds and joint.name in bounds and target else None
        if accepted is not None and not accepted.low <= number <= accepted.high:
            raise ArrayRejected("bounds", f"{array}[{i}] ({joint.name} {target}) {number:.4g} "
                                          f"outside [{accepted.low:.4g}, {accepted.high:.4g}]")
        result.append(number)
    return result


def fan_out(layout: RobotLayout, reference_1: Optional[Sequence[float]] = None,
            reference_2: Optional[Sequence[float]] = None,
            bounds: Optional[Mapping[str, JointBounds]] = None) -> list[tuple[str, float]]:
    """(topic, value) pairs to publish as std_msgs/Float64 for the given arrays (either may be
    None: the node forwards each array on arrival, independently). Every given array is checked
    first (check_array), so a rejected array publishes nothing; ArrayRejected names the
    problem."""
    arrays = {name: check_array(layout, name, values, bounds)
              for name, values in zip(ARRAYS, (reference_1, reference_2)) if values is not None}
    return [(topic, value)
            for name, values in arrays.items()
            for topic, value in zip(layout.input_topics(name), values) if topic is not None]


@dataclass(frozen=True)
class JointSample:
    """One joint's message on one stream. stamp: integer nanoseconds (exact, comparable)."""

    stamp: int
    position: float
    velocity: float
    effort: float
    stiffness: float = 0.0
    deflection: float = 0.0


@dataclass(frozen=True)
class RobotArrays:
    """Whole-robot arrays in layout order: a sensor_msgs/JointState (robot_state,
    motor_1_state, motor_2_state) or a RobotStiffness (robot_stiffness: stiffness, deflection)."""

    stamp: int
    name: tuple[str, ...]
    position: tuple[float, ...] = ()
    velocity: tuple[float, ...] = ()
    effort: tuple[float, ...] = ()
    stiffness: tuple[float, ...] = ()
    deflection: tuple[float, ...] = ()


class StateAggregator:
    """Latest sample per (stream, joint) -> whole-robot arrays (see module docstring)."""

    def __init__(self, layout: RobotLayout) -> None:
        self.layout = layout
        self._latest: dict[str, dict[str, JointSample]] = {s: {} for s in STREAMS}

    def update(self, stream: str, joint: str, sample: JointSample) -> None:
        """Keep ``sample`` as ``joint``'s latest on ``stream``; CompliantError (the previous sample
        kept) for an unknown stream or joint or a non-finite value, which would otherwise reach
        every whole-robot array."""
        if stream not in self._latest:
            raise CompliantError(f"unknown stream {stream!r}: expected one of {STREAMS}")
        if joint not in self.layout.names:
            raise CompliantError(f"joint {joint!r} is not in the layout of robot '{self.layout.robot}'")
        bad = [name for name in ("position", "velocity", "effort", "stiffness", "deflection")
               if not math.isfinite(getattr(sample, name))]
        if bad:
            raise CompliantError(f"{stream} of {joint}: NaN/Inf in {', '.join(bad)}")
        self._latest[stream][joint] = sample

    def arrays(self, output: str) -> Optional[RobotArrays]:
        """The whole-robot arrays of `output` (a key of OUTPUTS), None until every joint has
        reported on its stream."""
        latest = self._latest[OUTPUTS[output]]
        if len(latest) < len(self.layout.joints):
            return None
        samples = [latest[name] for name in self.layout.names]
        stamp = max(s.stamp for s in samples)
        if output == "robot_stiffness":
            return RobotArrays(stamp, self.layout.names,
                               stiffness=tuple(s.stiffness for s in samples),
                               deflection=tuple(s.deflection for s in samples))
        return RobotArrays(stamp, self.layout.names,
                           position=tuple(s.position for s in samples),
                           velocity=tuple(s.velocity for s in samples),
                           effort=tuple(s.effort for s in samples))
