"""The ROS face of :class:`KernelManager`: the ``kernel_manager`` node (paper 001 §3.2, Fig. 2).

Parameters
  ~config (dict, required)  state spec (state_spec.py): the sensor and action topics; the launch
                            file loads the YAML here (a file path: still accepted, deprecated)
  ~kernels (str, required)  kernel file (kernel_file.py) made for that spec's state layout
  ~set_state (dict)         the simulator's configuration interface for motor kernels:
                              {topic: /vehicle/set_state, type: kernel_manager_ros/VehicleState,
                               fields: {<state name>: <field path>, ...},
                               constants: {<field path>: <value>, ...}}
                            state values not named in ``fields`` are not set. Without it, motor
                            kernels are reported but cannot be applied (a warning at start-up).
  ~suffix (str, "_kernel")  sensor data are republished on <topic><suffix>
  ~max_abs (float, 1e5)     the largest magnitude a float of a sensor or action message may have
Topics
  subscribes every sensor topic and action topic of ~config (their own types);
  publishes <sensor topic>_kernel (same type): passed through, or, while a sensor kernel that
  holds this sensor is active, the message last published there again (values and header stamp
  unchanged, eq. 9: the sensor holds);
  ~set_state's topic (motor kernels: the simulator is set to f_k(s, a));
  /kernel_manager/active_kernel (kernel_manager_ros/ActiveKernel) once per step;
  /diagnostics: the guard's counters of rejected and withheld messages, at 1 Hz.
A step is a message on the first action topic; its state s is the latest value of every sensor
(as the simulation reported it). A message with a float NaN/Inf or beyond ~max_abs, or without a
field the state needs, is dropped (channel_check.py) with one error line per topic, reason and
second; every output goes through the guard's publish-side check.
"""
from __future__ import annotations

import io
import threading
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np
import rospy
from roslib.message import get_message_class

from sim2real_checks import GuardDiagnostics, Rejected, mapping_param, node_guard, number_param, run_node

from kernel_manager_ros.channel_check import channel_values
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.kernel_file import load_kernels
from kernel_manager_ros.manager import Decision, KernelManager
from kernel_manager_ros.msg import ActiveKernel
from kernel_manager_ros.state_spec import Channel, FieldPath, StateSpec

ACTIVE_KERNEL = "/kernel_manager/active_kernel"
MAX_ABS = 1e5
"""Default ~max_abs: above every state value of the robots here (the vehicle's world is
±1000 m, the Panda's joint torques at most 87 N m)."""


def message_class(msg_type: str, what: str) -> Any:
    cls = get_message_class(msg_type)
    if cls is None:
        raise KernelError(f"{what}: unknown message type {msg_type} (is its package built?)")
    return cls


class SetStateInterface:
    """Builds the simulator's set-state message from f_k(s, a) (the parameters phi of §3.2)."""

    def __init__(self, config: Mapping[str, Any], state_names: tuple[str, ...]) -> None:
        if not isinstance(config, Mapping) or "topic" not in config or "type" not in config:
            raise KernelError("~set_state must be a mapping with topic, type, fields")
        fields = config.get("fields") or {}
        if not isinstance(fields, Mapping) or not fields:
            raise KernelError("~set_state: fields must map state names to message fields")
        unknown = [n for n in fields if n not in state_names]
        if unknown:
            raise KernelError(f"~set_state: {unknown} are not state names "
                              f"({', '.join(state_names)})")
        self.topic = str(config["topic"])
        self.cls = message_class(str(config["type"]), "~set_state")
        self.targets = [(state_names.index(n), FieldPath.parse(str(p)))
                        for n, p in fields.items()]
        self.constants = [(FieldPath.parse(str(p)), v)
                          for p, v in (config.get("constants") or {}).items()]
        try:   # fail at start-up, not at the first motor kernel, if a field does not fit
            self.message(np.zeros(len(state_names))).serialize(io.BytesIO())
        except Exception as exc:   # AttributeError, genpy.SerializationError, struct.error, ...
            raise KernelError(f"~set_state: cannot build {self.cls._type} from {dict(fields)} "
                              f"and constants: {exc}") from exc

    def message(self, next_state: np.ndarray) -> Any:
        msg = self.cls()
        for path, value in self.constants:
            path.set(msg, value)
        for i, path in self.targets:
            path.set(msg, float(next_state[i]))
        if hasattr(msg, "header"):
            msg.header.stamp = rospy.Time.now()
        return msg


def spec_file(path: Optional[str]) -> StateSpec:
    """The state spec YAML at ``path`` (the old ``~config``); required: no default."""
    if not path:
        raise KernelError("parameter ~config (the state spec) must be set: load the YAML in the "
                          "launch file, <rosparam command=\"load\" file=\"...\" ns=\"config\"/>")
    return StateSpec.from_yaml(path)


@dataclass(frozen=True)
class ManagerParams:
    """kernel_manager's parameters (module docstring), read once at start-up."""

    spec: StateSpec
    kernels_path: str
    set_state: Optional[Mapping[str, Any]]
    suffix: str
    max_abs: float

    @classmethod
    def from_ros(cls) -> "ManagerParams":
        """From the parameter server; KernelError naming the parameter otherwise."""
        spec = mapping_param("~config", StateSpec.from_dict, spec_file)
        kernels_path = rospy.get_param("~kernels", "")
        if not kernels_path or not isinstance(kernels_path, str):
            raise KernelError(f"parameter ~kernels (a kernel file's path) must be set, got "
                              f"{kernels_path!r}")
        suffix = rospy.get_param("~suffix", "_kernel")
        if not isinstance(suffix, str):
            raise KernelError(f"~suffix must be a string, got {suffix!r}")
        return cls(spec, kernels_path, rospy.get_param("~set_state", None) or None, suffix,
                   number_param("~max_abs", MAX_ABS, KernelError, positive=True))


