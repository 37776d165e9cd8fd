#!/usr/bin/env python3
"""rostest: fci_bridge against fci_standin under bad input and faults. Bad trajectories are
rejected with a reason on /real/robot_state while the robot holds; the robot dropping the
connection mid-trajectory is reported and /real/fci_bridge/recover resumes; /real/joint_states
runs at 1 kHz and never carries a non-finite value."""
import subprocess
import sys
import threading
import time
import unittest

import genpy
import numpy as np
import rospy
import rostest
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from panda_sim2real.limits import JointLimits
from panda_sim2real.msg import RobotState

LIMITS = JointLimits.from_yaml()
HOST = "127.0.0.42"


def trajectory(names, points, stamp=0.0):
    """points: (time_from_start, positions) pairs."""
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = genpy.Time.from_sec(stamp)
    for t, q in points:
        msg.points.append(JointTrajectoryPoint(positions=list(q),
                                               time_from_start=genpy.Duration.from_sec(t)))
    return msg


class FciFaults(unittest.TestCase):
    def setUp(self):
        rospy.init_node("test_fci_faults")
        self.lock = threading.Lock()
        self.states, self.robot_states = [], []
        rospy.Subscriber("/real/joint_states", JointState, self._on_js, queue_size=2000)
        rospy.Subscriber("/real/robot_state", RobotState, self._on_rs, queue_size=100)
        self.command = rospy.Publisher("/real/joint_trajectory_controller/command", JointTrajectory,
                                       queue_size=5)

    def _on_js(self, msg):
        with self.lock:
            self.states.append((msg.header.stamp.to_sec(), np.array(msg.position),
                                np.array(msg.velocity), np.array(msg.effort)))

    def _on_rs(self, msg):
        with self.lock:
            self.robot_states.append(msg)

    def wait_for(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if predicate():
                    return
            time.sleep(0.02)
        self.fail(f"timed out waiting for {what}")

    def position(self):
        with self.lock:
            return self.states[-1][1].copy()

    def test_bad_input_and_a_lost_connection(self):
        self.wait_for(lambda: len(self.states) > 500 and self.robot_states, 60, "the bridge")
        while self.command.get_num_connections() == 0:
            time.sleep(0.05)
        names = list(LIMITS.joint_names)
        held = self.position()

        # 1 kHz, monotonic stamps
        with self.lock:
            stamps = np.array([s[0] for s in self.states[-500:]])
        self.assertAlmostEqual(float(np.median(np.diff(stamps))), 0.001, places=4)

        far = held.copy()
        far[3] = 1.0                                               # joint 4 must stay below -0.07
        late = held.copy()
        late[0] += 0.6
        bad = {
            "outside": trajectory(names, [(0.0, held), (2.0, far)]),
            "unknown joint names": trajectory(names[:-1] + ["elbow"], [(0.0, held), (2.0, held)]),
            "NaN or Inf": trajectory(names, [(0.0, held), (2.0, held * np.nan)]),
            "strictly increasing": trajectory(names, [(1.0, held), (1.0, held)]),
            "exceeds the limit": trajectory(names, [(0.0, held), (0.3, late)]),
            "expected 7 joints": trajectory(names[:6], [(0.0, held[:6]), (1.0, held[:6])]),
        }
        for reason, msg in bad.items():
            with self.lock:
                self.robot_states.clear()
            self.command.publish(msg)
            self.wait_for(lambda: any(reason in r.last_rejection for r in self.robot_states), 10,
                          f"the rejection '{reason}'")
            np.testing.assert_allclose(self.position(), held, atol=0.005)   # holds

        # a valid move runs; the robot then drops the connection in the middle of the next one
        target = held.copy()
        target[0] += 0.3
        self.command.publish(trajectory(names, [(0.0, held), (1.5, target)]))
        self.wait_for(lambda: np.abs(self.states[-1][1][0] - target[0]) < 0.01, 15, "the move")
        self.command.publish(trajectory(names, [(0.0, target), (4.0, held)]))
        self.wait_for(lambda: self.robot_states and self.robot_states[-1].executing, 5, "execution")
        subprocess.run(["pkill", "-USR1", "-f", f"fci_standin.*--host {HOST}"], check=True)
        self.wait_for(lambda: self.robot_states and self.robot_states[-1].last_error, 15,
                      "the lost connection on /real/robot_state")
        with self.lock:
            self.assertIn("Exception", self.robot_states[-1].last_error)
            count = len(self.states)
        time.sleep(0.5)
        with self.lock:
            self.assertLessEqual(len(self.states) - count, 5)       # nothing stale published

        rospy.wait_for_service("/real/fci_bridge/recover", timeout=10)
        answer = rospy.ServiceProxy("/real/fci_bridge/recover", Trigger)()
        self.assertTrue(answer.success, answer.message)
        with self.lock:
            count = len(self.states)
        # the robot's clock restarted with the connection: publishing resumes at once
        self.wait_for(lambda: len(self.states) > count + 300, 2, "joint states after recovery")
        self.wait_for(lambda: self.robot_states[-1].last_error == "", 5, "the cleared error")
        resumed = self.position()
        self.command.publish(trajectory(names, [(0.0, resumed), (1.5, held)]))
        self.wait_for(lambda: np.max(np.abs(self.states[-1][1] - held)) < 0.01, 15,
                      "a move after recovery")

        with self.lock:
            everything = np.concatenate([np.concatenate(s[1:]) for s in self.states])
        self.assertTrue(np.all(np.isfinite(everything)))


if __name__ == "__main__":
    rostest.rosrun("panda_sim2real", "fci_faults", FciFaults, sys.argv)
