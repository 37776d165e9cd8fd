#!/usr/bin/env python3
"""rostest: the pair runner executes trajectories on both robots; `rosbag record` holds both
streams with matching trajectory ids."""
import sys
import unittest

import rospy
import rostest

from panda_sim2real import JointLimits
from panda_pairs.pair_bag import read_pairs
from pair_recording import record_pairs


class RecordPairs(unittest.TestCase):
    def test_bag_holds_both_streams_with_matching_ids(self):
        rospy.init_node("test_record_pairs")
        bag, ends = record_pairs(2)
        self.assertEqual(ends, [0, 1], "the runner did not finish two pairs")
        recording = read_pairs(bag, JointLimits.from_yaml().joint_names)
        self.assertEqual([p.trajectory_id for p in recording.pairs], [0, 1])
        self.assertEqual(recording.label, "reality stand-in")
        for pair in recording.pairs:
            self.assertIn(pair.kind, ("single", "multi"))
            for stream in (pair.sim, pair.real):
                self.assertGreater(len(stream.t), 0.9 * (pair.end - pair.start) * 100)
                self.assertGreaterEqual(stream.t[0], pair.start - 1e-6)
                self.assertLessEqual(stream.t[-1], pair.end + 1e-6)


if __name__ == "__main__":
    rostest.rosrun("panda_pairs", "record_pairs", RecordPairs, sys.argv)
