"""Which topics make the state, the action and the reward (paper 001 eqs. 1-2 and 8).

A YAML file (``StateSpec.from_yaml``; ``StateSpec.from_dict`` for its content, e.g. the mapping
a launch file loaded onto the parameter server) names the sensors SN (their fields span the state
space S, eq. 2), the control outputs AN (the action space A, eq. 1) and the reward topic::

    epsilon_c: 0.2            # eq. 8 threshold: states closer than this are the same state
    epsilon_a: 0.05           # the same for actions (optional, default epsilon_c)
    sensors:
      - {name: gps, topic: /vehicle/gps, type: geometry_msgs/PointStamped,
         fields: [point.x, point.y], weights: [1, 1], stamp: header}
      - {name: pitch, topic: /vehicle/pitch, type: std_msgs/Float64, fields: [data],
         weights: [2], stamp: receive}
    actions:
      - {name: cmd, topic: /vehicle/cmd, type: kernel_manager_ros/VehicleCommand,
         fields: [speed, steering_angle]}
    reward: {name: reward, topic: /mission/reward, type: std_msgs/Float64, fields: [data]}

A channel of sensor_msgs/JointState may name its joints (``joints: [panda_joint1, ...]``): its
``position[i]`` fields read the arrays by index, so the node refuses a message whose ``name``
does not start with these joints in this order.

Steps are defined by the action messages: each message on the first action channel is one step,
whose state s is the latest value of every sensor at that time (and whose other actions are the
latest values of the other action channels). ``weights`` are the w_i of eq. 8 (default 1 per
field); ``StateSpec.weights`` normalises them to sum 1 as eq. 8 requires. ``stamp`` says where a
sensor's time stamp (eq. 9) comes from: the message header or the bag's receive time.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from sim2real_checks import read_yaml as read_yaml_file

from kernel_manager_ros.errors import KernelError

STAMP_SOURCES = ("header", "receive")
_STEP = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")


@dataclass(frozen=True)
class FieldPath:
    """An attribute path into a ROS message: ``"point.x"``, ``"data"``, ``"position[3]"``."""

    text: str
    steps: tuple[tuple[str, Optional[int]], ...]

    @classmethod
    def parse(cls, text: str) -> "FieldPath":
        if not isinstance(text, str) or not text:
            raise KernelError(f"field path must be a non-empty string, got {text!r}")
        steps = []
        for part in text.split("."):
            match = _STEP.match(part)
            if match is None:
                raise KernelError(f"malformed field path {text!r} (expected e.g. 'point.x', "
                                  f"'data' or 'position[3]')")
            steps.append((match.group(1), None if match.group(2) is None
                          else int(match.group(2))))
        return cls(text, tuple(steps))

    def get(self, msg: Any) -> float:
        """The field's value as a float; KernelError if absent or not a number."""
        value = msg
        for attr, index in self.steps:
            try:
                value = getattr(value, attr)
                if index is not None:
                    value = value[index]
            except (AttributeError, IndexError, TypeError) as exc:
                raise KernelError(f"message {type(msg).__name__} has no field "
                                  f"{self.text}: {exc}") from exc
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            raise KernelError(f"field {self.text} of {type(msg).__name__} is not a number: "
                              f"{value!r}") from exc

    def set(self, msg: Any, value: Any) -> None:
        """Write ``value`` into the field (indexed lists grow with zeros as needed)."""
        target = msg
        for k, (attr, index) in enumerate(self.steps):
            last = k == len(self.steps) - 1
            if index is None:
                if last:
                    setattr(target, attr, value)
                else:
                    target = getattr(target, attr)
                continue
            seq = list(getattr(target, attr))
            if len(seq) <= index:
                seq.extend([0.0] * (index + 1 - len(seq)))
            if last:
                seq[index] = value
                setattr(target, attr, seq)
            else:
                setattr(target, attr, seq)
                target = seq[index]


