#!/usr/bin/env python3
"""rostest: the residual_publisher node (paper 000 Algorithms 2-3) against an offline
ResidualStream run on the same valid samples."""
import os
import signal
import subprocess
import tempfile
import time
import unittest

import numpy as np
import rospy
import rostest
from sim2real_checks import TopicRecorder, check_fails_at_start, joint_state_message, start_node, wait_for
import torch
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from panda_sim2real import JointLimits
from realeasy_ros.networks import ModelSpec, build_network
from realeasy_ros.model import RealeasyModel
from panda_pairs import JointLimitScaler
from realeasy_ros.residual_stream import ResidualStream

WARMUP = 5
RATE = 200.0
SHUTDOWN_SECONDS = 5.0
REALISTIC, RESIDUAL, DIAGNOSTICS = "/sim/joint_states_realistic", "/realeasy/residual", "/diagnostics"


def make_model(path, spec=ModelSpec(hidden_size=8), names=None, seed=0):
    torch.manual_seed(seed)
    limits = JointLimits.from_yaml()
    names = tuple(names or limits.joint_names)
    model = RealeasyModel(build_network(spec), spec, JointLimitScaler.from_limits(limits)
                          if names == limits.joint_names else
                          JointLimitScaler(JointLimitScaler.from_limits(limits).lower,
                                           JointLimitScaler.from_limits(limits).upper, names),
                          names, RATE, WARMUP, {"label": "test"})
    model.save(path)
    return model


class Listener(TopicRecorder):
    """The node's outputs and /diagnostics, each with its (monotonic) arrival time."""

    def __init__(self):
        super().__init__({REALISTIC: JointState, RESIDUAL: JointState, DIAGNOSTICS: DiagnosticArray},
                         queue_size=5000, queue_sizes={DIAGNOSTICS: 10})

    def corrected(self):
        """Messages on (joint_states_realistic, residual)."""
        with self.lock:
            return self.count(REALISTIC), self.count(RESIDUAL)


def node_args(model_path, extra=()):
    return ["__ns:=/realeasy", f"_model:={model_path}", "joint_states:=/sim/joint_states",
            "joint_states_realistic:=/sim/joint_states_realistic", *extra]


