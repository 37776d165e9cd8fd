#!/usr/bin/env python3
"""rostest: franka_ros_relay republishes franka_state_controller's joint states (nine joints in
another order, some with NaN) as the Panda's seven on /real/joint_states, never a NaN, and
forwards only valid trajectories to the trajectory controller."""
import sys
import time
import unittest

import genpy
import numpy as np
import rospy
import rostest
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from panda_sim2real import JointLimits

LIMITS = JointLimits.from_yaml()


class FrankaRosRelay(unittest.TestCase):
    def test_states_mapped_and_only_valid_trajectories_forwarded(self):
        rospy.init_node("test_franka_ros_relay")
        relayed, forwarded, labels = [], [], []
        rospy.Subscriber("/real/joint_states", JointState, lambda m: relayed.append(m), queue_size=100)
        rospy.Subscriber("/position_joint_trajectory_controller/command", JointTrajectory,
                         lambda m: forwarded.append(m), queue_size=10)
        rospy.Subscriber("/real/label", String, lambda m: labels.append(m.data))
        franka = rospy.Publisher("/franka_state_controller/joint_states", JointState, queue_size=10)
        command = rospy.Publisher("/real/joint_trajectory_controller/command", JointTrajectory,
                                  queue_size=5)
        while franka.get_num_connections() == 0 or command.get_num_connections() == 0:
            time.sleep(0.05)
        names = ["panda_finger_joint1", "panda_finger_joint2"] + list(LIMITS.joint_names)[::-1]
        q = np.r_[0.04, 0.04, LIMITS.home[::-1]]
        deadline = time.monotonic() + 10       # until the relay -> test connection is up
        while not relayed and time.monotonic() < deadline:
            franka.publish(JointState(name=names, position=list(q), velocity=[0.0] * 9,
                                      effort=[0.0] * 9))
            time.sleep(0.05)
        time.sleep(0.2)
        del relayed[:]
        for k in range(40):
            msg = JointState(name=names, position=list(q), velocity=[0.0] * 9,
                             effort=[0.5 * k] * 9)   # within every joint's torque bound
            if k % 4 == 3:
                msg.effort[5] = float("nan")
            msg.header.stamp = rospy.Time.now()
            franka.publish(msg)
            time.sleep(0.01)
        time.sleep(0.5)
        self.assertEqual(len(relayed), 30)                      # the NaN ones are dropped
        for m in relayed:
            self.assertEqual(list(m.name), list(LIMITS.joint_names))
            np.testing.assert_allclose(m.position, LIMITS.home)
            self.assertTrue(np.all(np.isfinite(m.effort)))
        self.assertEqual(labels, ["real robot"])

        def trajectory(points):
            msg = JointTrajectory(joint_names=list(LIMITS.joint_names))
            for t, p in points:
                msg.points.append(JointTrajectoryPoint(positions=list(p),
                                                       time_from_start=genpy.Duration.from_sec(t)))
            return msg

        target = LIMITS.home.copy()
        target[0] += 0.2
        too_fast = LIMITS.home.copy()
        too_fast[0] += 1.0
        command.publish(trajectory([(0.0, LIMITS.home), (0.4, too_fast)]))       # over the limits
        command.publish(trajectory([(0.0, LIMITS.home), (1.0, LIMITS.home * np.nan)]))
        command.publish(trajectory([(0.0, LIMITS.home), (2.0, target)]))         # valid
        deadline = time.monotonic() + 5
        while not forwarded and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        self.assertEqual(len(forwarded), 1)
        np.testing.assert_allclose(forwarded[0].points[-1].positions, target)


if __name__ == "__main__":
    rostest.rosrun("panda_fci", "franka_ros_relay", FrankaRosRelay, sys.argv)