@dataclass(frozen=True)
class Channel:
    """One topic: a sensor sn_i (its fields are the sensor's value set Sv_i), a control output
    an_j, or the reward. ``fields`` are attribute paths into the message; ``joints`` the joints
    a JointState's ``name`` starts with (empty: not checked)."""

    name: str
    topic: str
    msg_type: str
    fields: tuple[str, ...]
    weights: tuple[float, ...]
    stamp: str = "header"
    joints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise KernelError(f"channel name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.topic, str) or not self.topic:
            raise KernelError(f"channel {self.name}: topic must be a non-empty string")
        if not isinstance(self.msg_type, str) or "/" not in self.msg_type:
            raise KernelError(f"channel {self.name}: type must look like 'pkg/Message', "
                              f"got {self.msg_type!r}")
        if not self.fields:
            raise KernelError(f"channel {self.name}: at least one field is needed")
        for text in self.fields:
            FieldPath.parse(text)
        if len(self.weights) != len(self.fields):
            raise KernelError(f"channel {self.name}: {len(self.weights)} weights for "
                              f"{len(self.fields)} fields")
        if any(not math.isfinite(w) or w < 0.0 for w in self.weights):
            raise KernelError(f"channel {self.name}: weights must be finite and >= 0, got "
                              f"{list(self.weights)}")
        if self.stamp not in STAMP_SOURCES:
            raise KernelError(f"channel {self.name}: stamp must be one of {STAMP_SOURCES}, got "
                              f"{self.stamp!r}")
        if not all(isinstance(n, str) and n for n in self.joints) \
                or len(set(self.joints)) != len(self.joints):
            raise KernelError(f"channel {self.name}: joints must be distinct joint names, got "
                              f"{list(self.joints)}")

    @property
    def paths(self) -> tuple[FieldPath, ...]:
        return tuple(FieldPath.parse(f) for f in self.fields)

    @property
    def names(self) -> tuple[str, ...]:
        """Qualified names of the channel's values: ``<channel>.<field>``."""
        return tuple(f"{self.name}.{f}" for f in self.fields)

    def values(self, msg: Any) -> np.ndarray:
        return np.array([p.get(msg) for p in self.paths], dtype=float)

    @classmethod
    def from_dict(cls, data: Any, what: str) -> "Channel":
        if not isinstance(data, Mapping):
            raise KernelError(f"{what} must be a mapping with name, topic, type, fields")
        unknown = set(data) - {"name", "topic", "type", "fields", "weights", "stamp", "joints"}
        if unknown:
            raise KernelError(f"{what}: unknown keys {sorted(unknown)}")
        for key in ("name", "topic", "type", "fields"):
            if key not in data:
                raise KernelError(f"{what}: missing key '{key}'")
        fields = data["fields"]
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise KernelError(f"{what}: fields must be a list of strings")
        weights = data.get("weights", [1.0] * len(fields))
        if not isinstance(weights, list) or not all(
                isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights):
            raise KernelError(f"{what}: weights must be a list of numbers")
        joints = data.get("joints", [])
        if not isinstance(joints, list):
            raise KernelError(f"{what}: joints must be a list of joint names")
        return cls(name=str(data["name"]), topic=str(data["topic"]), msg_type=str(data["type"]),
                   fields=tuple(fields), weights=tuple(float(w) for w in weights),
                   stamp=str(data.get("stamp", "header")), joints=tuple(joints))

    def to_dict(self) -> dict[str, Any]:
        data = {"name": self.name, "topic": self.topic, "type": self.msg_type,
                "fields": list(self.fields), "weights": list(self.weights), "stamp": self.stamp}
        if self.joints:
            data["joints"] = list(self.joints)
        return data


def _normalised(weights: Sequence[float], what: str) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    total = float(w.sum())
    if total <= 0.0:
        raise KernelError(f"the {what} weights sum to 0; eq. 8 needs a positive sum")
    return w / total


@dataclass(frozen=True)
class StateSpec:
    """The state (sensor fields), action (control-output fields) and reward of the MDPs
    M_sim and M_phy (paper 001 §3), and the eq. 8 thresholds epsilon_c (states) and epsilon_a
    (actions; None = epsilon_c)."""

    sensors: tuple[Channel, ...]
    actions: tuple[Channel, ...]
    reward: Channel
    epsilon_c: float
    epsilon_a: Optional[float] = None

    def __post_init__(self) -> None:
        if not self.sensors:
            raise KernelError("the state spec needs at least one sensor")
        if not self.actions:
            raise KernelError("the state spec needs at least one action channel")
        names = [c.name for c in self.sensors + self.actions + (self.reward,)]
        if len(set(names)) != len(names):
            raise KernelError(f"channel names must be unique, got {names}")
        if len(self.reward.fields) != 1:
            raise KernelError(f"the reward channel must have exactly one field, got "
                              f"{list(self.reward.fields)}")
        for what, eps in (("epsilon_c", self.epsilon_c), ("epsilon_a", self.epsilon_a)):
            if eps is None and what == "epsilon_a":
                continue
            if isinstance(eps, bool) or not isinstance(eps, (int, float)) \
                    or not math.isfinite(eps) or eps < 0.0:
                raise KernelError(f"{what} must be a finite number >= 0, got {eps!r}")
        _normalised(self._raw_weights(self.sensors), "state")
        _normalised(self._raw_weights(self.actions), "action")

    @staticmethod
    def _raw_weights(channels: Sequence[Channel]) -> list[float]:
        return [w for c in channels for w in c.weights]

    @property
    def state_names(self) -> tuple[str, ...]:
        return tuple(n for c in self.sensors for n in c.names)

    @property
    def action_names(self) -> tuple[str, ...]:
        return tuple(n for c in self.actions for n in c.names)

    @property
    def weights(self) -> np.ndarray:
        """w of eq. 8 over the state, normalised to sum 1."""
        return _normalised(self._raw_weights(self.sensors), "state")

    @property
    def action_weights(self) -> np.ndarray:
        """Weights of the same L1 distance over the action (used to quantise actions)."""
        return _normalised(self._raw_weights(self.actions), "action")

    @property
    def action_epsilon(self) -> float:
        return float(self.epsilon_c if self.epsilon_a is None else self.epsilon_a)

    @property
    def sensor_slices(self) -> dict[str, slice]:
        """{sensor name: its slice of the state vector} (the Sv_i of eq. 2)."""
        slices, start = {}, 0
        for c in self.sensors:
            slices[c.name] = slice(start, start + len(c.fields))
            start += len(c.fields)
        return slices

    @property
    def action_slices(self) -> dict[str, slice]:
        slices, start = {}, 0
        for c in self.actions:
            slices[c.name] = slice(start, start + len(c.fields))
            start += len(c.fields)
        return slices

    @classmethod
    def from_dict(cls, data: Any, what: str = "state spec") -> "StateSpec":
        """The spec from a mapping (a YAML file's content or the mapping the launch file loaded
        onto the parameter server); KernelError naming ``what`` (the file, the parameter)."""
        try:
            return cls._from_mapping(data)
        except KernelError as exc:
            raise named(what, exc) from None

    @classmethod
    def _from_mapping(cls, data: Any) -> "StateSpec":
        if not isinstance(data, Mapping):
            raise KernelError("must be a mapping with sensors, actions, reward, epsilon_c")
        unknown = set(data) - {"sensors", "actions", "reward", "epsilon_c", "epsilon_a"}
        if unknown:
            raise KernelError(f"unknown keys {sorted(unknown)}")
        for key in ("sensors", "actions", "reward", "epsilon_c"):
            if key not in data:
                raise KernelError(f"missing key '{key}'")
        for key in ("sensors", "actions"):
            if not isinstance(data[key], list):
                raise KernelError(f"'{key}' must be a list of channels")
        sensors = tuple(Channel.from_dict(c, f"sensor {k}") for k, c in enumerate(data["sensors"]))
        actions = tuple(Channel.from_dict(c, f"action {k}") for k, c in enumerate(data["actions"]))
        reward = Channel.from_dict(data["reward"], "reward")
        return cls(sensors, actions, reward, epsilon_c=data["epsilon_c"],
                   epsilon_a=data.get("epsilon_a"))

    @classmethod
    def from_yaml(cls, path: Union[str, os.PathLike]) -> "StateSpec":
        return cls.from_dict(read_yaml(path, "state spec"), f"state spec {os.fspath(path)}")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"epsilon_c": float(self.epsilon_c)}
        if self.epsilon_a is not None:
            data["epsilon_a"] = float(self.epsilon_a)
        data["sensors"] = [c.to_dict() for c in self.sensors]
        data["actions"] = [c.to_dict() for c in self.actions]
        data["reward"] = self.reward.to_dict()
        return data


def read_yaml(path: Union[str, os.PathLike], what: str) -> Any:
    """``yaml.safe_load`` of a file (no code execution: python tags are refused);
    KernelError naming the file when it is missing, unreadable or not valid YAML."""
    return read_yaml_file(path, what, KernelError)


def named(what: str, exc: KernelError) -> KernelError:
    """``exc`` with ``what`` (a configuration's source: a file, a parameter) in front, unless
    its message already starts with it."""
    text = str(exc)
    return exc if text.startswith(what) else KernelError(f"{what}: {text}")


def config_section(data: Any, known: Iterable[str], what: str) -> Mapping[str, Any]:
    """A config file's section ``data`` (None: empty) as a mapping whose keys are all in
    ``known``; KernelError naming ``what`` and the unknown keys otherwise."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise KernelError(f"{what} must be a mapping")
    unknown = set(data) - set(known)
    if unknown:
        raise KernelError(f"{what}: unknown keys {sorted(unknown)} (known: {sorted(known)})")
    return data
