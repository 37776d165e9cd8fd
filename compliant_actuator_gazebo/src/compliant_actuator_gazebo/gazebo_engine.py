"""The reproductions' Gazebo engine: a robot description run in gzserver 11 (the Gazebo image)
with CompliantActuatorPlugin, driven from this process in lock-step over the plugin's own topics
(sim2real_gazebo.GazeboSession). It offers the part of :class:`~compliant_actuator_gazebo.
embedded.EmbeddedSimulation` the reproductions use (``set_input``, ``step``, ``state``,
``time``, ``stability_report``), so one experiment function runs on either engine
(engines.make_simulation).

Inputs go to gzserver with the next lock-step (/gazebo/step_world publishes them in its own
process) and apply from that step on, as in the embedded simulation. States come from
NS/link_state, NS/motor_1_state and NS/motor_2_state, published by the plugin at
``sample_rate`` Hz of simulated time, and :meth:`GazeboSimulation.state` is the newest after
the last step. Gazebo spawns every joint at 0: ``initial_positions`` are not supported.
"""
from __future__ import annotations

import math
import os
import tempfile
import threading
import time as _time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from compliant_actuator_gazebo.description import RobotDescription
from compliant_actuator_gazebo.errors import CompliantError

if TYPE_CHECKING:
    from compliant_actuator_gazebo.msg import LinkState, MotorState

STATE_TIMEOUT = 30.0
"""[s] wall time a state may take to arrive after a step before the run is abandoned."""
CHUNK = 50
"""Publications per lock-step call at most."""


@dataclass
class MotorOutput:
    position: float = 0.0
    velocity: float = 0.0
    torque: float = 0.0


@dataclass
class LinkOutput:
    """The fields of ``cag.JointOutput`` that the plugin's messages carry."""

    link_torque: float = 0.0
    stiffness: float = 0.0
    deflection: float = 0.0
    reference_1: float = 0.0
    reference_2: float = 0.0
    motor1: MotorOutput = field(default_factory=MotorOutput)
    motor2: MotorOutput = field(default_factory=MotorOutput)


@dataclass(frozen=True)
class GazeboSnapshot:
    joint: str
    time: float
    q: float
    qd: float
    output: LinkOutput


class _JointFeed:
    """The newest link and motor states of one joint, by stamp."""

    def __init__(self, ns: str) -> None:
        import rospy
        from compliant_actuator_gazebo.msg import LinkState, MotorState

        self.lock = threading.Condition()
        self.link: Optional[LinkState] = None
        self.motors: list = [None, None]
        self.subscribers = [
            rospy.Subscriber(f"{ns}/link_state", LinkState, self._on_link, queue_size=None),
            rospy.Subscriber(f"{ns}/motor_1_state", MotorState, self._on_motor, 0, queue_size=None),
            rospy.Subscriber(f"{ns}/motor_2_state", MotorState, self._on_motor, 1, queue_size=None)]

    def _on_link(self, msg: "LinkState") -> None:
        with self.lock:
            self.link = msg
            self.lock.notify_all()

    def _on_motor(self, msg: "MotorState", index: int) -> None:
        with self.lock:
            self.motors[index] = msg
            self.lock.notify_all()

    def stamp(self) -> float:
        stamps = [m.header.stamp.to_sec() for m in (self.link, *self.motors) if m is not None]
        return min(stamps) if len(stamps) == 3 else -math.inf

    def wait(self, stamp: float, deadline: float) -> bool:
        with self.lock:
            while self.stamp() < stamp - 1e-9:
                left = deadline - _time.monotonic()
                if left <= 0.0:
                    return False
                self.lock.wait(min(left, 0.5))
            return True

    def close(self) -> None:
        for s in self.subscribers:
            s.unregister()


