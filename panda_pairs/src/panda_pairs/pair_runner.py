"""The pair runner over ROS: sends each generated trajectory to both robots with the same start
stamp, marks it on ``/pairs/event``, and waits until both robots have reported past its end
(a lagging stand-in is waited for, so the pairs stay complete). Same bag layout as
:mod:`panda_pairs.pairs`; ``rosbag record`` in ``record_pairs.launch`` writes it.

How far a robot has got is its latest *plausible* header stamp (:mod:`panda_pairs.stamp_check`):
a stamp ahead of the runner's receive clock (ROS time) by more than ``stamp_tolerance``, or
behind one already taken, is flagged (throttled error, counted) and ignored. The runner's own
clock (ROS time) bounds the wait for a trajectory's end: a stream that has not reported it
``stall_timeout`` s later stops the run with :class:`StreamStalled`; an error the robot reports
on ``/real/robot_state`` (fci_bridge) stops it with :class:`RobotStopped`, the pair in progress
left incomplete. With ``home`` the robot is first brought to its start pose (fci_bridge's
``~move_to_start``; :class:`HomingFailed` if it cannot be). With a
:class:`~panda_pairs.recorder_watch.RecorderWatch` the run stops with
:class:`~panda_pairs.recorder_watch.RecorderLost` when the recorder dies. Counters and state
go to ``/diagnostics`` once a second.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional, Sequence

import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from sim2real_checks import JointStateLayout, Rejected, node_guard

from panda_sim2real import (COMMAND, EVENTS, JOINT_STATES, JointLimits, PandaError, REAL_NS, SIM_NS,
                            TrajectoryGenerator, joint_trajectory_msg, topic)
from panda_sim2real.msg import PairEvent, RobotState
from panda_pairs.pairs import pair_event
from panda_pairs.recorder_watch import RecorderLost, RecorderWatch
from panda_pairs.stamp_check import AHEAD, BACKWARDS, JUMPS, StampCheck

REPORT_PERIOD = 1.0   # s (wall) between /diagnostics messages
ROBOT_STATE = topic(REAL_NS, "robot_state")   # fci_bridge's panda_sim2real/RobotState


class StreamStalled(PandaError):
    """A robot (or an extra stream) has not reported a trajectory's end ``stall_timeout`` s after
    it, by the runner's own clock: it stopped publishing (a lost connection) or its stamps are
    broken. What is recorded ends here."""


class RobotStopped(PandaError):
    """The robot reported an error on ``/real/robot_state`` (a reflex, a lost connection): the
    pair in progress is left without its END, so that the tools leave it out, and the run stops
    until a person has looked and called ``~recover``."""


class HomingFailed(PandaError):
    """The robot could not be brought to its start pose before the first pair (``home``): no
    homing service, or the robot refused the move (a joint near its limit, an active error)."""


def move_to_start(service: str, timeout: float = 30.0) -> Callable[[], str]:
    """The ``home`` of a PairRunner: call ``service`` (std_srvs/Trigger, fci_bridge's
    ``~move_to_start``, which answers once the arm is there) and return its answer, or raise
    :class:`HomingFailed` with the reason."""
    def home() -> str:
        try:
            rospy.wait_for_service(service, timeout)
        except rospy.ROSException:
            raise HomingFailed(f"no {service} within {timeout:g} s: homing needs the robot over "
                               f"fci_bridge (robot:=fci or fci_standin)") from None
        try:
            answer = rospy.ServiceProxy(service, Trigger)()
        except rospy.ServiceException as exc:
            raise HomingFailed(f"{service} failed: {exc}") from None
        if not answer.success:
            raise HomingFailed(f"{service} refused: {answer.message}")
        return answer.message
    return home


class PairRunner:
    def __init__(self, generator: TrajectoryGenerator, limits: JointLimits, kinds: Sequence[str],
                 lead_time: float, settle_time: float = 2.0,
                 extra_streams: Sequence[str] = (), wait_for_recorder: bool = False,
                 recorder: Optional[RecorderWatch] = None,
                 stamp_tolerance: float = 0.2, stall_timeout: float = 10.0,
                 home: Optional[Callable[[], str]] = None) -> None:
        """``extra_streams``: further JointState topics (e.g. the residual publisher's
        /sim/joint_states_realistic) that must, like both robots, have published past a
        trajectory's end before the next one starts, and be up before the first.
        ``wait_for_recorder``: start only once something (``rosbag record``) subscribes to
        /pairs/event, so that a recorder starting late does not miss the first pair.
        ``recorder``: the recorder to wait for (subscribed to /pairs/event and both robots'
        joint states) and to watch while running. ``stamp_tolerance`` [s]: how far a stamp may
        be ahead of the receive clock. ``stall_timeout`` [s]: how long after a trajectory's end,
        by the runner's own clock (ROS time), every stream must have reported it (else
        :class:`StreamStalled`). ``home``: called once before the first pair to bring the
        robot to its start pose (:func:`move_to_start`); returns its answer or raises
        :class:`HomingFailed`."""
        self.home = home
        self.wait_for_recorder = wait_for_recorder
        self.recorder = recorder
        self.generator = generator
        self.limits = limits
        self.kinds = tuple(kinds)
        self.lead_time = lead_time
        self.settle_time = settle_time
        self.stall_timeout = stall_timeout
        self.done = 0
        self.count = 0
        self.error: Optional[str] = None
        self._streams = {SIM_NS: topic(SIM_NS, JOINT_STATES), REAL_NS: topic(REAL_NS, JOINT_STATES)}
        self._streams.update({name: name for name in extra_streams})
        self._checks = {key: StampCheck(stamp_tolerance) for key in self._streams}
        self._sim_position: Optional[np.ndarray] = None
        self.guard = node_guard()
        self._sim_layout = JointStateLayout(limits.joint_names, limits.bounds(measured=True))
        self._cond = threading.Condition()
        self._last_report = 0.0
        self._commands = {ns: rospy.Publisher(topic(ns, COMMAND), JointTrajectory, queue_size=2)
                          for ns in (SIM_NS, REAL_NS)}
        self._events = rospy.Publisher(EVENTS, PairEvent, queue_size=10, latch=True)
        self._diagnostics = rospy.Publisher("/diagnostics", DiagnosticArray, queue_size=5)
        self._robot_error: Optional[str] = None
        self._subs = [rospy.Subscriber(name, JointState, self._on_state, callback_args=key,
                                       queue_size=20) for key, name in self._streams.items()]
        self._subs.append(rospy.Subscriber(ROBOT_STATE, RobotState, self._on_robot_state,
                                           queue_size=10))

    def _on_state(self, msg: JointState, key: str) -> None:
        received = rospy.get_time()
        if received <= 0.0:
            return          # simulated time without a /clock yet: nothing to judge a stamp by
        stamp = msg.header.stamp.to_sec()
        with self._cond:
            check = self._checks[key]
            latest = check.latest
            jump = check.observe(stamp, received)
            if jump is None and key == SIM_NS:
                arrays = self.guard.check(self._streams[key], lambda m: self._sim_layout.arrays(
                    m.name, m.position, m.velocity, m.effort, require_velocity=False,
                    require_effort=False), msg)
                if arrays is not None:
                    self._sim_position = arrays[0]
            self._cond.notify_all()
        if jump is not None:
            how = (f"{stamp - received:.3f} s ahead of the receive clock ({received:.3f} s)"
                   if jump == AHEAD else f"{latest - stamp:.3f} s behind the latest stamp taken")
            self.guard.reject(self._streams[key], Rejected(
                "stamp", f"stamp {stamp:.3f} s is {how}; not taken as progress "
                         f"({check.jump_count} stamp jumps on this stream so far)"))

    def _on_robot_state(self, msg: RobotState) -> None:
        """The robot's own error (fci_bridge's ``last_error``; '' while it holds or tracks)."""
        with self._cond:
            self._robot_error = msg.last_error or None
            self._cond.notify_all()

    def _wait_until(self, stamp: float, own_clock: bool = True) -> bool:
        """Block until both robots (and the extra streams) have published a plausible state
        stamped at or after ``stamp``; RecorderLost when the watched recorder is gone;
        StreamStalled when, with ``own_clock``, the runner's clock is ``stall_timeout`` past
        ``stamp`` and a stream has not got there."""
        with self._cond:
            while not rospy.is_shutdown():
                if self.recorder is not None and self.recorder.lost is not None:
                    raise RecorderLost(self.recorder.lost)
                if self._robot_error is not None:
                    raise RobotStopped(f"the robot stopped: {self._robot_error}; the pair in "
                                       f"progress stays incomplete (the tools leave it out); "
                                       f"call /real/fci_bridge/recover before the next run")
                if all(check.past(stamp) for check in self._checks.values()):
                    return True
                if own_clock and rospy.get_time() > stamp + self.stall_timeout:
                    behind = [self._streams[k] for k, c in self._checks.items() if not c.past(stamp)]
                    raise StreamStalled(f"{', '.join(behind)} did not report {stamp:.3f} s "
                                        f"within {self.stall_timeout:g} s of it (runner's clock "
                                        f"{rospy.get_time():.3f} s)")
                self._cond.wait(0.1)
                if time.monotonic() - self._last_report >= REPORT_PERIOD:
                    self.report()
        return False

    def _latest(self) -> float:
        return max(check.latest for check in self._checks.values() if check.latest is not None)

    def _wait_for_recorder(self) -> bool:
        topics = [EVENTS, self._streams[SIM_NS], self._streams[REAL_NS]]
        if self.recorder is not None:
            rospy.loginfo("pair_runner: waiting for the recorder %s to subscribe to %s",
                          self.recorder.name, ", ".join(topics))
            if not self.recorder.wait_until_subscribed(topics, rospy.is_shutdown):
                return False
            self.recorder.start()
            rospy.loginfo("pair_runner: watching the recorder %s (pid %s)", self.recorder.name,
                          self.recorder.pid)
        elif self.wait_for_recorder:
            rospy.logwarn("pair_runner: waiting for any recorder subscribed to %s; without "
                          "~recorder a recorder that dies is not noticed", EVENTS)
        else:
            return True
        while self._events.get_num_connections() == 0:
            if rospy.is_shutdown():
                return False
            time.sleep(0.05)
        return True

    def run(self, count: int) -> int:
        """Run ``count`` pairs; returns how many completed. RecorderLost when the recorder dies."""
        self.count = count
        try:
            return self._run(count)
        finally:
            if self.recorder is not None:
                self.recorder.stop()

    def _run(self, count: int) -> int:
        if not self._wait_for_recorder() or not self._wait_until(0.0, own_clock=False):
            return 0
        if self.home is not None:
            rospy.loginfo("pair_runner: homing the robot: %s", self.home())
        # let the robots settle at rest (and their subscribers connect to the command topics)
        if not self._wait_until(self._latest() + self.settle_time):
            return 0
        with self._cond:
            if self._sim_position is None:
                raise StreamStalled(f"no valid {self._streams[SIM_NS]} in {self.settle_time:g} s "
                                    f"to start from (see the rejections logged)")
            start_q = self._sim_position.copy()
        for trajectory_id in range(count):
            move = self.generator.next(start_q, self.kinds)
            start = self._latest() + self.lead_time
            planned = move.trajectory.at(start)
            msg = joint_trajectory_msg(planned, self.limits.joint_names)
            for publisher in self._commands.values():
                self.guard.publish(publisher, msg)
            self.guard.publish(self._events, pair_event(trajectory_id, move.kind, PairEvent.START,
                                                        start, planned.duration))
            end = start + planned.duration
            if not self._wait_until(end):
                return trajectory_id
            self.guard.publish(self._events, pair_event(trajectory_id, move.kind, PairEvent.END,
                                                        end, planned.duration))
            self.done = trajectory_id + 1
            start_q = planned.positions[-1]
            rospy.loginfo("pair_runner: trajectory %d/%d (%s, %.1f s) done", trajectory_id + 1,
                          count, move.kind, planned.duration)
        return count

    def jump_counts(self) -> dict[str, dict[str, int]]:
        """Stamp jumps per stream topic and kind."""
        with self._cond:
            return {self._streams[key]: dict(check.jumps) for key, check in self._checks.items()}

    def summary(self) -> str:
        """One line: pairs done and the stamp jumps per stream."""
        jumps = ", ".join(f"{name} {c[AHEAD]} ahead/{c[BACKWARDS]} backwards"
                          for name, c in self.jump_counts().items())
        return f"{self.done} of {self.count} pairs done; stamp jumps: {jumps}"

    def report(self, error: Optional[str] = None) -> None:
        """Publish the runner's state and counters on /diagnostics (ERROR with ``error``)."""
        if error is not None:
            self.error = error
        self._last_report = time.monotonic()
        counts = self.jump_counts()
        jumps = sum(sum(c.values()) for c in counts.values())
        if self.error is not None:
            level, message = DiagnosticStatus.ERROR, self.error
        elif jumps:
            level, message = DiagnosticStatus.WARN, f"{jumps} stamp jumps ignored"
        else:
            level = DiagnosticStatus.OK
            message = "done" if self.count and self.done == self.count else "running"
        values = [KeyValue("pairs_done", str(self.done)), KeyValue("pairs_total", str(self.count)),
                  KeyValue("recorder", self.recorder.name if self.recorder else "not watched"),
                  KeyValue("recorder_pid", str(self.recorder.pid if self.recorder else ""))]
        values += [KeyValue(f"stamp_jumps_{kind} {name}", str(c[kind]))
                   for name, c in counts.items() for kind in JUMPS]
        status = DiagnosticStatus(level=level, name=rospy.get_name(), message=message,
                                  hardware_id="", values=values)
        array = DiagnosticArray(status=[status, self.guard.status()])
        array.header.stamp = rospy.Time.now()
        self.guard.publish(self._diagnostics, array)
