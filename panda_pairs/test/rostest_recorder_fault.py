#!/usr/bin/env python3
"""rostest: recording faults of the pair runner, both robots at 1 kHz. pair_runner.launch (the
runner and `rosbag record --split`) runs under its own roslaunch against the test's master:

1. a normal end: stamps on /real/joint_states that jump ahead (+1000 s) and backwards during
   the first pair neither end it early nor move the next start, are counted on /diagnostics,
   and the launch ends with exit code 0 and no "REQUIRED process has died";
2. about 30 s of fast moves with the recorder killed (SIGKILL) 15 s after the first pair
   started: the runner stops with an ERROR line and exit code 1 (not "pairs done"), the split
   files (and no file of an earlier recording under the same name) read back as one
   recording, the `dataset` tool warns about the unclosed file, and every pair that ended
   more than LOSS_WINDOW before the kill is in the recording with its START and END (what a
   SIGKILL may cost is the open split file and rosbag's write buffer, not earlier pairs)."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Optional

import genpy
import rosgraph
import rospy
import rostest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import JointState
from sim2real_checks import TopicRecorder, check_fails_at_start, start_node, wait_for

from panda_sim2real import FAST_MOVES_FILE, JointLimits
from panda_sim2real.msg import PairEvent
from panda_pairs.pair_bag import read_pairs
from panda_pairs.recorder_watch import node_pid

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(os.path.dirname(HERE), "scripts")
FAST_MOVES = FAST_MOVES_FILE
RECORDER = "/record_pairs"
KILL_AFTER = 15.0                      # s after the first pair's start
LOSS_WINDOW = 2.0                      # s: the open 1 s split file and rosbag's write buffer
LONG_RUN = 10                          # fast moves: about 30 s planned


class Listener:
    """Pair events (with the ROS time each arrived) and the pair runner's /diagnostics."""

    def __init__(self) -> None:
        self.recorder = TopicRecorder({"/pairs/event": PairEvent, "/diagnostics": DiagnosticArray},
                                      queue_size=50, clock=rospy.get_time)

    @property
    def events(self) -> list[tuple[int, int, float, float]]:
        return [(msg.trajectory_id, msg.event, msg.header.stamp.to_sec(), received)
                for received, msg in self.recorder.received("/pairs/event")]

    @property
    def status(self) -> Optional[tuple[float, DiagnosticStatus]]:
        """(stamp, status) of the newest /pair_runner status on /diagnostics."""
        found = None
        for msg in self.recorder.messages("/diagnostics"):
            for status in msg.status:
                if status.name == "/pair_runner":
                    found = (msg.header.stamp.to_sec(), status)
        return found

    def reset(self) -> None:
        self.recorder.clear()

    def of(self, kind: int) -> list[tuple[int, int, float, float]]:
        return [e for e in self.events if e[1] == kind]

    def wait_for(self, kind: int, timeout: float) -> tuple[int, int, float, float]:
        if not wait_for(lambda: self.of(kind), timeout, period=0.01):
            raise AssertionError(f"no pair event {kind} within {timeout} s")
        return self.of(kind)[0]


