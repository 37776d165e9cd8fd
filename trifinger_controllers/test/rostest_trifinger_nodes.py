#!/usr/bin/env python3
"""rostest (simulation): trifinger_sim with each controller node.

1. cpc/cic/mp_controller against the lock-stepped simulator: every step answered, torques
   within +-0.397 N m, a new torque exactly once per period of the controller's rate on the
   simulated clock (held in between), as many computations as periods; each camera image's
   tracker report published once (ObjectPose, confidence in [0, 1]);
2. lock step: a second run with the same seed gives bit-identical joint states and commands, and
   the run is the in-process evaluation's episode of that seed (the same tracker model, physics
   randomisation and pose filter), bit for bit;
3. free running (half real time): CPC's commands at 200 Hz on the simulated clock; /clock;
4. bad input: malformed commands are dropped and the simulator runs on with the last valid one
   (counted per topic and reason on /diagnostics), so are object poses with a bad pose or
   confidence; bad parameters stop a node with one [FATAL]
   line and exit status 1; SIGINT stops the simulator and a controller (exit 0) well within
   roslaunch's 15 s before it escalates.
The nodes are started by this script (rosrun, fresh parameters each time) so that it can run
several configurations in one master. Not collected by pytest (file name)."""
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import numpy as np
import rospy
import rostest
from sim2real_checks import StartUp, TopicRecorder, check_fails_at_start, wait_for
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from trifinger_controllers import message_checks as mc
from trifinger_controllers import ros_conversions as rc
from trifinger_controllers.msg import ObjectPose
from trifinger_controllers.types import TORQUE_LIMIT, CubePose, RobotState

NS = "/trifinger"
PROBE = "/probe"           # namespace of a controller fed by the test itself
RATES = {"cpc": 200.0, "cic": 100.0, "mp": 500.0}
RATE_WINDOW = 1.5          # simulated s over which the rate is measured
LOCK_STEP_SECONDS = 0.6    # simulated s of each lock-step run
LOCK_STEP_SEED = 5
SHUTDOWN_LIMIT = 10.0      # wall s from SIGINT to exit (roslaunch escalates to SIGTERM at 15 s)
GUARD = "input and output checks"   # name suffix of a node's sim2real_checks status


class Node:
    """A node started with rosrun in namespace ``ns`` with fresh private parameters; its output
    goes to a file."""

    def __init__(self, folder, node_type, name, ns=NS, **params):
        if rospy.has_param(f"{ns}/{name}"):      # parameters of an earlier run of this name
            rospy.delete_param(f"{ns}/{name}")
        self.log_path = os.path.join(folder, f"{name}_{time.monotonic_ns()}.log")
        args = [f"_{k}:={v}" for k, v in params.items()]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["rosrun", "trifinger_controllers", node_type, f"__name:={name}", f"__ns:={ns}", *args],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        """SIGINT (SIGKILL after 15 s); the exit status. ``stop_seconds``: how long it took."""
        self.stop_seconds = 0.0
        if self.proc.poll() is None:
            start = time.monotonic()
            os.killpg(self.proc.pid, signal.SIGINT)
            code = self.wait(15)
            self.stop_seconds = time.monotonic() - start
            if code is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


STATES, COMMANDS, POSES = f"{NS}/joint_states", f"{NS}/torque_command", f"{NS}/object_pose"
RESULTS, DIAGNOSTICS, CLOCK = f"{NS}/episode_result", "/diagnostics", "/clock"


class Recorder(TopicRecorder):
    """Joint states and torque commands by step, object poses, episode results, diagnostics,
    /clock."""

    def __init__(self):
        self.states = {}        # the first joint state of each step
        super().__init__({STATES: JointState, COMMANDS: JointState, POSES: ObjectPose, RESULTS: String,
                          DIAGNOSTICS: DiagnosticArray, CLOCK: Clock},
                         queue_sizes={STATES: 5000, COMMANDS: 5000, POSES: 100, RESULTS: 5,
                                      DIAGNOSTICS: 50, CLOCK: 5000})

    def record(self, msg, topic):
        with self.lock:
            super().record(msg, topic)
            if topic == STATES:
                self.states.setdefault(rc.step_of(msg.header.stamp), msg)

    def clear(self, *topics):
        with self.lock:
            super().clear(*topics)
            if not topics or STATES in topics:
                self.states = {}

    @property
    def commands(self):
        return self.messages(COMMANDS)

    @property
    def poses(self):
        return self.messages(POSES)

    @property
    def results(self):
        return [json.loads(msg.data) for msg in self.messages(RESULTS)]

    @property
    def diagnostics(self):
        """(arrival, DiagnosticStatus) of every status received."""
        return [(t, status) for t, msg in self.received(DIAGNOSTICS) for status in msg.status]

    @property
    def clock(self):
        return [msg.clock.to_nsec() for msg in self.messages(CLOCK)]

    def latest_step(self):
        with self.lock:
            return max(self.states) if self.states else -1


