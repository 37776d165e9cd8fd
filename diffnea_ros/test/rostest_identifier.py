#!/usr/bin/env python3
"""rostest: the identifier node (paper 002 §4.1.2 online identification) on synthetic iiwa joint
states whose torques come from our RNEA with the URDF's values, starting from perturbed ones."""
import os
import signal
import subprocess
import tempfile
import time
import unittest

import numpy as np
import pybullet_data
import rospy
import rostest
from sim2real_checks import (TopicRecorder, check_fails_at_start, joint_state_message as state_msg, start_node,
                             wait_for)
import torch
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState

from diffnea_ros.algorithms import rnea
from diffnea_ros.export import export_urdf
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.msg import IdentifiedParams
from diffnea_ros.srv import WriteUrdf
from diffnea_ros.urdf import load_robot

IIWA = os.path.join(pybullet_data.getDataPath(), "kuka_iiwa", "model.urdf")
RATE = 250.0
SECONDS = 10.0
SHUTDOWN_SECONDS = 5.0
PERIODS = np.array([23.0, 19.0, 17.0, 13.0, 11.0, 7.0, 5.0]) / 4.0
AMPLITUDES = 1.5 * np.array([0.7, 0.5, 0.5, 0.5, 0.65, 0.65, 0.7])


def perturbed_urdf(path, seed=0):
    """The iiwa URDF with masses, inertias (x 0.6..1.4) and CoMs (+- 2 cm) perturbed."""
    robot = load_robot(IIWA)
    rng = np.random.default_rng(seed)
    links = {b.name: (b.mass * rng.uniform(0.6, 1.4), b.com + rng.normal(0.0, 0.02, 3),
                      b.inertia * rng.uniform(0.6, 1.4)) for b in robot.bodies if b.mass > 0}
    with open(path, "w") as f:
        f.write(export_urdf(robot.urdf_text, links))


def trajectory(n, t0):
    """Stamps, q, qd and the true iiwa's torques of Table 1-like sines."""
    t = t0 + np.arange(n) / RATE
    w = 2.0 * np.pi / PERIODS
    q = AMPLITUDES * np.sin(w * t[:, None])
    qd = AMPLITUDES * w * np.cos(w * t[:, None])
    qdd = -AMPLITUDES * w ** 2 * np.sin(w * t[:, None])
    model = RigidBodyModel.from_urdf(IIWA)
    tau = rnea(model, *(torch.from_numpy(x) for x in (q, qd, qdd))).numpy()
    return t, q, qd, tau