class KernelManagerNode:
    def __init__(self, params: ManagerParams) -> None:
        self.spec = params.spec
        kernels_path = params.kernels_path
        kernels = load_kernels(kernels_path, self.spec.state_names, self.spec.action_names)
        self.manager = KernelManager(kernels)
        self.set_state = SetStateInterface(params.set_state, self.spec.state_names) \
            if params.set_state else None
        counts = kernels.counts()
        if counts["motor"] and self.set_state is None:
            rospy.logwarn(f"{rospy.get_name()}: {counts['motor']} motor kernels but no "
                          f"~set_state interface: they are reported, not applied")
        suffix = params.suffix
        self.max_abs = params.max_abs
        self.guard = node_guard()
        self._lock = threading.Lock()
        n_sensors = len(self.spec.sensors)
        self._values: list[Optional[np.ndarray]] = [None] * n_sensors
        self._published: list[Any] = [None] * n_sensors   # last message on each relay
        self._actions: list[Optional[np.ndarray]] = [None] * len(self.spec.actions)
        self._override: Optional[list[Any]] = None   # held messages carrying f_k(s, a)
        self.steps = self.applied = 0
        self._active = rospy.Publisher(ACTIVE_KERNEL, ActiveKernel, queue_size=10)
        self._set_state_pub = rospy.Publisher(self.set_state.topic, self.set_state.cls,
                                              queue_size=10) if self.set_state else None
        self._relays = []
        for i, channel in enumerate(self.spec.sensors):
            cls = message_class(channel.msg_type, f"sensor {channel.name}")
            self._relays.append(rospy.Publisher(channel.topic + suffix, cls, queue_size=10))
            rospy.Subscriber(channel.topic, cls, self._on_sensor, callback_args=i,
                             queue_size=100)
        for j, channel in enumerate(self.spec.actions):
            cls = message_class(channel.msg_type, f"action {channel.name}")
            rospy.Subscriber(channel.topic, cls, self._on_action, callback_args=j,
                             queue_size=100)
        self.diagnostics = GuardDiagnostics(self.guard)
        rospy.loginfo(f"{rospy.get_name()}: {len(kernels)} kernels ({counts['motor']} motor, "
                      f"{counts['sensor']} sensor) from {kernels_path}; state "
                      f"({', '.join(self.spec.state_names)}); steps on "
                      f"{self.spec.actions[0].topic}")

    def _values_of(self, channel: Channel, msg: Any) -> Optional[np.ndarray]:
        return self.guard.check(channel.topic, lambda m: channel_values(channel, m, self.max_abs),
                                msg)

    def _on_sensor(self, msg: Any, i: int) -> None:
        values = self._values_of(self.spec.sensors[i], msg)
        if values is None:
            return
        with self._lock:
            self._values[i] = values
            out = msg if self._override is None or self._override[i] is None \
                else self._override[i]
            self._published[i] = out
        self.guard.publish(self._relays[i], out)

    def _on_action(self, msg: Any, j: int) -> None:
        channel = self.spec.actions[j]
        values = self._values_of(channel, msg)
        if values is None:
            return
        with self._lock:
            self._actions[j] = values
            if j != 0 or any(v is None for v in self._values) \
                    or any(v is None for v in self._actions):
                return
            state = np.concatenate(self._values)
            action = np.concatenate(self._actions)
            try:
                decision = self.manager.decide(state, action)
            except KernelError as exc:
                self.guard.reject(channel.topic, Rejected("step", f"step skipped: {exc}"))
                return
            self.steps += 1
            self._override = self._held(decision) if decision is not None \
                and decision.kind == "sensor" else None
            header_stamp = msg.header.stamp if hasattr(msg, "header") else rospy.Time.now()
        self._report(decision, header_stamp)
        if decision is not None and decision.kind == "motor" and self._set_state_pub:
            if self.guard.publish(self._set_state_pub,
                                  self.set_state.message(decision.next_state)):
                self.applied += 1

    def _held(self, decision: Decision) -> list[Any]:
        """For every sensor the kernel holds, the message it last published on the relay (values
        and header stamp unchanged, eq. 9: f_k is the identity on a held sensor), republished
        instead of the simulator's until the next step; a hold goes on while the simulation's
        states stay inside sensor kernels. None for the other sensors: they pass through."""
        held: list[Any] = []
        for channel, last in zip(self.spec.sensors, self._published):
            held.append(last if channel.name in decision.held else None)
        self.applied += 1
        return held

    def _report(self, decision: Optional[Decision], stamp: Any) -> None:
        out = ActiveKernel(index=-1, kind="", activation=0.0, distance=0.0)
        out.header.stamp = stamp
        if decision is not None:
            out.index, out.kind = decision.index, decision.kind
            out.activation, out.distance = decision.activation, decision.distance
        self.guard.publish(self._active, out)


def main() -> None:
    node = run_node("kernel_manager", lambda: KernelManagerNode(ManagerParams.from_ros()),
                    errors=(KernelError,))
    rospy.loginfo(f"{rospy.get_name()}: {node.steps} steps, {node.applied} kernel applications")
