#!/usr/bin/env python3
"""rostest (kernel_sim.test): /kernel_manager/active_kernel is published once per control step
(10 Hz of simulated time), reports an active kernel (index >= 0) while the vehicle passes the
kernels' region, and the kernel manager survives malformed messages. The kernel manager runs on
its state spec as kernel_sim.launch loads it (a mapping under ~config, not a file path)."""
import math
import unittest

import rospy
import rostest
from geometry_msgs.msg import PointStamped
from std_msgs.msg import Float64

from kernel_manager_ros.msg import ActiveKernel, VehicleCommand


class KernelSim(unittest.TestCase):
    def test_the_state_spec_is_a_mapping_on_the_parameter_server(self):
        spec = rospy.get_param("/kernel_manager/config")
        self.assertIsInstance(spec, dict)
        self.assertEqual([s["topic"] for s in spec["sensors"]],
                         ["/vehicle/gps", "/vehicle/gps_vel", "/vehicle/pitch"])

    def test_active_kernel_reports_every_step(self):
        reports, totals, relayed = [], [], []
        rospy.Subscriber("/kernel_manager/active_kernel", ActiveKernel, reports.append)
        rospy.Subscriber("/mission/total_reward", Float64, lambda m: totals.append(m.data))
        rospy.Subscriber("/vehicle/gps_kernel", PointStamped, relayed.append)
        bad_gps = rospy.Publisher("/vehicle/gps", PointStamped, queue_size=1)
        bad_cmd = rospy.Publisher("/vehicle/cmd", VehicleCommand, queue_size=1)
        start = rospy.get_rostime()
        while not reports and not rospy.is_shutdown():
            self.assertLess((rospy.get_rostime() - start).to_sec(), 60.0, "no active_kernel")
            rospy.sleep(0.05)
        for _ in range(3):    # malformed: NaN position, NaN command
            msg = PointStamped()
            msg.header.stamp = rospy.get_rostime()
            msg.point.x = math.nan
            bad_gps.publish(msg)
            bad_cmd.publish(VehicleCommand(speed=math.nan, steering_angle=0.0))
            rospy.sleep(0.1)
        after_bad = len(reports)
        while not totals and not rospy.is_shutdown():
            rospy.sleep(0.1)
        steps = [r for r in reports if r.header.stamp >= start]
        duration = (steps[-1].header.stamp - steps[0].header.stamp).to_sec()
        # one report per control step: 10 Hz of simulated time (some lost at start-up)
        self.assertGreater(len(steps), 8 * duration)
        self.assertLess(len(steps), 10 * duration + 5)
        active = [r for r in steps if r.index >= 0]
        self.assertTrue(active, "no kernel became active during the mission")
        self.assertTrue(all(r.kind == "motor" and 0.5 < r.activation <= 1.0 for r in active))
        self.assertTrue(all(math.isfinite(m.point.x) for m in relayed), "NaN relayed")
        self.assertGreater(len(reports), after_bad + 50,
                           "kernel_manager stopped reporting after the bad messages")


if __name__ == "__main__":
    rospy.init_node("rostest_kernel_sim")
    rostest.rosrun("kernel_manager_ros", "kernel_sim", KernelSim)
