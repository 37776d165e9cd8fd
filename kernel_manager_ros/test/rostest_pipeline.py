#!/usr/bin/env python3
"""rostest (pipeline.test): the root launch/pipeline.launch with robot:=standin and every method
switched on comes up and every node publishes: the simulator on an identified URDF (sim_urdf,
diffnea_ros/results/panda_identified.urdf), the reality stand-in, the diffnea identifier
(identify_urdf, the same URDF), the Realeasy residual publisher (realeasy_model, an untrained
model written here) and the kernel manager (kernels, a kernel file generated here by
`panda-kernels` from a 4-trajectory pair collection). The test starts roslaunch itself, on
rostest's master, once the files exist."""
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import rospy
import rostest
from sensor_msgs.msg import JointState

from diffnea_ros.msg import IdentifiedParams
from kernel_manager_ros.kernel_file import load_kernels
from kernel_manager_ros.msg import ActiveKernel
from kernel_manager_ros.state_spec import StateSpec
from sim2real_checks import TopicRecorder, descendants, listening_sockets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
PIPELINE = os.path.join(ROOT, "launch", "pipeline.launch")
IDENTIFIED_URDF = os.path.join(ROOT, "diffnea_ros", "results", "panda_identified.urdf")
PANDA_TOPICS = os.path.join(ROOT, "kernel_manager_ros", "config", "panda_topics.yaml")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from node_latency import untrained_model  # noqa: E402 (the bench's, as the smoke test uses)

JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
SHUTDOWN = 15.0     # [s] wall: roslaunch escalates to SIGTERM after this (its _TIMEOUT_SIGINT)
STARTUP = 75.0      # [s] wall: every node up and publishing (6-11 s measured, also loaded)
WINDOW = 3.0        # [s] wall: rates compared over this
# topic -> (type, messages needed to call the node up)
TOPICS = {
    "/sim/joint_states": (JointState, 50),                       # panda_sim (identified URDF)
    "/real/joint_states": (JointState, 50),                      # panda_reality (the stand-in)
    "/sim/joint_states_realistic": (JointState, 50),             # realeasy residual_publisher
    "/realeasy/residual": (JointState, 50),
    "/diffnea/identified_params": (IdentifiedParams, 2),         # diffnea identifier, 2 Hz
    "/diffnea/predicted_effort": (JointState, 20),
    "/kernel_manager/active_kernel": (ActiveKernel, 50),         # kernel_manager, every step
    "/sim/joint_states_kernel": (JointState, 50),
}


def run(cmd, what):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"{what} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done


def finite_joint_state(msg):
    return (list(msg.name) == JOINTS and len(msg.position) == len(msg.velocity) == 7
            and all(math.isfinite(v) for v in (*msg.position, *msg.velocity, *msg.effort)))


