#!/usr/bin/env python3
"""rostest: real/sim pairs over the libfranka protocol (fci_standin + fci_bridge), the arm homed
by the runner first; the bag holds both streams with matching trajectory ids and the /real label,
and the dataset and compare tools read it unchanged. During the second pair the bridge's control
process stalls for 0.1 s: the stand-in aborts as a robot does, the runner stops, and that pair
stays incomplete, left out by the tools."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

import numpy as np
import rosbag
import rospy
import rostest
from sim2real_checks import descendants, node_pid

from panda_sim2real import JointLimits
from panda_pairs.pair_bag import read_pairs
from pair_recording import record_pairs

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")


def run_tool(name, *args):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, name), *args],
                          capture_output=True, text=True, timeout=120)


def stall_the_bridge_during(trajectory_id: int, after: float = 0.4):
    """on_start for record_pairs: 0.4 s into that pair, stop fci_bridge's control process for
    0.1 s (a client that misses 20 cycles: the stand-in aborts with
    communication_constraints_violation, as the robot's FCI does)."""
    def stall() -> None:
        time.sleep(after)
        child = descendants(node_pid("/real/fci_bridge", rospy.get_name()))[1]
        os.kill(child, signal.SIGSTOP)
        time.sleep(0.1)
        os.kill(child, signal.SIGCONT)

    def on_start(started: int) -> None:
        if started == trajectory_id:
            threading.Thread(target=stall, daemon=True).start()
    return on_start


def runner_gone() -> bool:
    """The runner has exited (a node that exits on an error may stay registered with the
    master: ask the node itself)."""
    try:
        node_pid("/pair_runner", rospy.get_name())
    except Exception:              # unregistered, or its node API no longer answers
        return True
    return False


class FciPairs(unittest.TestCase):
    def test_pairs_over_fci_are_a_pair_bag_the_tools_read(self):
        rospy.init_node("test_fci_pairs")
        bag, ends = record_pairs(3, on_start=stall_the_bridge_during(1), finished=runner_gone)
        self.assertEqual(ends, [0], "the runner did not stop in the second pair")
        recording = read_pairs(bag, JointLimits.from_yaml().joint_names)
        self.assertEqual([p.trajectory_id for p in recording.pairs], [0])
        self.assertEqual([p.trajectory_id for p in recording.incomplete], [1])
        self.assertEqual(recording.label, "reality stand-in over FCI")
        with rosbag.Bag(bag) as recorded:
            commands = [np.array(m.points[-1].positions) for _, m, _ in
                        recorded.read_messages(["/real/joint_trajectory_controller/command"])]
        self.assertEqual(len(commands), 2)
        for pair, command_end in zip(recording.pairs, commands):
            # fci_bridge streams every 1 ms robot state (how many arrive per wall-clock second
            # depends on this machine's load: a figure of bench/fci_bridge.py)
            self.assertAlmostEqual(float(np.median(np.diff(pair.real.t))), 0.001, places=4)
            self.assertGreater(len(pair.sim.t), 0.9 * (pair.end - pair.start) * 100)
            for stream in (pair.sim, pair.real):
                self.assertGreaterEqual(stream.t[0], pair.start - 1e-6)
                self.assertLessEqual(stream.t[-1], pair.end + 1e-6)
            # the stand-in over FCI followed the plan: at its end position after the rest
            np.testing.assert_allclose(pair.real.q[-1], command_end, atol=0.01)

        folder = os.path.dirname(bag)
        done = run_tool("dataset", "--bag", bag, "--out", os.path.join(folder, "ds.npz"),
                        "--json", os.path.join(folder, "ds.json"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("incomplete pairs 1 (left out)", done.stdout)
        with open(os.path.join(folder, "ds.json")) as f:
            self.assertEqual(json.load(f)["incomplete_pairs"], 1)
        done = run_tool("compare", "--bag", bag, "--json", os.path.join(folder, "gap.json"),
                        "--plot", os.path.join(folder, "gap.png"))
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(os.path.join(folder, "gap.json")) as f:
            gap = json.load(f)
        self.assertEqual(gap["label"], "reality stand-in over FCI")
        self.assertEqual(len(gap["torque_mse"]), 7)


if __name__ == "__main__":
    rostest.rosrun("panda_pairs", "fci_pairs", FciPairs, sys.argv)
