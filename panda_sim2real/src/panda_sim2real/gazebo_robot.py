"""The nominal simulator in Gazebo 11, lock-stepped from this process: the part of
:class:`~panda_sim2real.robot.SimulatedRobot` that a pair collection and a re-simulation use
(``reset``, ``command``, ``advance``, ``t``, ``dt``, ``label``), so they run on either simulator.

gzserver runs the Panda with panda_gazebo's plugin (gazebo_model.py) on a ROS master of this
process's own, paused; :meth:`GazeboRobot.advance` steps it through ``/gazebo/step_world`` and
returns the joint states the plugin published within the steps. A command goes with the next
steps (step_world publishes it inside gzserver), so it applies from the first of them, as a
command given to SimulatedRobot between two steps: a seed gives the same states twice.

Time: the robot's time is ``t0 + `` Gazebo's sim time since the last reset; commands and states
are shifted by ``t0`` on the way in and out.
"""
from __future__ import annotations

import math
import os
import tempfile
import threading
import time
from typing import Optional

import numpy as np
import rospy
from sensor_msgs.msg import JointState
from sim2real_gazebo import GazeboError, GazeboSession, WorldConfig

from panda_sim2real.bag_layout import COMMAND, JOINT_STATES
from panda_sim2real.errors import PandaError
from panda_sim2real.gazebo_model import PARAMETERS, gazebo_model
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot import JointMeasurement
from panda_sim2real.robot_config import RobotConfig
from panda_sim2real.ros_conversions import joint_trajectory_msg, measurement_from_msg
from panda_sim2real.trajectory import PlannedTrajectory

PUBLICATIONS_PER_CALL = 500
"""Joint states per step_world call at most (the plugin's publisher queues 1000: none is lost)."""
STATE_TIMEOUT = 30.0
"""[s] wall time the states of one call may take to arrive before the run is abandoned."""


def elapsed_cut(trajectory: PlannedTrajectory, now: float) -> PlannedTrajectory:
    """``trajectory`` (started at or before ``now``) from ``now`` on, starting at ``now``: the
    reference at ``now`` as its first knot, the later knots shifted. The same reference after
    ``now``; at ``now`` itself the velocity reference is 0 (a first knot is held at rest)."""
    elapsed = now - trajectory.start
    if elapsed <= 0.0:
        return trajectory.at(now)
    q, qd = trajectory.sample(elapsed)
    later = trajectory.times > elapsed
    return PlannedTrajectory(np.concatenate([[0.0], trajectory.times[later] - elapsed]),
                             np.vstack([q, trajectory.positions[later]]),
                             np.vstack([qd, trajectory.velocities[later]]), now)


