"""The pair runner over ROS: sends each generated trajectory to both robots with the same start
stamp, marks it on ``/pairs/event``, and waits until both robots have reported past its end
(a lagging stand-in is waited for, so the pairs stay complete). Same bag layout as
:mod:`panda_sim2real.pairs`; ``rosbag record`` in ``record_pairs.launch`` writes it.
"""
from __future__ import annotations

import threading
from typing import Optional, Sequence

import numpy as np
import rospy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from panda_sim2real.limits import JointLimits
from panda_sim2real.msg import PairEvent
from panda_sim2real.bag_layout import COMMAND, EVENTS, JOINT_STATES, REAL_NS, SIM_NS, topic
from panda_sim2real.pairs import pair_event
from panda_sim2real.ros_conversions import joint_trajectory_msg, measurement_from_msg
from panda_sim2real.trajectory_generation import TrajectoryGenerator


class PairRunner:
    def __init__(self, generator: TrajectoryGenerator, limits: JointLimits, kinds: Sequence[str],
                 lead_time: float, settle_time: float = 2.0,
                 extra_streams: Sequence[str] = (), wait_for_recorder: bool = False) -> None:
        """``extra_streams``: further JointState topics (e.g. the residual publisher's
        /sim/joint_states_realistic) that must, like both robots, have published past a
        trajectory's end before the next one starts, and be up before the first.
        ``wait_for_recorder``: start only once something (``rosbag record``) subscribes to
        /pairs/event, so that a recorder starting late does not miss the first pair."""
        self.wait_for_recorder = wait_for_recorder
        self.generator = generator
        self.limits = limits
        self.kinds = tuple(kinds)
        self.lead_time = lead_time
        self.settle_time = settle_time
        self._latest: dict[str, Optional[float]] = {SIM_NS: None, REAL_NS: None}
        self._latest.update({name: None for name in extra_streams})
        self._sim_position: Optional[np.ndarray] = None
        self._cond = threading.Condition()
        self._commands = {ns: rospy.Publisher(topic(ns, COMMAND), JointTrajectory, queue_size=2)
                          for ns in (SIM_NS, REAL_NS)}
        self._events = rospy.Publisher(EVENTS, PairEvent, queue_size=10, latch=True)
        self._subs = [rospy.Subscriber(topic(ns, JOINT_STATES), JointState, self._on_state,
                                       callback_args=ns, queue_size=20) for ns in (SIM_NS, REAL_NS)]
        self._subs += [rospy.Subscriber(name, JointState, self._on_state, callback_args=name,
                                        queue_size=20) for name in extra_streams]

    def _on_state(self, msg: JointState, namespace: str) -> None:
        with self._cond:
            self._latest[namespace] = msg.header.stamp.to_sec()
            if namespace == SIM_NS:
                try:
                    self._sim_position = measurement_from_msg(msg, self.limits.joint_names).position
                except (KeyError, IndexError, ValueError):
                    rospy.logerr_throttle(1.0, "pair_runner: /sim/joint_states lacks Panda joints")
            self._cond.notify_all()

    def _wait_until(self, stamp: float) -> bool:
        """Block until both robots (and the extra streams) have published a state stamped at or
        after ``stamp``."""
        with self._cond:
            while not rospy.is_shutdown():
                latest = self._latest.values()
                if all(t is not None and t >= stamp for t in latest):
                    return True
                self._cond.wait(0.1)
        return False

    def run(self, count: int) -> int:
        """Run ``count`` pairs; returns how many completed."""
        if self.wait_for_recorder:
            rospy.loginfo("pair_runner: waiting for a recorder subscribed to %s", EVENTS)
            while self._events.get_num_connections() == 0:
                if rospy.is_shutdown():
                    return 0
                rospy.sleep(0.05)
        if not self._wait_until(0.0):
            return 0
        # let the robots settle at rest (and their subscribers connect to the command topics)
        if not self._wait_until(max(self._latest.values()) + self.settle_time):
            return 0
        start_q = self._sim_position.copy()
        for trajectory_id in range(count):
            move = self.generator.next(start_q, self.kinds)
            start = max(t for t in self._latest.values()) + self.lead_time
            planned = move.trajectory.at(start)
            msg = joint_trajectory_msg(planned, self.limits.joint_names)
            for publisher in self._commands.values():
                publisher.publish(msg)
            self._events.publish(pair_event(trajectory_id, move.kind, PairEvent.START, start,
                                            planned.duration))
            end = start + planned.duration
            if not self._wait_until(end):
                return trajectory_id
            self._events.publish(pair_event(trajectory_id, move.kind, PairEvent.END, end,
                                            planned.duration))
            start_q = planned.positions[-1]
            rospy.loginfo("pair_runner: trajectory %d/%d (%s, %.1f s) done", trajectory_id + 1,
                          count, move.kind, planned.duration)
        return count