class TrifingerNodes(unittest.TestCase):
    __test__ = False  # run by rostest (rosunit), never by pytest

    @classmethod
    def setUpClass(cls):
        rospy.init_node("test_trifinger_nodes")
        cls.folder = tempfile.mkdtemp(prefix="trifinger_rostest_")
        cls.rec = Recorder()
        cls.nodes = []
        cls.runs = {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def start(self, node_type, name, **params):
        node = Node(self.folder, node_type, name, **params)
        self.nodes.append(node)
        return node

    def tearDown(self):
        for node in self.nodes:
            node.stop()
        self.nodes.clear()

    # ------------------------------------------------------------------ 1: each controller
    def _lock_step_run(self, name):
        """One lock-step episode of LOCK_STEP_SECONDS with controller ``name``: joint states and
        commands by step, the episode result, the controller's last diagnostics, the object
        poses."""
        rec = self.rec
        rec.clear()
        sim = self.start("trifinger_sim", "trifinger_sim", level=3, seed=LOCK_STEP_SEED,
                         lock_step="true",
                         real_time_factor=0, episode_seconds=LOCK_STEP_SECONDS,
                         publish_clock="false")
        # the simulator republishes step 0 until a controller answers: start the controller only
        # once the recorder has it (a controller connecting first could take step 0 unrecorded)
        self.assertTrue(wait_for(lambda: 0 in rec.states, 30),
                        f"{name}: no step-0 joint state\n{sim.output()[-2000:]}")
        ctrl = self.start(f"{name}_controller", f"{name}_controller", level=3)
        self.assertTrue(wait_for(lambda: len(rec.results) > 0, 90),
                        f"{name}: no episode result\n{sim.output()[-2000:]}\n"
                        f"{ctrl.output()[-2000:]}")
        self.assertEqual(sim.wait(15), 0, sim.output()[-2000:])
        # the controller's statistics of the whole run (published once a wall second)
        done = time.monotonic()
        node = f"{NS}/{name}_controller"
        self.assertTrue(wait_for(lambda: any(t > done for t, _ in self._status(node)), 5))
        with rec.lock:
            states, commands, result = dict(rec.states), list(rec.commands), rec.results[0]
            poses = list(rec.poses)
        status = self._status(node)[-1][1]
        self.assertIsNone(ctrl.proc.poll(), ctrl.output()[-2000:])
        self.tearDown()
        by_step = {}
        for m in commands:
            self.assertEqual(list(m.name), list(rc.JOINT_NAMES))
            by_step.setdefault(rc.step_of(m.header.stamp), mc.torque_from_msg(m))
        return states, by_step, result, {kv.key: kv.value for kv in status.values}, poses

    def _status(self, node, guard=False):
        """(arrival, DiagnosticStatus) of the node ``node`` (full name): its own statuses, or
        with ``guard`` its input and output checks."""
        with self.rec.lock:
            return [(t, s) for t, s in self.rec.diagnostics if s.name.startswith(f"{node}:")
                    and s.name.endswith(GUARD) == guard]

    def test_1_controllers_publish_limited_torques_at_their_rate(self):
        """Each controller in lock step: every step answered, torques within the limit, a new
        torque exactly every 1000/rate_hz simulated ms (held in between) and as many computations
        as periods elapsed (the rate on the simulated clock, independent of the machine's load)."""
        n = int(LOCK_STEP_SECONDS * 1000)
        # a plain loop, not subTest: rosunit's XML result ignores subtest failures (a failing
        # controller was reported as passed)
        for name, rate in RATES.items():
            states, commands, result, values, poses = self._lock_step_run(name)
            type(self).runs[name] = (states, commands, result, values)
            period = int(round(1000 / rate))
            self.assertEqual(sorted(states), list(range(n + 1)), f"{name}: missing joint states")
            self.assertTrue(set(range(n)) <= set(commands), f"{name}: unanswered steps")
            efforts = np.array([commands[s] for s in range(n)])
            self.assertTrue(np.all(np.abs(efforts) <= TORQUE_LIMIT + 1e-12),
                            f"{name}: |torque| up to {np.abs(efforts).max()}")
            self.assertGreater(np.abs(efforts).max(), 1e-3, f"{name}: only zero torques")
            for step in range(n):
                np.testing.assert_array_equal(commands[step], commands[step - step % period],
                                              f"{name}: new torque off-period at {step}")
            calls = int(values["calls"])
            self.assertIn(calls, (n // period, n // period + 1), f"{name}: {values}")
            self.assertEqual(float(values["rate_sim_hz"]), rate, f"{name}: {values}")
            self.assertEqual(int(values["errors"]), 0, f"{name}: {values}")
            # each image's tracker report once (10 Hz), with a confidence in [0, 1]
            stamps = [rc.step_of(m.header.stamp) for m in poses]
            self.assertEqual(stamps, list(range(0, n, 100)), f"{name}: object pose stamps")
            self.assertTrue(all(0.0 <= m.confidence <= 1.0 for m in poses), name)
            self.assertGreater(int(values["pose_reports"]), 0, f"{name}: {values}")
            rospy.loginfo("%s: %d calls in %.1f simulated s (%.0f Hz), max |torque| %.3f, "
                          "compute median %s us, p99 %s us, reset %s ms", name, calls,
                          LOCK_STEP_SECONDS, float(values["rate_sim_hz"]),
                          np.abs(efforts).max(), values["compute_median_us"],
                          values["compute_p99_us"], values["reset_ms"])

    # ------------------------------------------------------------------ 2: lock step
    def test_2_lock_step_is_deterministic(self):
        """A second lock-step run with the same seed repeats the first bit for bit, and both are
        evaluation.run_episode's episode of that seed: the node's defaults (~camera tracker,
        ~physics randomised) are evaluate's, and the controller node filters the tracker's reports
        as run_episode does."""
        first = type(self).runs.get("cpc")
        states_a, commands_a, result_a, values_a = first if first else self._lock_step_run("cpc")[:4]
        states_b, commands_b, result_b, _, _ = self._lock_step_run("cpc")
        n = int(LOCK_STEP_SECONDS * 1000)
        self.assertEqual(sorted(states_b), list(range(n + 1)))
        for step in range(n + 1):
            a, b = states_a[step], states_b[step]
            self.assertEqual(a.header.frame_id, b.header.frame_id, step)
            for field in ("position", "velocity", "effort"):
                self.assertEqual(list(getattr(a, field)), list(getattr(b, field)),
                                 f"{field} differs at step {step}")
        for step in range(n):
            np.testing.assert_array_equal(commands_a[step], commands_b[step])
        self.assertGreater(np.abs(np.array(states_a[n].position) -
                                  np.array(states_a[0].position)).max(), 1e-3)
        for key in ("label", "level", "reward", "cumulative_reward", "position_error_cm",
                    "orientation_error_deg", "drop", "sim_seconds", "goal", "initial", "final",
                    "tracked_position_error_cm", "tracked_orientation_error_deg", "tracker",
                    "physics", "sim_options"):
            self.assertIn(key, result_a)
            self.assertEqual(result_a[key], result_b[key], key)
        self.assertEqual(result_a["label"], "simulation")
        self.assertAlmostEqual(result_a["sim_seconds"], LOCK_STEP_SECONDS)
        # and it is the in-process evaluation's episode (trial 0 of the seed), bit for bit
        from trifinger_controllers import evaluation
        from trifinger_controllers.controllers import make_controller
        from trifinger_controllers.kinematics import FingerKinematics
        from trifinger_controllers.physics import PhysicsSample
        from trifinger_controllers.platform import SimulatedPlatform
        from trifinger_controllers.sim_node import CONTROLLER_FIELDS
        from trifinger_controllers.sim_options import SimOptions
        options = SimOptions.named()          # evaluate's and trifinger_sim's defaults
        self.assertEqual(result_a["sim_options"], options.describe())
        goal, initial, platform_seed = evaluation.episode_specs(3, 1, LOCK_STEP_SEED)[0]
        platform = SimulatedPlatform(seed=platform_seed, perception=options.perception,
                                     physics=options.physics)
        kinematics = FingerKinematics()
        record = evaluation.run_episode(platform, make_controller("cpc", None, None, kinematics),
                                        3, goal, initial, LOCK_STEP_SECONDS, kinematics=kinematics)
        robot = platform.robot_state()
        platform.close()
        self.assertEqual(list(states_a[n].position), robot.position.tolist())
        self.assertEqual(list(states_a[n].velocity), robot.velocity.tolist())
        # the node's record has every field of the in-process one except the controller's own
        expected = record.to_dict()
        self.assertEqual(set(expected) - set(CONTROLLER_FIELDS) - set(result_a), set())
        for key in set(expected) - set(CONTROLLER_FIELDS) - {"wall_seconds"}:
            self.assertEqual(result_a[key], expected[key], key)
        self.assertNotEqual(result_a["physics"], PhysicsSample().to_dict(), "nominal physics")
        # the controller node's pose filter saw what run_episode's did (the last image, taken at
        # 0.5 s, arrives at 0.591 s, before CPC's last computation at 0.595 s)
        self.assertEqual({k: int(values_a[f"pose_{k}"]) for k in record.pose_filter},
                         record.pose_filter)

    # ------------------------------------------------------------------ 3: free running
    def test_3_free_running_rate(self):
        """CPC against the free-running simulator (half real time): commands at 200 Hz on the
        simulated clock, within the limit; /clock follows the joint states."""
        rec = self.rec
        rec.clear()
        sim = self.start("trifinger_sim", "trifinger_sim", level=3, seed=2, lock_step="false",
                         real_time_factor=0.5, episode_seconds=0, publish_clock="true")
        ctrl = self.start("cpc_controller", "cpc_controller", level=3)
        self.assertTrue(wait_for(lambda: len(rec.commands) > 0, 60),
                        f"no torque command\n{ctrl.output()[-2000:]}")
        with rec.lock:
            first = rc.step_of(rec.commands[0].header.stamp)
        window = int(RATE_WINDOW * 1000)
        self.assertTrue(wait_for(lambda: rec.latest_step() > first + window + 50, 60))
        with rec.lock:
            commands, clock, states = list(rec.commands), list(rec.clock), dict(rec.states)
        self.assertIsNone(sim.proc.poll(), sim.output()[-2000:])
        steps = np.array([rc.step_of(m.header.stamp) for m in commands])
        self.assertEqual(len(set(steps)), len(steps), "a state was answered twice")
        efforts = np.array([mc.torque_from_msg(m) for m in commands])
        self.assertTrue(np.all(np.abs(efforts) <= TORQUE_LIMIT + 1e-12))
        in_window = steps[(steps >= first) & (steps < first + window)]
        measured = len(in_window) / RATE_WINDOW
        # at most one computation per period; a loaded machine may skip a few periods
        self.assertEqual(len(set(in_window // 5)), len(in_window), "two computations in a period")
        self.assertGreater(measured, 0.8 * RATES["cpc"])
        self.assertEqual(int(np.median(np.diff(in_window))), 5)
        published = {m.header.stamp.to_nsec() for m in states.values()}
        # the recorder's /clock and joint_states connections to the new simulator come up one
        # after the other: compare from the first joint state the recorder received
        first_state, last = min(states) * 1_000_000, max(states) * 1_000_000
        self.assertGreater(len(clock), 100)
        self.assertTrue({c for c in clock if first_state <= c <= last} <= published)
        rospy.loginfo("free running: cpc at %.1f Hz on the simulated clock", measured)

    # ------------------------------------------------------------------ 4: bad input
    def test_4_bad_input(self):
        # bad parameters: one [FATAL] line, exit 1 (started together; they fail at start-up)
        unknown_key = os.path.join(self.folder, "unknown_key.yaml")
        with open(unknown_key, "w") as f:
            f.write("nonsense: 1.0\n")
        fatal_cases = {
            "goal": (("trifinger_sim", "bad_goal_sim"),
                     dict(goal="[0.5,0.0,0.05]", level=3), "outside the workspace"),
            "level": (("trifinger_sim", "bad_level_sim"), dict(level=7), "level"),
            "camera": (("trifinger_sim", "bad_camera_sim"), dict(camera=unknown_key),
                       "unknown perception parameter 'nonsense'"),
            "physics": (("trifinger_sim", "bad_physics_sim"), dict(physics="heavy"),
                        "heavy: cannot read the physics randomisation"),
            "residual": (("cpc_controller", "bad_residual_cpc"),
                         dict(residual="/nonexistent/policy.pt"), "not found"),
            "params": (("cic_controller", "bad_params_cic"),
                       dict(params="/nonexistent/params.yaml"), "not found"),
            "params_key": (("mp_controller", "bad_key_mp"), dict(params=unknown_key), "nonsense"),
            # ~params as the mapping a launch file loads (<rosparam ns="params">)
            "params_mapping": (("cpc_controller", "bad_mapping_cpc"), dict(params="{kp: 100}"),
                               f"parameter {NS}/bad_mapping_cpc/params: parameter kp: 100 outside"),
            "grasp": (("cpc_controller", "bad_grasp_cpc"), dict(grasp="xg"), "unknown grasp"),
            "align": (("cic_controller", "bad_align_cic"), dict(align="maybe"), "~align must be true or false"),
        }
        failing = {case: (Node(self.folder, *names, **params), expected)
                   for case, (names, params, expected) in fatal_cases.items()}
        self.nodes.extend(node for node, _ in failing.values())
        # a controller in its own namespace, fed by this test only
        probe = Node(self.folder, "cpc_controller", "cpc_controller", ns=PROBE, level=3)
        self.nodes.append(probe)

        rec = self.rec
        rec.clear()
        # a command timeout beyond the test: the last valid command stays applied (the hold after
        # a timeout is command_timeout.test's)
        sim = self.start("trifinger_sim", "trifinger_sim", level=3, seed=0, lock_step="false",
                         real_time_factor=1.0, episode_seconds=0, publish_clock="false",
                         command_timeout=1000)
        torque_pub = rospy.Publisher(f"{NS}/torque_command", JointState, queue_size=10)
        position_pub = rospy.Publisher(f"{NS}/position_command", JointState, queue_size=10)
        self.assertTrue(wait_for(lambda: torque_pub.get_num_connections() > 0
                                 and position_pub.get_num_connections() > 0
                                 and rec.latest_step() > 0, 60), sim.output()[-2000:])
        held = np.array([0.05, -0.05, 0.03] * 3)
        torque_pub.publish(rc.torque_command_msg(held, rospy.Time(0)))
        time.sleep(0.3)

        def bad(kind):
            msg = rc.torque_command_msg(np.zeros(9), rospy.Time(0))
            if kind == "length":
                msg.effort = msg.effort[:8]
            elif kind == "nan":
                msg.effort[4] = math.nan
            elif kind == "names":
                msg.name[2] = "finger_tip_joint_0"
            elif kind == "repeated":
                msg.name[8] = msg.name[0]
            return msg
        for kind in ("length", "nan", "names", "repeated"):
            torque_pub.publish(bad(kind))
            time.sleep(0.05)
        position = rc.position_command_msg(np.zeros(9), rospy.Time(0))
        position.position[0] = math.inf
        position_pub.publish(position)
        before = rec.latest_step()
        time.sleep(1.0)
        self.assertIsNone(sim.proc.poll(), sim.output()[-3000:])
        self.assertGreater(rec.latest_step(), before + 200, "the simulator stopped")
        with rec.lock:
            last = rec.states[max(rec.states)]
        # the last valid command is still applied (up to trifinger_simulation's velocity damping)
        applied = np.array(mc.robot_state_from_msg(last).torque)
        velocity = np.array(last.velocity)
        self.assertTrue(np.all(np.abs(applied - held) <= 0.1 * np.abs(velocity) + 5e-3),
                        f"applied {applied}, held {held}")
        sim_node = f"{NS}/trifinger_sim"
        self.assertTrue(wait_for(lambda: self._guard_counts(sim_node).get(
            f"{NS}/position_command", 0) == 1, 5), self._guard_counts(sim_node))
        self.assertEqual(self._guard_counts(sim_node)[f"{NS}/torque_command"], 4)
        log = sim.output()
        for expected in ("torque_command: rejected [malformed]: effort has 8 values",
                         "torque_command: rejected [non_finite]: NaN/Inf in effort",
                         "torque_command: rejected [missing_joint]: missing joint",
                         "position_command: rejected [non_finite]"):
            self.assertIn(expected, log)
        self.assertEqual(sim.stop(), 0, log[-2000:])
        self.assertLess(sim.stop_seconds, SHUTDOWN_LIMIT)
        rospy.loginfo("SIGINT to exit: trifinger_sim %.2f s", sim.stop_seconds)

        self._check_controller_survives_bad_messages(probe)

        for case, (node, expected) in failing.items():
            with self.subTest(case=case):
                check_fails_at_start(StartUp(node.wait(60), node.output()), expected)


    def _check_controller_survives_bad_messages(self, probe):
        """Malformed joint states and object poses (a bad pose or confidence) are dropped
        (counted in /diagnostics); the next valid joint state is answered."""
        topic = lambda name: f"{PROBE}/{name}"  # noqa: E731
        states = rospy.Publisher(topic("joint_states"), JointState, queue_size=10)
        poses = rospy.Publisher(topic("object_pose"), ObjectPose, queue_size=10)
        goals = rospy.Publisher(topic("goal_pose"), PoseStamped, queue_size=1, latch=True)
        answers = []
        rospy.Subscriber(topic("torque_command"), JointState, answers.append, queue_size=100)
        self.assertTrue(wait_for(lambda: states.get_num_connections() > 0
                                 and poses.get_num_connections() > 0, 60), probe.output()[-2000:])
        cube = CubePose(np.array([0.0, 0.0, 0.0325]), np.array([0.0, 0.0, 0.0, 1.0]))
        goals.publish(rc.pose_msg(CubePose(np.array([0.0, 0.0, 0.08]), cube.orientation)))
        poses.publish(rc.object_pose_msg(cube))
        q = np.array([0.0, 0.9, -1.7] * 3)

        def state(step, **changes):
            msg = rc.joint_state_msg(RobotState(step, step / 1000, q, np.zeros(9), np.zeros(9)))
            for field, value in changes.items():
                setattr(msg, field, value)
            return msg
        time.sleep(0.3)
        bad_pose = rc.object_pose_msg(cube)
        bad_pose.pose.orientation.w = 0.5
        bad_confidence = rc.object_pose_msg(cube)
        bad_confidence.confidence = 1.5
        for msg in (state(1, position=list(q[:8])), state(2, velocity=[math.nan] * 9),
                    state(3, name=list(rc.JOINT_NAMES[:8]) + ["finger_x"])):
            states.publish(msg)
            time.sleep(0.05)
        for msg in (bad_pose, bad_confidence):
            poses.publish(msg)
            time.sleep(0.05)
        states.publish(state(10))
        self.assertTrue(wait_for(lambda: len(answers) > 0, 10), probe.output()[-2000:])
        self.assertEqual(rc.step_of(answers[0].header.stamp), 10)
        self.assertTrue(np.all(np.abs(mc.torque_from_msg(answers[0])) <= TORQUE_LIMIT))
        done = time.monotonic()
        node = f"{PROBE}/cpc_controller"
        self.assertTrue(wait_for(lambda: any(t > done for t, _ in self._status(node, True)), 5))
        self.assertIsNone(probe.proc.poll())
        counts = self._guard_counts(node)
        self.assertEqual(counts, {topic("joint_states"): 3, topic("object_pose"): 2})
        log = probe.output()
        for expected in ("joint_states: rejected [malformed]: position has 8 values",
                         "joint_states: rejected [non_finite]: NaN/Inf in velocity",
                         "joint_states: rejected [missing_joint]: missing joint",
                         "object_pose: rejected [quaternion]: orientation norm 0.5",
                         "object_pose: rejected [confidence]: confidence 1.5 outside [0, 1]"):
            self.assertIn(expected, log)
        self.assertEqual(probe.stop(), 0, log[-2000:])
        self.assertLess(probe.stop_seconds, SHUTDOWN_LIMIT)
        rospy.loginfo("SIGINT to exit: cpc_controller %.2f s", probe.stop_seconds)

    def _guard_counts(self, node):
        """Rejections per topic in the newest guard status of ``node``."""
        statuses = self._status(node, True)
        counts = {}
        for kv in statuses[-1][1].values if statuses else []:
            topic_name = kv.key.split(" [")[0]
            counts[topic_name] = counts.get(topic_name, 0) + int(kv.value)
        return counts


if __name__ == "__main__":
    rostest.rosrun("trifinger_controllers", "trifinger_nodes", TrifingerNodes)