class GazeboRobot:
    """``config`` (a simulator configuration: PID gains, rates, URDF, friction, offset) in
    gzserver; starts at rest at the limits' home pose at t = 0, as SimulatedRobot does."""

    concurrent = True
    """advance() mostly waits for gzserver: a caller may step another robot meanwhile."""

    def __init__(self, config: RobotConfig, limits: JointLimits, log: Optional[str] = None) -> None:
        self.config = config
        self.limits = limits
        self.model = gazebo_model(config, limits)
        self.label = self.model.label
        self.dt = 1.0 / float(config.physics_rate)
        self._every = config.steps_per_publish
        ns = "/" + self.model.namespace
        self._command_topic = f"{ns}/{COMMAND}"
        if log is None:
            handle, log = tempfile.mkstemp(prefix="sim2real-gzserver-panda-", suffix=".log")
            os.close(handle)
        self.log = log
        self._cond = threading.Condition()
        self._received: list[JointMeasurement] = []
        self._t0 = 0.0
        self._steps = 0
        self._pending: list = []
        try:
            self.session = GazeboSession(
                self.model.urdf, WorldConfig(physics_rate=self.model.physics_rate, real_time_factor=0.0),
                params=self.model.params, ready_topics=[f"{ns}/{JOINT_STATES}"], log=log,
                private=True)
        except GazeboError as exc:
            raise PandaError(f"the Panda in Gazebo: {exc}") from None
        self._names = list(limits.joint_names)
        self._subscriber = rospy.Subscriber(f"{ns}/{JOINT_STATES}", JointState, self._on_state,
                                            queue_size=None)
        try:
            self._await_stream(ns, log)
        except BaseException:
            self.close()
            raise

    def _await_stream(self, ns: str, log: str, timeout: float = 20.0) -> None:
        """Step until the state of the last step arrives (a connection counted by rospy may still
        be the one to an earlier gzserver of this process, whose states never come; the states
        after it come in order), then reset: the run starts at t = 0 with every state received."""
        deadline = time.monotonic() + timeout
        while True:
            if self._subscriber.get_num_connections() > 0:
                now, _ = self.session.step(self._every)
                with self._cond:
                    if self._cond.wait_for(lambda: self._received and
                                           self._received[-1].stamp >= now - 1e-9, 0.5):
                        break
            if time.monotonic() > deadline:
                raise PandaError(f"the Panda in Gazebo: no state on {ns}/{JOINT_STATES} within "
                                 f"{timeout:g} s (log: {log})")
            time.sleep(0.01)
        self.reset(self.limits.home)

    @property
    def t(self) -> float:
        return self._t0 + self._steps * self.dt

    def _on_state(self, msg) -> None:
        m = measurement_from_msg(msg, self._names)
        with self._cond:
            self._received.append(JointMeasurement(m.stamp + self._t0, m.position, m.velocity, m.effort))
            self._cond.notify_all()

    def reset(self, q: np.ndarray, t: float = 0.0) -> None:
        """At rest at ``q``, holding it, at time ``t``: the plugin's initial positions are set
        and the simulation is reset (its time restarts at 0)."""
        rospy.set_param(f"/{self.model.namespace}/{PARAMETERS}/initial_positions",
                              np.asarray(q, dtype=float).tolist())
        try:
            self.session.call_empty("/gazebo/reset_simulation")
        except Exception as exc:   # rospy's service errors, a dead gzserver
            raise PandaError(f"the Panda in Gazebo: /gazebo/reset_simulation failed ({exc}; "
                             f"log: {self.log})") from None
        with self._cond:
            self._received.clear()
        self._pending.clear()
        self._t0, self._steps = float(t), 0

    def command(self, trajectory: PlannedTrajectory) -> PlannedTrajectory:
        """Send ``trajectory`` (its start in this robot's time; none: at the next step) with the
        next steps. A start at or before Gazebo's time 0 (this robot's ``t0``), which a stamp
        cannot say, is sent as starting now with the part already elapsed cut off: the same
        reference from now on (a cubic Hermite piece restricted to its end is itself)."""
        if trajectory.start is not None and trajectory.start - self._t0 <= 0.0:
            trajectory = elapsed_cut(trajectory, self.t)
        start = None if trajectory.start is None else trajectory.start - self._t0
        if start is not None and start <= 0.0:
            start = None                 # now (Gazebo's time 0, before the first step)
        self._pending.append(joint_trajectory_msg(trajectory.at(start), self._names))
        return trajectory

    def advance(self, until: float) -> list[JointMeasurement]:
        """Step until this robot's time reaches ``until`` (to within half a step, as
        SimulatedRobot.run_until) and return the joint states published on the way."""
        n = max(0, math.ceil((until - self.t) / self.dt - 0.5 - 1e-9))
        out: list[JointMeasurement] = []
        while n > 0:
            chunk = min(n, PUBLICATIONS_PER_CALL * self._every)
            expected = (self._steps + chunk) // self._every - self._steps // self._every
            commands, self._pending = self._pending, []
            try:
                sim_time, _ = self.session.step(chunk, trajectories=[(self._command_topic, m)
                                                                     for m in commands])
            except GazeboError as exc:
                raise PandaError(f"the Panda in Gazebo: {exc} (log: {self.log})") from None
            self._steps += chunk
            if abs(sim_time - self._steps * self.dt) > 0.5 * self.dt:
                raise PandaError(f"the Panda in Gazebo: sim time {sim_time:.6f} s after "
                                 f"{self._steps} steps of {self.dt:g} s (was gzserver stepped "
                                 f"or reset by another client? log: {self.log})")
            n -= chunk
            out.extend(self._take(expected))
        return out

    def _take(self, expected: int) -> list[JointMeasurement]:
        deadline = time.monotonic() + STATE_TIMEOUT
        with self._cond:
            while len(self._received) < expected:
                left = deadline - time.monotonic()
                if left <= 0.0:
                    raise PandaError(f"the Panda in Gazebo: {len(self._received)} of {expected} "
                                     f"joint states arrived within {STATE_TIMEOUT:g} s (a state "
                                     f"with NaN/Inf is withheld by the plugin; log: {self.log})")
                self._cond.wait(min(left, 0.5))
            taken, self._received = self._received[:expected], self._received[expected:]
        return taken

    def close(self) -> None:
        subscriber = getattr(self, "_subscriber", None)
        if subscriber is not None:
            subscriber.unregister()
        session = getattr(self, "session", None)
        if session is not None:
            session.close()