def run_node(name, *params):
    return subprocess.Popen(["rosrun", "diffnea_ros", "identifier", f"__name:={name}", "__ns:=/diffnea",
                             *params],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


PARAMS, EFFORTS, DIAGNOSTICS = "/diffnea/identified_params", "/diffnea/predicted_effort", "/diagnostics"


def record_outputs():
    """The node's outputs and /diagnostics."""
    return TopicRecorder({PARAMS: IdentifiedParams, EFFORTS: JointState, DIAGNOSTICS: DiagnosticArray},
                         queue_sizes={PARAMS: 100, EFFORTS: 10000, DIAGNOSTICS: 10})


class Identifier(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_identifier")
        cls.folder = tempfile.mkdtemp(prefix="diffnea_rostest_")
        cls.start_urdf = os.path.join(cls.folder, "iiwa_perturbed.urdf")
        perturbed_urdf(cls.start_urdf)
        cls.names = load_robot(IIWA).joint_names

    def test_node(self):
        listener = record_outputs()
        node = run_node("identifier", f"_urdf:={self.start_urdf}", "_publish_rate:=4.0")
        try:
            self._check_running_node(listener, node)
            interrupted = time.monotonic()
            os.killpg(node.pid, signal.SIGINT)
            out, err = node.communicate(timeout=30)
            # the training thread does not hold the shutdown: well inside roslaunch's 15 s
            # between SIGINT and SIGTERM
            self.assertLess(time.monotonic() - interrupted, SHUTDOWN_SECONDS)
        finally:
            if node.poll() is None:
                os.killpg(node.pid, signal.SIGKILL)
        # each bad message was reported (one line per reason and second; they are 1.6 s apart)
        # with its reason
        for line in ("[missing_joint]: missing joint(s) lbr_iiwa_joint_7",
                     "[malformed]: velocity has 5 values for 7",
                     "[non_finite]: NaN/Inf in effort of lbr_iiwa_joint_4"):
            self.assertIn(f"/diffnea/identifier: /real/joint_states: rejected {line}", err)
        self.assertEqual(err.count("rejected ["), 4, err)
        # ~limits: the iiwa's, loaded by identifier.test (<rosparam>): every joint is bounded
        self.assertIn("identifying joints ['lbr_iiwa_joint_1'", out)
        self.assertNotIn("no limits for", out)
        self.assertNotIn("deprecated", err)
        self._check_bad_start()

    def _check_running_node(self, listener, node):
        pub = rospy.Publisher("/real/joint_states", JointState, queue_size=1000, tcp_nodelay=True)
        self.assertTrue(wait_for(lambda: pub.get_num_connections() > 0
                                 and listener.connected([PARAMS, EFFORTS]), 60),
            "identifier and the test did not connect")
        n = int(SECONDS * RATE)
        t, q, qd, tau = trajectory(n, 100.0)
        names = list(self.names)
        bad = {300: "missing", 700: "length", 1100: "nan", 1500: "inf"}
        period = 1.0 / RATE
        next_time = time.monotonic()
        for k in range(n):
            if k in bad:
                kind = bad[k]
                if kind == "missing":
                    msg = state_msg(t[k] - 0.5 * period, names[:6], q[k][:6], qd[k][:6], tau[k][:6])
                elif kind == "length":
                    msg = state_msg(t[k] - 0.5 * period, names, q[k], qd[k][:5], tau[k])
                else:
                    v = tau[k].copy()
                    v[3] = np.nan if kind == "nan" else np.inf
                    msg = state_msg(t[k] - 0.5 * period, names, q[k], qd[k], v)
                pub.publish(msg)
            if k % 5 == 0:   # joints in another order, plus one the URDF does not have: by name
                msg = state_msg(t[k], ["gripper", *reversed(names)], [0.0, *q[k][::-1]],
                                [0.0, *qd[k][::-1]], [0.0, *tau[k][::-1]])
            else:
                msg = state_msg(t[k], names, q[k], qd[k], tau[k])
            pub.publish(msg)
            next_time += period
            time.sleep(max(0.0, next_time - time.monotonic()))
        self.assertTrue(wait_for(lambda: listener.count(EFFORTS) == n, 20),
                        f"expected {n} predicted efforts, got {listener.count(EFFORTS)}")
        # predicted_effort: one per good message, in order, with its stamp and the joint names
        efforts = listener.messages(EFFORTS)
        np.testing.assert_allclose([m.header.stamp.to_sec() for m in efforts], t, rtol=0, atol=1e-6)
        for msg in efforts:
            self.assertEqual(list(msg.name), names)
            self.assertEqual(len(msg.effort), 7)
        predicted = np.array([m.effort for m in efforts])
        self.assertTrue(np.isfinite(predicted).all())
        late = slice(n // 2, None)   # the estimate and the causal accelerations have settled
        nmse = np.mean((predicted[late] - tau[late]) ** 2, axis=0) / tau[late].var(axis=0)
        self.assertLess(nmse.mean(), 0.05, nmse)

        # identified_params: the learnable links, consistent (cov), learning under way; the
        # first one published after the last sample has all the samples
        count = listener.count(PARAMS)
        self.assertTrue(wait_for(lambda: listener.count(PARAMS) > max(count, 2), 10))
        params = listener.messages(PARAMS)
        last = params[-1]
        self.assertEqual(last.parametrisation, "cov")
        self.assertEqual(list(last.joint_names), names)
        self.assertEqual([link.name for link in last.links],
                         [f"lbr_iiwa_link_{i}" for i in range(1, 8)])
        self.assertTrue(last.consistent)
        self.assertTrue(all(link.mass_positive and link.inertia_positive_definite
                            and link.triangle_inequality for link in last.links))
        self.assertEqual(len(last.damping), 7)
        self.assertTrue(np.isfinite(last.damping).all() and np.all(np.asarray(last.damping) > 0))
        self.assertGreater(last.updates, 10)
        self.assertGreater(last.samples, n - 200)
        first = next(p for p in params if len(p.nmse) == 7)
        self.assertLess(np.mean(last.nmse), 0.5 * np.mean(first.nmse),
                        (list(first.nmse), list(last.nmse)))
        self.assertTrue(all(p.header.stamp.to_sec() > 0 for p in params))
        # the diagnostics count the dropped messages; nothing was skipped or failed
        self.assertTrue(wait_for(lambda: listener.count(DIAGNOSTICS) > 0, 5))
        time.sleep(1.1)
        status, checks = listener.latest(DIAGNOSTICS).status
        values = {kv.key: kv.value for kv in status.values}
        self.assertEqual(int(values["rejected"]), len(bad))
        self.assertEqual({kv.key: kv.value for kv in checks.values},
                         {"/real/joint_states [missing_joint]": "1",
                          "/real/joint_states [malformed]": "1",
                          "/real/joint_states [non_finite]": "2"})
        self.assertEqual(int(values["received"]), n + len(bad))
        self.assertEqual(int(values["skipped_updates"]), 0)
        self.assertEqual(int(values["thread_errors"]), 0)

        # ~write_urdf: a URDF that load_robot parses (and its YAML); a bad path is refused
        rospy.wait_for_service("/diffnea/identifier/write_urdf", timeout=10)
        write = rospy.ServiceProxy("/diffnea/identifier/write_urdf", WriteUrdf)
        target = os.path.join(self.folder, "iiwa_identified.urdf")
        answer = write(target)
        self.assertTrue(answer.success, answer.message)
        self.assertIn(target, answer.message)
        written = load_robot(target)
        self.assertEqual(written.joint_names, self.names)
        self.assertNotEqual([b.mass for b in written.bodies], [b.mass for b in load_robot(self.start_urdf).bodies])
        self.assertTrue(os.path.isfile(os.path.join(self.folder, "iiwa_identified.yaml")))
        answer = write(os.path.join(self.folder, "missing_dir", "x.urdf"))
        self.assertFalse(answer.success)
        self.assertIn("does not exist", answer.message)
        answer = write("")
        self.assertFalse(answer.success)
        self.assertIn(".urdf", answer.message)
        self.assertIsNone(node.poll(), "the node stopped after a bad service request")
        count = listener.count(PARAMS)
        self.assertTrue(wait_for(lambda: listener.count(PARAMS) > count, 5),
                        "no identified_params after the bad requests")

    def _check_bad_start(self):
        malformed = os.path.join(self.folder, "malformed.urdf")
        with open(malformed, "w") as f:
            f.write("<robot name='x'><link name='a'>")
        cases = {"missing": ([f"_urdf:={os.path.join(self.folder, 'nope.urdf')}"], "not found"),
                 "malformed": ([f"_urdf:={malformed}"], "not valid XML"),
                 "unset": ([], "~urdf"),
                 "parametrisation": ([f"_urdf:={IIWA}", "_parametrisation:=chol"],
                                     "unknown parametrisation"),
                 "limits": ([f"_urdf:={IIWA}"],
                            "~limits: joint limits parameter /diffnea/bad_start_4/limits: "
                            "'velocity' needs 7 finite numbers")}
        limits = rospy.get_param("/diffnea/identifier/limits")
        rospy.set_param("/diffnea/bad_start_4/limits", dict(limits, velocity=[10.0] * 6))
        for i, (case, (params, expected)) in enumerate(cases.items()):
            startup = start_node("diffnea_ros", "identifier", f"bad_start_{i}", ["__ns:=/diffnea", *params])
            with self.subTest(case=case):
                check_fails_at_start(startup, expected)


if __name__ == "__main__":
    rostest.rosrun("diffnea_ros", "identifier", Identifier)