def start_pairs(bag: str, trajectories: int, seed: int) -> subprocess.Popen:
    """pair_runner.launch under its own roslaunch on this test's master."""
    return subprocess.Popen(
        ["roslaunch", "panda_pairs", "pair_runner.launch", f"bag:={bag}",
         f"trajectories:={trajectories}", f"seed:={seed}", "kinds:=single,multi",
         f"generator_config:={FAST_MOVES}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(launch: subprocess.Popen, timeout: float) -> str:
    """The launch's output once it has ended by itself (it is stopped if it does not)."""
    try:
        out, _ = launch.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(launch.pid, signal.SIGINT)
        out, _ = launch.communicate(timeout=30)
        raise AssertionError(f"the launch did not end within {timeout} s:\n{out[-3000:]}")
    return out


def with_both_events(recording) -> list[int]:
    """Ids of the pairs recorded with START and END: the complete ones and those left out for
    missing samples only (a loaded machine drops some at 1 kHz, even at a pair's edges)."""
    return sorted([p.trajectory_id for p in recording.pairs]
                  + [p.trajectory_id for p in recording.incomplete if p.end is not None])


def values(status: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


class RecorderFault(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rospy.init_node("test_recorder_fault")
        cls.listener = Listener()
        cls.injector = rospy.Publisher("/real/joint_states", JointState, queue_size=10)
        cls.master = rosgraph.Master(rospy.get_name())
        cls.names = JointLimits.from_yaml().joint_names
        cls.folder = tempfile.mkdtemp(prefix="sim2real_recorder_fault_")

    def tearDown(self) -> None:
        """A launch a failed test left running is stopped (the next one reuses its names)."""
        launch = getattr(self, "launch", None)
        if launch is not None and launch.poll() is None:
            os.killpg(launch.pid, signal.SIGINT)
            launch.communicate(timeout=60)

    def _inject(self, stamp: float) -> None:
        msg = JointState(name=list(self.names), position=[0.0] * 7, velocity=[0.0] * 7,
                         effort=[0.0] * 7)
        msg.header.stamp = genpy.Time.from_sec(stamp)
        self.injector.publish(msg)

    def test_1_normal_end_ignores_stamp_jumps(self):
        self.listener.reset()
        self.launch = launch = start_pairs(os.path.join(self.folder, "normal.bag"), 2, seed=3)
        self.listener.wait_for(PairEvent.START, timeout=120)
        time.sleep(0.3)
        now = rospy.get_time()
        self._inject(now + 1000.0)            # a future stamp: it used to end the pair at once
        self._inject(now - 0.5)               # a stamp jumping backwards
        out = finish(launch, timeout=120)
        self.assertEqual(launch.returncode, 0, out[-3000:])
        self.assertNotIn("REQUIRED process", out)
        self.assertIn("pair_runner: 2 of 2 pairs done", out)
        starts, ends = self.listener.of(PairEvent.START), self.listener.of(PairEvent.END)
        self.assertEqual([e[0] for e in ends], [0, 1])
        for _, _, end, received in ends:      # each END only once the robots got there
            self.assertGreaterEqual(received, end - 0.01)
        # the next start follows the robots (a lagging one may add a second), not the +1000 s
        self.assertLess(starts[1][2], ends[0][2] + 10.0, "the next start took the future stamp")
        _, status = self.listener.status
        counters = values(status)
        self.assertEqual(counters["stamp_jumps_ahead /real/joint_states"], "1")
        self.assertEqual(counters["stamp_jumps_backwards /real/joint_states"], "1")
        self.assertEqual(counters["stamp_jumps_ahead /sim/joint_states"], "0")
        self.assertEqual(counters["pairs_done"], "2")
        self.assertEqual(status.level, DiagnosticStatus.WARN)
        self.assertIn("pair_runner: /real/joint_states: rejected [stamp]: stamp", out)   # the guard's line
        recording = read_pairs(os.path.join(self.folder, "normal.bag"), self.names)
        self.assertEqual(recording.unclosed, ())
        self.assertEqual(with_both_events(recording), [0, 1], recording.warnings())

    def test_2_killed_recorder_stops_the_runner_and_keeps_the_pairs(self):
        self.listener.reset()
        bag = os.path.join(self.folder, "killed.bag")
        stale = os.path.join(self.folder, "killed_999.bag")     # an earlier recording's file
        shutil.copy(glob.glob(os.path.join(self.folder, "normal_*.bag"))[0], stale)
        self.launch = launch = start_pairs(bag, LONG_RUN, seed=5)
        first = self.listener.wait_for(PairEvent.START, timeout=120)
        pid = node_pid(self.master.lookupNode(RECORDER), rospy.get_name(), 5.0)
        while rospy.get_time() < first[2] + KILL_AFTER:
            self.assertIsNone(launch.poll(), "the launch ended before the kill")
            time.sleep(0.005)
        os.kill(pid, signal.SIGKILL)
        killed_at = rospy.get_time()
        out = finish(launch, timeout=60)

        self.assertIn(f"pair_runner: the recorder {RECORDER} (pid {pid}) died", out)
        self.assertRegex(out, r"REQUIRED process \[pair_runner-\d+\] has died!\s*"
                              r"process has died \[pid \d+, exit code 1,")
        self.assertNotIn(f"{LONG_RUN} of {LONG_RUN} pairs done", out)
        stamp, status = self.listener.status
        self.assertEqual(status.level, DiagnosticStatus.ERROR)
        self.assertIn("died", status.message)
        self.assertLess(stamp - killed_at, 3.0, "the runner noticed the death late")
        self.assertLess(len(self.listener.of(PairEvent.END)), LONG_RUN)

        self.assertFalse(os.path.exists(stale), "the earlier recording's file was read along")
        active = glob.glob(os.path.join(self.folder, "killed_*.bag.active"))
        self.assertEqual(len(active), 1)
        recording = read_pairs(bag, self.names)
        self.assertEqual(recording.unclosed, tuple(active))
        ids = with_both_events(recording)
        self.assertEqual(ids, list(range(len(ids))), recording.warnings())
        self.assertEqual(recording.pairs[0].trajectory_id, 0, recording.warnings())
        kept = recording.pairs[-1].end - first[2]            # recording time in complete pairs
        ended = [e[0] for e in self.listener.of(PairEvent.END) if e[3] < killed_at - LOSS_WINDOW]
        print(f"recorder killed {killed_at - first[2]:.2f} s after the first start, the runner "
              f"reported it {stamp - killed_at:.2f} s later: "
              f"{len(ids)} complete pairs cover {kept:.2f} s (their planned durations "
              f"{recording.seconds:.2f} s); {len(recording.incomplete)} incomplete; pairs "
              f"{ended} ended more than {LOSS_WINDOW} s before the kill; "
              f"{len(glob.glob(os.path.join(self.folder, 'killed_*.bag')))} closed files",
              *recording.warnings(), sep="\n", flush=True)
        self.assertTrue(ended, "no pair ended before the kill: the test moves are too long")
        self.assertEqual(ids[:len(ended)], ended, "a pair that ended before the kill was lost")

        done = subprocess.run([sys.executable, os.path.join(SCRIPTS, "dataset"), "--bag", bag,
                               "--out", os.path.join(self.folder, "ds.npz"),
                               "--json", os.path.join(self.folder, "ds.json")],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(f"warning: {active[0]} was not closed by its recorder", done.stderr)
        with open(os.path.join(self.folder, "ds.json")) as f:
            figures = json.load(f)
        self.assertEqual(figures["unclosed_files"], active)
        self.assertAlmostEqual(figures["complete_pair_seconds"], recording.seconds, places=6)
        self.assertEqual(figures["incomplete_pairs"], len(recording.incomplete))
        self.assertTrue(re.search(r"incomplete pairs \d+ \(left out\), unclosed files 1",
                                  done.stdout), done.stdout)


    def test_3_bad_scalar_parameters_stop_the_runner_with_one_line(self):
        """The pair runner's scalar parameters (sim2real_checks.params)."""
        for k, (arg, phrase) in enumerate((("_seed:=abc", "~seed must be an integer >= 0, got 'abc'"),
                                           ("_trajectories:=0", "~trajectories must be an integer >= 1"),
                                           ("_end_launch:=maybe", "~end_launch must be true or false"))):
            with self.subTest(arg=arg):
                check_fails_at_start(start_node("panda_pairs", "pair_runner", f"broken_runner_{k}",
                                                [arg, "__ns:=/broken"]), phrase)

if __name__ == "__main__":
    rostest.rosrun("panda_pairs", "recorder_fault", RecorderFault, sys.argv)
