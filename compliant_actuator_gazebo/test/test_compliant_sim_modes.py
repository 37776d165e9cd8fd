#!/usr/bin/env python3
"""rostest (test/compliant_sim_modes.test): compliant_sim with joint_m<m> in operation mode m.

Each pendulum (0.2 kg at 0.04 m, q = 0 hanging down, qbMove Advanced with the sheet's
parameters) is driven through its mode's topics (paper 003 §3.1) and must come to rest where the
torque balance says, computed here independently of the core:
  mode 0  torque_command tau:            tau = m g l sin q
  mode 1  link_command r (PID, P = 0.8): 0.8 (r - q) = m g l sin q
  2, 5    reference_1/2 = eq +- p;  3, 6 equilibrium_position eq, stiffness_preset p:
          -k sinh(a (q - eq - p)) - k sinh(a (q - eq + p)) = m g l sin q
  mode 4  motor_1/2_command > 0 turn both motors forward: the link follows.
Then external_torque deflects joint_m3 by tau / (stiffness + m g l cos q), NaN/Inf inputs are
rejected (error on /rosout naming joint and topic, the joint holds, the node keeps publishing,
a later valid value is taken), and an out-of-domain preset is clamped with a warning. Bad
parameters stop a second compliant_sim at start-up with one [FATAL] line and exit status 1.
Needs the master of rostest, so pytest does not collect it (`__test__ = False`).
"""
import math
import sys
import time
import unittest

import rospy
import rostest
from sim2real_checks import TopicRecorder, check_fails_at_start, start_node, wait_for
from rosgraph_msgs.msg import Log
from std_msgs.msg import Float64

from compliant_actuator_gazebo.msg import LinkState

ROBOT = "modes"
JOINTS = [f"joint_m{m}" for m in range(7)]
MGL = 0.2 * 9.81 * 0.04
K, A = 0.0019, 8.9992          # qbMove Advanced defaults (reference sheet)
PRESET = 0.6                    # initial stiffness preset of joint_m3 and joint_m6 (.test file)
TOL = 0.01                      # [rad] static positions (exact at rest; settled >= 10 time constants)


def bisect(f, lo, hi):
    """Root of a decreasing f on [lo, hi]."""
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) > 0.0 else (lo, mid)
    return 0.5 * (lo + hi)


def spring_rest(eq, preset):
    return bisect(lambda q: -K * math.sinh(A * (q - eq - preset))
                  - K * math.sinh(A * (q - eq + preset)) - MGL * math.sin(q), -1.5, 1.5)


EXPECTED = {
    "joint_m0": math.asin(0.05 / MGL),
    "joint_m1": bisect(lambda q: 0.8 * (0.5 - q) - MGL * math.sin(q), -1.5, 1.5),
    "joint_m2": spring_rest(0.5, PRESET),
    "joint_m3": spring_rest(0.5, PRESET),
    "joint_m5": spring_rest(0.5, PRESET),
    "joint_m6": spring_rest(0.5, PRESET),
}


class Listener:
    """Latest LinkState per joint and the log, thread-safe. The log is /rosout, which every
    node publishes (rostest starts no rosout node, so /rosout_agg stays empty)."""

    def __init__(self):
        self.link_states = TopicRecorder({state_topic(j): LinkState for j in JOINTS}, queue_size=10,
                                         keep=1)
        self.log = TopicRecorder({"/rosout": Log}, queue_size=100)

    @property
    def logs(self):
        return self.log.messages("/rosout")

    def q(self, joint):
        return self.state(joint).position

    def state(self, joint):
        return self.link_states.latest(state_topic(joint))

    def count(self, joint):
        return self.link_states.count(state_topic(joint))

    def log_with(self, level, *words):
        return [m.msg for m in self.logs
                if m.level == level and all(w in m.msg for w in words)]


def state_topic(joint):
    return f"/{ROBOT}/{joint}/link_state"


