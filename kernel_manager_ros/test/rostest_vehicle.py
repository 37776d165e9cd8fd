#!/usr/bin/env python3
"""rostest (vehicle.test): one design mission over ROS meets every deadline (total reward 3)
while bad commands are dropped and the simulation keeps publishing."""
import math
import unittest

import rospy
import rostest
from geometry_msgs.msg import PointStamped
from std_msgs.msg import Float64

from kernel_manager_ros.msg import VehicleCommand, VehicleState


class VehicleMission(unittest.TestCase):
    def test_design_mission_over_ros(self):
        fixes, totals = [], []
        rospy.Subscriber("/vehicle/gps", PointStamped, fixes.append)
        rospy.Subscriber("/mission/total_reward", Float64, lambda m: totals.append(m.data))
        bad_cmd = rospy.Publisher("/vehicle/cmd", VehicleCommand, queue_size=1)
        bad_state = rospy.Publisher("/vehicle/set_state", VehicleState, queue_size=1)
        deadline = rospy.get_rostime() + rospy.Duration(5.0)
        while not fixes and not rospy.is_shutdown():
            self.assertLess(rospy.get_rostime(), deadline + rospy.Duration(60.0), "no GPS fix")
            rospy.sleep(0.05)
        for _ in range(3):
            bad_cmd.publish(VehicleCommand(speed=math.nan, steering_angle=0.0))
            bad_state.publish(VehicleState(x=math.inf, y=0.0, set_position=True))
            rospy.sleep(0.1)
        while not totals and not rospy.is_shutdown():
            rospy.sleep(0.1)
        self.assertEqual(totals, [3.0])
        n = len(fixes)
        rospy.sleep(1.0)
        self.assertGreater(len(fixes), n + 10, "vehicle_sim stopped publishing")
        self.assertTrue(all(math.isfinite(f.point.x) for f in fixes))


if __name__ == "__main__":
    rospy.init_node("rostest_vehicle")
    rostest.rosrun("kernel_manager_ros", "vehicle_mission", VehicleMission)