def run_node(name, model_path, extra=()):
    return subprocess.Popen(["rosrun", "realeasy_ros", "residual_publisher", f"__name:={name}",
                             *node_args(model_path, extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


class ResidualPublisher(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_residual_publisher")
        cls.folder = tempfile.mkdtemp(prefix="realeasy_rostest_")
        cls.limits = JointLimits.from_yaml()
        cls.names = cls.limits.joint_names
        cls.model_path = os.path.join(cls.folder, "realtime.pt")
        cls.model = make_model(cls.model_path)

    def samples(self, n, t0, rng):
        t = t0 + np.arange(n) / RATE
        phase = rng.uniform(0, 2 * np.pi, 7)
        q = self.limits.home + 0.3 * np.sin(2.0 * t[:, None] + phase)
        qd = 0.6 * np.cos(2.0 * t[:, None] + phase)
        tau = 5.0 * np.sin(1.5 * t[:, None] + phase)
        return t, q, qd, tau

    def test_node(self):
        listener = Listener()
        node = run_node("residual_publisher", self.model_path)
        try:
            self._check_running_node(listener)
            interrupted = time.monotonic()
            os.killpg(node.pid, signal.SIGINT)
            node.wait(timeout=30)
            # well inside roslaunch's 15 s between SIGINT and SIGTERM
            self.assertLess(time.monotonic() - interrupted, SHUTDOWN_SECONDS)
        finally:
            if node.poll() is None:
                os.killpg(node.pid, signal.SIGKILL)
        self._check_bad_models()

    def _check_running_node(self, listener):
        pub = rospy.Publisher("/sim/joint_states", JointState, queue_size=1000, tcp_nodelay=True)
        self.assertTrue(wait_for(lambda: pub.get_num_connections() > 0
                                 and listener.connected([REALISTIC, RESIDUAL]), 60),
            "residual_publisher and the test did not connect")
        self.assertTrue(wait_for(lambda: listener.latest(DIAGNOSTICS) is not None, 30))
        rng = np.random.default_rng(0)
        n = 400
        t, q, qd, tau = self.samples(n, 100.0, rng)
        # bad messages among the good ones (indices into the stream where they are inserted)
        bad = {50: "missing", 120: "length", 200: "nan", 260: "inf", 330: "fast"}
        reversed_names = list(reversed(self.names))
        period = 1.0 / RATE
        next_time = time.monotonic()
        for k in range(n):
            if k in bad:
                kind = bad[k]
                if kind == "missing":
                    msg = joint_state_message(t[k], self.names[:6], q[k][:6], qd[k][:6], tau[k][:6])
                elif kind == "length":
                    msg = joint_state_message(t[k], self.names, q[k], qd[k][:5], tau[k])
                elif kind == "fast":   # 3 times joint 4's velocity limit: beyond a measured state's
                    v = qd[k].copy()
                    v[3] = 3.0 * self.limits.velocity[3]
                    msg = joint_state_message(t[k], self.names, q[k], v, tau[k])
                else:
                    v = q[k].copy()
                    v[2] = np.nan if kind == "nan" else np.inf
                    msg = joint_state_message(t[k], self.names, v, qd[k], tau[k])
                pub.publish(msg)
                next_time += period
                time.sleep(max(0.0, next_time - time.monotonic()))
            # every 3rd good message lists the joints in reverse order: mapped by name
            if k % 3 == 0:
                msg = joint_state_message(t[k], reversed_names, q[k][::-1], qd[k][::-1], tau[k][::-1])
            else:
                msg = joint_state_message(t[k], self.names, q[k], qd[k], tau[k])
            pub.publish(msg)
            next_time += period
            time.sleep(max(0.0, next_time - time.monotonic()))
        self.assertTrue(wait_for(lambda: listener.corrected() == (n, n), 20),
                        f"expected {n} corrected messages, got {listener.corrected()}")
        with listener.lock:
            realistic = listener.messages(REALISTIC)
            residual = listener.messages(RESIDUAL)
        # one output per input, with the input's stamps, in order (no message lost, none added;
        # keeping up with the input's rate depends on the load: bench/node_latency.py measures
        # it, messages lost at 1 kHz and the latency)
        np.testing.assert_allclose([m.header.stamp.to_sec() for m in realistic], t, atol=1e-6)
        # values equal an offline stream over the valid samples: the bad ones did not touch the
        # hidden state
        offline = ResidualStream(self.model)
        for k in range(n):
            offline.process(t[k], self.names, q[k], qd[k], tau[k])
            got = np.concatenate([realistic[k].position, realistic[k].velocity,
                                  realistic[k].effort])
            res = np.concatenate([residual[k].position, residual[k].velocity, residual[k].effort])
            self.assertEqual(list(realistic[k].name), list(self.names))
            np.testing.assert_allclose(got, offline.corrected, rtol=0, atol=1e-9)
            np.testing.assert_allclose(res, offline.residual, rtol=0, atol=1e-9)
            if k < WARMUP:   # Algorithm 2: the simulator's state, unchanged
                np.testing.assert_array_equal(res, 0.0)
        self.assertGreater(np.abs(res).max(), 0.0)

        # a time jump backwards restarts the warm-up
        t2, q2, qd2, tau2 = self.samples(WARMUP + 3, 10.0, rng)
        for k in range(len(t2)):
            pub.publish(joint_state_message(t2[k], self.names, q2[k], qd2[k], tau2[k]))
            time.sleep(period)
        total = n + len(t2)
        self.assertTrue(wait_for(lambda: listener.corrected() == (total, total), 20))
        jumped = listener.messages(RESIDUAL)[n:]
        for k, msg in enumerate(jumped):
            values = np.concatenate([msg.position, msg.velocity, msg.effort])
            if k < WARMUP:
                np.testing.assert_array_equal(values, 0.0)
            else:
                self.assertGreater(np.abs(values).max(), 0.0)

        # ~reset restarts it too
        rospy.wait_for_service("/realeasy/residual_publisher/reset", timeout=10)
        answer = rospy.ServiceProxy("/realeasy/residual_publisher/reset", Trigger)()
        self.assertTrue(answer.success)
        pub.publish(joint_state_message(20.0, self.names, q2[0], qd2[0], tau2[0]))
        self.assertTrue(wait_for(lambda: listener.corrected()[1] == total + 1, 20))
        after_reset = listener.latest(RESIDUAL)
        np.testing.assert_array_equal(after_reset.effort, 0.0)

        # the statistics count the rejected messages and the resets; the guard's status counts
        # them per topic and reason
        time.sleep(1.5)
        status, checks = listener.latest(DIAGNOSTICS).status
        values = {kv.key: kv.value for kv in status.values}
        self.assertEqual(int(values["rejected"]), len(bad))
        self.assertEqual({kv.key: kv.value for kv in checks.values},
                         {"/sim/joint_states [malformed]": "1",
                          "/sim/joint_states [missing_joint]": "1",
                          "/sim/joint_states [non_finite]": "2",
                          "/sim/joint_states [bounds]": "1"})
        self.assertEqual(int(values["resets"]), 2)
        self.assertEqual(int(values["corrected"]) + int(values["warmup"]), total + 1)
        self.assertGreater(float(values["latency_p99_us"]), 0.0)

    def _check_bad_models(self):
        corrupt = os.path.join(self.folder, "corrupt.pt")
        with open(self.model_path, "rb") as f:
            data = f.read()
        with open(corrupt, "wb") as f:
            f.write(data[: len(data) // 2])
        precise = os.path.join(self.folder, "precise.pt")
        make_model(precise, ModelSpec(architecture="precise", hidden_size=8))
        other = os.path.join(self.folder, "other_joints.pt")
        make_model(other, names=[f"j{i}" for i in range(7)])
        cases = {"missing": (os.path.join(self.folder, "nope.pt"), "not found"),
                 "corrupt": (corrupt, "model file"),
                 "precise": (precise, "realtime"),
                 "joints": (other, "joints")}
        for i, (case, (path, expected)) in enumerate(cases.items()):
            startup = start_node("realeasy_ros", "residual_publisher", f"bad_model_{i}", node_args(path))
            with self.subTest(case=case):
                check_fails_at_start(startup, expected)


if __name__ == "__main__":
    rostest.rosrun("realeasy_ros", "residual_publisher", ResidualPublisher)