class TestCompliantSimModes(unittest.TestCase):
    __test__ = False     # rostest runs this (rostest.rosrun below); pytest must not collect it

    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_compliant_sim_modes")
        cls.listener = Listener()
        inputs = ("torque_command", "link_command", "reference_1", "reference_2",
                  "equilibrium_position", "stiffness_preset", "motor_1_command",
                  "motor_2_command", "external_torque")
        cls.pubs = {(j, i): rospy.Publisher(f"/{ROBOT}/{j}/{i}", Float64, queue_size=10,
                                            latch=True) for j in JOINTS for i in inputs}
        ok = wait_for(lambda: all(cls.listener.count(j) > 0 for j in JOINTS), 30.0)
        assert ok, "compliant_sim published no link_state for some joints within 30 s"
        # wait until the node is subscribed to every input we will use
        ok = wait_for(lambda: all(p.get_num_connections() > 0 for p in cls.pubs.values()), 20.0)
        assert ok, "compliant_sim did not subscribe all per-joint inputs within 20 s"

    def send(self, joint, name, value):
        self.pubs[(joint, name)].publish(Float64(value))

    def assert_rest(self, joint, expected, tol=TOL, timeout=8.0):
        wait_for(lambda: abs(self.listener.q(joint) - expected) < tol
                 and abs(self.listener.state(joint).velocity) < 0.01, timeout)
        q = self.listener.q(joint)
        self.assertLess(abs(q - expected), tol, f"{joint}: q = {q:.4f}, expected {expected:.4f}")

    def test_modes(self):
        """Every mode's topics move its joint where the torque balance says (one run, in order:
        the checks after the mode responses reuse the settled joints)."""
        start_m4 = self.listener.q("joint_m4")
        self.send("joint_m0", "torque_command", 0.05)
        self.send("joint_m1", "link_command", 0.5)
        for joint in ("joint_m2", "joint_m5"):
            self.send(joint, "reference_1", 0.5 + PRESET)
            self.send(joint, "reference_2", 0.5 - PRESET)
        for joint in ("joint_m3", "joint_m6"):
            self.send(joint, "equilibrium_position", 0.5)
        self.send("joint_m4", "motor_1_command", 0.3)
        self.send("joint_m4", "motor_2_command", 0.3)

        moved = wait_for(lambda: self.listener.q("joint_m4") > start_m4 + 0.2, 8.0)
        self.send("joint_m4", "motor_1_command", 0.0)
        self.send("joint_m4", "motor_2_command", 0.0)
        self.assertTrue(moved, f"joint_m4 (mode 4): motor torques 0.3 N m did not turn the link "
                               f"(q = {self.listener.q('joint_m4'):.3f}, from {start_m4:.3f})")
        for joint, expected in EXPECTED.items():
            self.assert_rest(joint, expected)

        self.check_external_torque()
        self.check_bad_values()
        self.check_clamped_preset()

    def check_external_torque(self):
        """external_torque tau deflects joint_m3 by tau / (stiffness + m g l cos q)."""
        before = self.listener.state("joint_m3")
        tau = 0.05
        expected = tau / (before.stiffness + MGL * math.cos(before.position))
        self.send("joint_m3", "external_torque", tau)
        self.assert_rest("joint_m3", before.position + expected, tol=0.1 * expected)
        self.send("joint_m3", "external_torque", 0.0)
        self.assert_rest("joint_m3", EXPECTED["joint_m3"])

    def check_bad_values(self):
        """NaN/Inf are rejected with an error naming joint and topic; the node keeps running."""
        count = self.listener.count("joint_m3")
        self.send("joint_m3", "equilibrium_position", float("nan"))
        self.send("joint_m0", "torque_command", float("inf"))
        ok = wait_for(lambda: self.listener.log_with(Log.ERROR, "joint_m3", "equilibrium_position")
                      and self.listener.log_with(Log.ERROR, "joint_m0", "torque_command"), 10.0)
        self.assertTrue(ok, f"no error on /rosout naming the joint and topic of a NaN/Inf input "
                            f"(log: {[(m.level, m.name, m.msg) for m in self.listener.logs]})")
        time.sleep(0.5)
        self.assertGreater(self.listener.count("joint_m3"), count + 20, "the node stopped publishing")
        self.assert_rest("joint_m3", EXPECTED["joint_m3"])
        self.assert_rest("joint_m0", EXPECTED["joint_m0"])
        for joint in JOINTS:
            s = self.listener.state(joint)
            for field in ("position", "velocity", "effort", "stiffness"):
                self.assertTrue(math.isfinite(getattr(s, field)), f"{joint}: {field} not finite")
        self.send("joint_m3", "equilibrium_position", 0.2)      # a valid value is taken again
        self.assert_rest("joint_m3", spring_rest(0.2, PRESET))

    def check_clamped_preset(self):
        """A qbMove preset beyond its domain [0, max_deflection = 0.8] is clamped and warned."""
        self.send("joint_m3", "stiffness_preset", 1.5)
        ok = wait_for(lambda: self.listener.log_with(Log.WARN, "joint_m3", "clamped"), 10.0)
        self.assertTrue(ok, "no warning on /rosout for a clamped stiffness preset")
        ok = wait_for(lambda: abs(self.listener.state("joint_m3").reference_1
                                  - self.listener.state("joint_m3").reference_2 - 1.6) < 1e-9, 5.0)
        s = self.listener.state("joint_m3")
        self.assertTrue(ok, f"references {s.reference_1}, {s.reference_2}: preset not 0.8")
        time.sleep(1.0)
        s = self.listener.state("joint_m3")
        self.assertTrue(math.isfinite(s.position) and abs(s.position - 0.2) < 0.3, s)

    def test_startup_errors_are_one_fatal_line(self):
        """A bad parameter or description: one [FATAL] line naming it, exit status 1."""
        cases = [(["_physics_rate:=0"], "~physics_rate must be a finite number > 0"),
                 (["_initial_positions:={nope: 0.1}"], "~initial_positions: unknown or fixed joints"),
                 (["_initial_inputs:={joint_m3: 0.2}"], "~initial_inputs[joint_m3] must be a mapping"),
                 (["_initial_inputs:={joint_m3: {preset: 0.2}}"], "unknown inputs ['preset']"),
                 (["_robot_description:=<robot"], "robot description: not well-formed XML")]
        for i, (args, expected) in enumerate(cases):
            with self.subTest(args=args):
                check_fails_at_start(start_node("compliant_actuator_gazebo", "compliant_sim", f"bad_sim_{i}",
                                                args), expected, f"bad_sim_{i}")


if __name__ == "__main__":
    rostest.rosrun("compliant_actuator_gazebo", "test_compliant_sim_modes", TestCompliantSimModes,
                   sys.argv)