class GazeboSimulation:
    """``description`` in gzserver at ``physics_rate`` (ODE, lock-stepped), the plugin's states at
    ``sample_rate`` Hz (at most the physics rate); ``initial_inputs`` as the embedded
    simulation's. ``model_text``: the URDF spawned instead of the description's (same joints and
    namespaces; e.g. a user's actuator this process does not load). ``log``: gzserver's output
    file (default: one in the temporary folder, named in errors)."""

    def __init__(self, description: RobotDescription, physics_rate: float = 1000.0,
                 sample_rate: Optional[float] = None, gravity: float = 9.81,
                 initial_inputs: Optional[Mapping[str, Mapping[str, float]]] = None,
                 log: Optional[str] = None, model_text: Optional[str] = None) -> None:
        import rospy
        from sim2real_gazebo import GazeboError, GazeboSession, WorldConfig

        self.description = description
        self.dt = 1.0 / float(physics_rate)
        rate = min(float(sample_rate or physics_rate), float(physics_rate))
        self._every = max(1, int(round(physics_rate / rate)))
        self.joints: tuple[str, ...] = description.compliant_names
        self._ns = {s.joint: f"/{s.namespace}/{s.joint}" for s in description.compliant}
        robots = {s.namespace for s in description.compliant}
        params: dict = {f"/{r}/publish_rate": float(physics_rate) / self._every for r in robots}
        for spec in description.compliant:
            values = {k: float(v) for k, v in (initial_inputs or {}).get(spec.joint, {}).items()}
            params[f"/{spec.namespace}/initial_inputs/{spec.joint}"] = values
        self._error = GazeboError
        self._own_log = log is None
        if log is None:
            handle, log = tempfile.mkstemp(prefix=f"sim2real-gzserver-{description.name}-", suffix=".log")
            os.close(handle)
        self.log = log
        try:
            self.session = GazeboSession(
                model_text or description.urdf, WorldConfig(physics_rate=float(physics_rate), real_time_factor=0.0,
                                              gravity=gravity),
                params=params, ready_topics=[f"{ns}/link_state" for ns in self._ns.values()], log=log,
                private=True)
        except GazeboError as exc:
            raise CompliantError(f"{description.name} in Gazebo: {exc}") from None
        self._feeds = {j: _JointFeed(ns) for j, ns in self._ns.items()}
        self._publishers: dict = {}
        self._pending: dict[str, float] = {}
        self._rospy = rospy
        self._steps = 0
        self._time = 0.0
        try:
            self._wait_connected([s for f in self._feeds.values() for s in f.subscribers])
        except BaseException:
            self.close()
            raise

    def _wait_connected(self, endpoints: Sequence, timeout: float = 10.0) -> None:
        deadline = _time.monotonic() + timeout
        while any(e.get_num_connections() == 0 for e in endpoints):
            if _time.monotonic() > deadline:
                raise CompliantError(f"{self.description.name} in Gazebo: no connection to the "
                                     f"plugin's topics within {timeout:g} s")
            _time.sleep(0.01)

    # -- inputs and stepping ----------------------------------------------------------------
    def set_input(self, joint: str, name: str, value: float) -> bool:
        """``value`` for NS/<name>, handed to gzserver with the next step (published in its
        process, so it applies from that step); False for NaN/Inf (not sent), as the core
        refuses them."""
        if joint not in self._ns:
            raise KeyError(f"{joint!r} is not a compliant joint of {self.description.name!r}")
        if not math.isfinite(value):
            return False
        self._pending[f"{self._ns[joint]}/{name}"] = float(value)
        return True

    def publish(self, joint: str, name: str, value: float) -> None:
        """``value`` on NS/<name> over ROS as any node sends it (NaN and Inf too): it reaches
        the plugin by the next step or the one after."""
        from std_msgs.msg import Float64

        key = (joint, name)
        if key not in self._publishers:
            with warnings.catch_warnings():   # rospy warns of queue_size=None: synchronous, on purpose
                warnings.simplefilter("ignore", SyntaxWarning)
                publisher = self._rospy.Publisher(f"{self._ns[joint]}/{name}", Float64, queue_size=None)
            self._publishers[key] = publisher
            self._wait_connected([publisher])
        self._publishers[key].publish(Float64(float(value)))

    def step(self, n: int = 1) -> None:
        """Advance ``n`` physics steps and wait for the states published within them, in chunks
        of at most CHUNK publications (the plugin's publishers queue 100 messages: none is lost)."""
        while n > 0:
            chunk = min(n, CHUNK * self._every)
            inputs, self._pending = self._pending, {}
            try:
                self._time, iterations = self.session.step(chunk, inputs)
            except self._error as exc:
                raise CompliantError(f"{self.description.name} in Gazebo: {exc}") from None
            self._steps += chunk
            n -= chunk
            # the last publication: at the newest iteration that is a multiple of every (Gazebo's
            # clock rounds each step to 1 ns: half a step of slack)
            last = self._time - ((iterations % self._every) + 0.5) * self.dt
            deadline = _time.monotonic() + STATE_TIMEOUT
            for joint, feed in self._feeds.items():
                if not feed.wait(last, deadline):
                    raise CompliantError(f"{self.description.name} in Gazebo: no state of {joint} "
                                         f"at t = {last:.6f} s within {STATE_TIMEOUT:g} s")

    @property
    def time(self) -> float:
        return self._time

    @property
    def steps(self) -> int:
        return self._steps

    def state(self, joint: str) -> GazeboSnapshot:
        """The newest state of ``joint`` (Gazebo spawns joints at 0: before the first step, the
        link at rest at 0)."""
        feed = self._feeds[joint]
        with feed.lock:
            link, motors = feed.link, list(feed.motors)
        if link is None:
            return GazeboSnapshot(joint, 0.0, 0.0, 0.0, LinkOutput())
        m = [MotorOutput(x.position, x.velocity, x.effort) if x is not None else MotorOutput()
             for x in motors]
        return GazeboSnapshot(joint, link.header.stamp.to_sec(), link.position, link.velocity,
                              LinkOutput(link.effort, link.stiffness, link.deflection,
                                         link.reference_1, link.reference_2, m[0], m[1]))

    def stability_report(self, limit: float = 1.0) -> list[str]:
        """Gazebo's ODE step has no a-priori report here: nothing (a diverging run shows in its
        states)."""
        return []

    def close(self) -> None:
        for feed in getattr(self, "_feeds", {}).values():
            feed.close()
        for publisher in getattr(self, "_publishers", {}).values():
            publisher.unregister()
        session = getattr(self, "session", None)
        if session is not None:
            session.close()
            if self._own_log:                  # kept when the start failed: the error names it
                os.unlink(self.log)

    def __enter__(self) -> "GazeboSimulation":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
