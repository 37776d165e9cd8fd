#!/usr/bin/env python3
"""rostest (node_startup.test): each node, started by rosrun with one bad parameter, exits with
status 1 after one [FATAL] line that names the node and the parameter, and no traceback."""
import unittest

import rospy
import rostest
from sim2real_checks import check_fails_at_start, start_node

# (node, private parameters, what the [FATAL] line must name); the node's name is bad_<i>
CASES = [
    ("vehicle_sim", ["_gps_rate:=abc"], "~gps_rate"),
    ("vehicle_sim", ["_gps_rate:=30"], "~gps_rate"),       # does not divide the physics rate
    ("vehicle_sim", ["_seed:=x"], "~seed"),
    ("vehicle_sim", ["_real_time_factor:=fast"], "~real_time_factor"),
    ("vehicle_sim", ["_publish_clock:=maybe"], "~publish_clock"),
    ("vehicle_sim", ["_config:={physics_rate: fast}"], "parameter /bad_5/config: "),
    ("mission", ["_missions:=foo"], "~missions"),
    ("mission", ["_gap:=bar"], "~gap"),
    ("mission", ["_seed:=x"], "~seed"),
    ("mission", ["_pitch_speed_gain:=high"], "~pitch_speed_gain"),
    ("mission", ["_use_kernel_topics:=maybe"], "~use_kernel_topics"),
    ("mission", ["_config:=/no/such/mission.yaml"], "/no/such/mission.yaml"),
    ("kernel_manager", ["_kernels:=/k.yaml"], "~config"),
    ("kernel_manager", ["_kernels:=/k.yaml", "_config:={sensors: []}"],
     "parameter /bad_13/config: "),
]


class NodeStartup(unittest.TestCase):
    def test_a_bad_parameter_is_one_fatal_line_and_exit_1(self):
        for i, (node, args, expected) in enumerate(CASES):
            with self.subTest(node=node, args=args):
                check_fails_at_start(start_node("kernel_manager_ros", node, f"bad_{i}", args), expected, f"bad_{i}")

    def test_an_old_style_path_is_read_with_a_deprecation_warning(self):
        startup = start_node("kernel_manager_ros", "kernel_manager", "old_path",
                             ["_kernels:=/k.yaml", "_config:=/no/such/spec.yaml"])
        check_fails_at_start(startup, "/no/such/spec.yaml", "old_path")
        self.assertTrue(any("/old_path/config: a file path is deprecated" in w for w in startup.lines("WARN")),
                        startup.stderr)


if __name__ == "__main__":
    rospy.init_node("rostest_node_startup")
    rostest.rosrun("kernel_manager_ros", "node_startup", NodeStartup)
