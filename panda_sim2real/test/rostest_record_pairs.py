#!/usr/bin/env python3
"""rostest: the pair runner executes trajectories on both robots; `rosbag record` holds both
streams with matching trajectory ids."""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import rosgraph
import rospy
import rostest

from panda_sim2real.limits import JointLimits
from panda_sim2real.msg import PairEvent
from panda_sim2real.pair_bag import read_pairs

TOPICS = ["/sim/joint_states", "/real/joint_states", "/sim/joint_trajectory_controller/command",
          "/real/joint_trajectory_controller/command", "/pairs/event", "/real/label"]


class RecordPairs(unittest.TestCase):
    def test_bag_holds_both_streams_with_matching_ids(self):
        rospy.init_node("test_record_pairs")
        ends = []
        lock = threading.Lock()

        def on_event(msg):
            if msg.event == PairEvent.END:
                with lock:
                    ends.append(msg.trajectory_id)

        folder = tempfile.mkdtemp(prefix="realeasy_rostest_")
        bag = os.path.join(folder, "pairs.bag")
        # `rosrun` execs the C++ recorder itself (the `rosbag` wrapper would exit on SIGINT before
        # the recorder has closed the bag), in its own process group
        recorder = subprocess.Popen(["rosrun", "rosbag", "record", "-O", bag, *TOPICS],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
        # the runner (wait_for_recorder) starts once /pairs/event has a subscriber: let the
        # recorder be that first subscriber, on every topic, before the test listens too
        master = rosgraph.Master(rospy.get_name())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            subscribers = dict(master.getSystemState()[1])
            if all(any(n != rospy.get_name() for n in subscribers.get(t, [])) for t in TOPICS):
                break
            time.sleep(0.05)
        rospy.Subscriber("/pairs/event", PairEvent, on_event, queue_size=10)
        try:
            deadline = time.monotonic() + 200
            while time.monotonic() < deadline and len(ends) < 2:
                time.sleep(0.1)
            self.assertEqual(sorted(ends), [0, 1], "the runner did not finish two pairs")
            time.sleep(1.0)
        finally:
            os.killpg(recorder.pid, signal.SIGINT)
            recorder.wait(timeout=30)
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
    rostest.rosrun("panda_sim2real", "record_pairs", RecordPairs, sys.argv)