class Pipeline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("rostest_pipeline")
        cls.folder = tempfile.mkdtemp(prefix="pipeline_rostest_")
        cls.addClassCleanup(shutil.rmtree, cls.folder, ignore_errors=True)  # also on a failed set-up
        assert os.path.isfile(IDENTIFIED_URDF), f"{IDENTIFIED_URDF} is missing"
        started = time.monotonic()
        # a small real kernel file: 4 pairs collected in-process, 200 roll-outs (about 4 s)
        run(["rosrun", "kernel_manager_ros", "panda-kernels", "--trajectories", "4",
             "--rollouts", "200", "--seed", "0", "--settle", "0.5", "--quiet",
             "--out-dir", cls.folder], "panda-kernels")
        cls.kernels = os.path.join(cls.folder, "panda_kernels.yaml")
        cls.model = untrained_model(os.path.join(cls.folder, "realeasy_untrained.pt"),
                                    rate=100.0, label="pipeline rostest (untrained weights)")
        cls.prepared = time.monotonic() - started
        cls.log_path = os.path.join(cls.folder, "roslaunch.log")
        cls.log = open(cls.log_path, "w")
        cls.listener = TopicRecorder({topic: msg_type for topic, (msg_type, _) in TOPICS.items()}, queue_size=5000)
        cls.launch = subprocess.Popen(
            ["roslaunch", PIPELINE, "robot:=standin", f"sim_urdf:={IDENTIFIED_URDF}",
             f"identify_urdf:={IDENTIFIED_URDF}", f"realeasy_model:={cls.model}",
             f"kernels:={cls.kernels}"],
            stdout=cls.log, stderr=subprocess.STDOUT, start_new_session=True)
        cls.launched = time.monotonic()

    @classmethod
    def tearDownClass(cls):
        if cls.launch.poll() is None:
            os.killpg(cls.launch.pid, signal.SIGINT)
            try:
                cls.launch.wait(timeout=25)
            except subprocess.TimeoutExpired:
                os.killpg(cls.launch.pid, signal.SIGKILL)
                cls.launch.wait()
        cls.log.close()

    def log_tail(self):
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def test_every_node_comes_up_and_publishes(self):   # the tests run in name order
        deadline = self.launched + STARTUP
        missing = TOPICS
        while time.monotonic() < deadline and self.launch.poll() is None:
            counts = self.listener.counts()
            missing = {t: n for t, (_, n) in TOPICS.items() if counts[t] < n}
            if not missing:
                break
            time.sleep(0.2)
        self.assertIsNone(self.launch.poll(), f"roslaunch ended:\n{self.log_tail()}")
        self.assertFalse(missing, f"not publishing within {STARTUP:.0f} s: {sorted(missing)} "
                                  f"(counts {self.listener.counts()})\n{self.log_tail()}")
        up = time.monotonic() - self.launched
        time.sleep(WINDOW)
        got = self.listener.snapshot()
        self.assertIsNone(self.launch.poll(), f"a node died:\n{self.log_tail()}")
        rospy.loginfo(f"pipeline rostest: files in {self.prepared:.1f} s, every node publishing "
                      f"{up:.1f} s after roslaunch; counts "
                      f"{ {t: len(m) for t, m in got.items()} }")

        # the launch arguments reached the nodes
        self.assertEqual(rospy.get_param("/sim/panda_sim/urdf"), IDENTIFIED_URDF)
        self.assertEqual(rospy.get_param("/diffnea/identifier/urdf"), IDENTIFIED_URDF)
        self.assertEqual(rospy.get_param("/realeasy/residual_publisher/model"), self.model)
        self.assertEqual(rospy.get_param("/kernel_manager/kernels"), self.kernels)
        self.assertEqual(rospy.get_param("/kernel_manager/set_state/topic"),
                         "/sim/set_joint_state")

        for topic in ("/sim/joint_states", "/real/joint_states", "/sim/joint_states_realistic",
                      "/sim/joint_states_kernel"):
            bad = [m for m in got[topic] if not finite_joint_state(m)]
            self.assertFalse(bad, f"{topic}: {len(bad)} malformed or non-finite, e.g. {bad[:1]}")
        params = got["/diffnea/identified_params"]
        self.assertTrue(params[-1].links, "identified_params names no link")
        self.assertGreater(params[-1].samples, 0, "the identifier took no /real/joint_states")
        efforts = got["/diffnea/predicted_effort"]
        self.assertTrue(all(math.isfinite(v) for m in efforts for v in m.effort))

        # the kernel manager steps with the simulator: one report per /sim/joint_states (the
        # reference follows each), stamped with the step; a kernel index is valid or -1
        spec = StateSpec.from_yaml(PANDA_TOPICS)
        n_kernels = len(load_kernels(self.kernels, spec.state_names, spec.action_names))
        self.assertGreater(n_kernels, 0, "panda-kernels made no kernel")
        reports = got["/kernel_manager/active_kernel"]
        self.assertTrue(all(-1 <= r.index < n_kernels for r in reports))
        first, last = reports[0].header.stamp, reports[-1].header.stamp
        sim_steps = [m for m in got["/sim/joint_states"] if first <= m.header.stamp <= last]
        self.assertGreater(len(sim_steps), 50, "under 0.5 s of simulated time observed")
        self.assertGreaterEqual(len(reports), 0.9 * len(sim_steps),
                                f"{len(reports)} kernel reports for {len(sim_steps)} steps")
        # the relay passes the simulator's joint states on (no sensor kernels for the Panda)
        sim_stamps = {m.header.stamp for m in got["/sim/joint_states"]}
        relayed = got["/sim/joint_states_kernel"]
        self.assertGreaterEqual(sum(m.header.stamp in sim_stamps for m in relayed),
                                0.9 * len(relayed))

    def test_listens_on_loopback_only(self):
        """Every socket the launched graph listens on (the nodes' XML-RPC and TCPROS servers,
        roslaunch's own) is bound to 127.0.0.0/8 (env.sh's ROS_IP)."""
        self.assertIsNone(self.launch.poll(), f"roslaunch ended:\n{self.log_tail()}")
        sockets = listening_sockets(descendants(self.launch.pid))
        programs = {s.program for s in sockets}
        self.assertGreaterEqual(len(programs), 5, f"too few listening programs: {sockets}")
        exposed = [s for s in sockets if not s.loopback]
        self.assertFalse(exposed, f"listening beyond loopback: {exposed}")

    def test_shuts_down_cleanly_within_the_launch_timeout(self):
        """SIGINT to roslaunch: every node stops before roslaunch escalates to SIGTERM, without
        a traceback."""
        self.assertIsNone(self.launch.poll(), f"roslaunch ended:\n{self.log_tail()}")
        started = time.monotonic()
        self.launch.send_signal(signal.SIGINT)
        try:
            self.launch.wait(timeout=SHUTDOWN + 10.0)
        except subprocess.TimeoutExpired:
            self.fail(f"roslaunch still running {SHUTDOWN + 10:.0f} s after SIGINT")
        took = time.monotonic() - started
        self.log.flush()
        with open(self.log_path) as f:
            log = f.read()
        rospy.loginfo(f"pipeline rostest: roslaunch stopped {took:.1f} s after SIGINT")
        self.assertLess(took, SHUTDOWN, f"shutdown took {took:.1f} s\n{log[-3000:]}")
        self.assertNotIn("escalating to SIGTERM", log)
        self.assertNotIn("Traceback", log, log[-3000:])


if __name__ == "__main__":
    rostest.rosrun("kernel_manager_ros", "pipeline", Pipeline)
