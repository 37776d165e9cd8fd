#!/usr/bin/env python3
"""rostest: fci_bridge against fci_standin under bad input and faults. Bad trajectories are
rejected with a reason on /real/robot_state while the robot holds; the robot dropping the
connection mid-trajectory is reported and /real/fci_bridge/recover resumes;
/real/fci_bridge/move_to_start brings the arm back to the start pose; a stalled bridge makes the
stand-in abort (communication_constraints_violation), reported until ~recover; /real/joint_states
runs at 1 kHz and never carries a non-finite value."""
import os
import signal
import subprocess
import sys
import time
import unittest

import genpy
import numpy as np
import rospy
import rostest
from sensor_msgs.msg import JointState
from sim2real_checks import TopicRecorder, descendants, node_pid, wait_for
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from panda_sim2real import JointLimits
from panda_sim2real.msg import RobotState

LIMITS = JointLimits.from_yaml()
HOST = "127.0.0.42"
JOINT_STATES, ROBOT_STATE = "/real/joint_states", "/real/robot_state"


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
        self.rec = TopicRecorder({JOINT_STATES: JointState, ROBOT_STATE: RobotState},
                                 queue_sizes={JOINT_STATES: 2000, ROBOT_STATE: 100})
        self.command = rospy.Publisher("/real/joint_trajectory_controller/command", JointTrajectory,
                                       queue_size=5)

    def wait_for(self, predicate, timeout, what):
        def holds():
            with self.rec.lock:
                return predicate()
        if not wait_for(holds, timeout):
            self.fail(f"timed out waiting for {what}")

    @property
    def robot_states(self):
        return self.rec.messages(ROBOT_STATE)

    def count(self):
        """Joint states received."""
        return self.rec.count(JOINT_STATES)

    def position(self):
        return np.array(self.rec.latest(JOINT_STATES).position)

    def test_bad_input_and_a_lost_connection(self):
        self.wait_for(lambda: self.count() > 500 and self.robot_states, 60, "the bridge")
        while self.command.get_num_connections() == 0:
            time.sleep(0.05)
        names = list(LIMITS.joint_names)
        held = self.position()

        # 1 kHz, monotonic stamps
        stamps = np.array([m.header.stamp.to_sec() for m in self.rec.messages(JOINT_STATES)[-500:]])
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
            self.rec.clear(ROBOT_STATE)
            self.command.publish(msg)
            self.wait_for(lambda: any(reason in r.last_rejection for r in self.robot_states), 10,
                          f"the rejection '{reason}'")
            np.testing.assert_allclose(self.position(), held, atol=0.005)   # holds

        # a valid move runs; the robot then drops the connection in the middle of the next one
        target = held.copy()
        target[0] += 0.3
        self.command.publish(trajectory(names, [(0.0, held), (1.5, target)]))
        self.wait_for(lambda: np.abs(self.position()[0] - target[0]) < 0.01, 15, "the move")
        self.command.publish(trajectory(names, [(0.0, target), (4.0, held)]))
        self.wait_for(lambda: self.robot_states and self.robot_states[-1].executing, 5, "execution")
        subprocess.run(["pkill", "-USR1", "-f", f"fci_standin.*--host {HOST}"], check=True)
        self.wait_for(lambda: self.robot_states and self.robot_states[-1].last_error, 15,
                      "the lost connection on /real/robot_state")
        with self.rec.lock:
            self.assertIn("Exception", self.robot_states[-1].last_error)
            count = self.count()
        time.sleep(0.5)
        self.assertLessEqual(self.count() - count, 5)       # nothing stale published

        rospy.wait_for_service("/real/fci_bridge/recover", timeout=10)
        answer = rospy.ServiceProxy("/real/fci_bridge/recover", Trigger)()
        self.assertTrue(answer.success, answer.message)
        count = self.count()
        # the robot's clock restarted with the connection: publishing resumes at once
        self.wait_for(lambda: self.count() > count + 300, 2, "joint states after recovery")
        self.wait_for(lambda: self.robot_states[-1].last_error == "", 5, "the cleared error")
        resumed = self.position()
        self.command.publish(trajectory(names, [(0.0, resumed), (1.5, held)]))
        self.wait_for(lambda: np.max(np.abs(self.position() - held)) < 0.01, 15,
                      "a move after recovery")

        # the arm away from the start pose; ~move_to_start brings it back and answers when there
        away = held + np.r_[0.3, 0.2, -0.3, 0.3, 0.2, -0.2, 0.4]
        self.command.publish(trajectory(names, [(0.0, self.position()), (3.0, away)]))
        self.wait_for(lambda: np.max(np.abs(self.position() - away)) < 0.01, 20, "the move away")
        self.wait_for(lambda: not self.robot_states[-1].executing, 5, "the move's end")
        rospy.wait_for_service("/real/fci_bridge/move_to_start", timeout=10)
        answer = rospy.ServiceProxy("/real/fci_bridge/move_to_start", Trigger)()
        self.assertTrue(answer.success, answer.message)
        self.assertIn("at the start pose (within", answer.message)
        self.wait_for(lambda: np.max(np.abs(self.position() - LIMITS.home)) < 0.01, 2,
                      "the start pose")

        # a stalled client: the bridge's control process (libfranka's loop runs in the node's
        # child) stopped for 0.1 s; the stand-in aborts after 20 cycles without a command, as a
        # robot does
        children = descendants(node_pid("/real/fci_bridge", rospy.get_name()))[1:]
        self.assertEqual(len(children), 1, "fci_bridge runs its 1 kHz path in one child process")
        os.kill(children[0], signal.SIGSTOP)
        time.sleep(0.1)
        os.kill(children[0], signal.SIGCONT)
        self.wait_for(lambda: "communication_constraints_violation" in self.robot_states[-1].last_error,
                      15, "the abort on /real/robot_state")
        answer = rospy.ServiceProxy("/real/fci_bridge/move_to_start", Trigger)()
        self.assertFalse(answer.success)
        self.assertIn("call ~recover", answer.message)
        answer = rospy.ServiceProxy("/real/fci_bridge/recover", Trigger)()
        self.assertTrue(answer.success, answer.message)
        self.wait_for(lambda: self.robot_states[-1].last_error == "", 5, "the cleared error")
        resumed = self.position()
        self.command.publish(trajectory(names, [(0.0, resumed), (1.5, away)]))
        self.wait_for(lambda: np.max(np.abs(self.position() - away)) < 0.01, 15,
                      "a move after the abort")

        everything = np.concatenate([np.concatenate([m.position, m.velocity, m.effort])
                                     for m in self.rec.messages(JOINT_STATES)])
        self.assertTrue(np.all(np.isfinite(everything)))


if __name__ == "__main__":
    rostest.rosrun("panda_fci", "fci_faults", FciFaults, sys.argv)
