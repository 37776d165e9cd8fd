"""The ``trifinger_sim`` node: trifinger_simulation's TriFinger platform with the cube (paper
004 §III; the simulated platform of the §VI evaluation) at 1 kHz as ROS topics (relative names;
the launch files use ``/trifinger``), free running or in lock step with a controller, holding
the fingers when the torque commands stop (command_hold.py). Topics, parameters, time, lock
step, command timeout, checks: trifinger_controllers/README.md, "Nodes", "trifinger_sim" and
"Command timeout".
"""
from __future__ import annotations

import json
import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from sim2real_checks import (Rejected, flag_param, integer_param, node_guard, number_param, run_node,
                             warn_deprecated_path)
from std_msgs.msg import String

from trifinger_controllers import message_checks as mc
from trifinger_controllers import ros_conversions as rc
from trifinger_controllers import evaluation, task
from trifinger_controllers.command_hold import CommandWatchdog, HoldLog
from trifinger_controllers.errors import ConfigurationError
from trifinger_controllers.msg import ObjectPose
from trifinger_controllers.platform import DEFAULT_CAMERA_DELAY_STEPS, SimulatedPlatform
from trifinger_controllers.sim_options import (CAMERA_NAMES, DEFAULT_CAMERA, DEFAULT_PHYSICS,
                                               PHYSICS_NAMES, SimOptions)
from trifinger_controllers.types import N_JOINTS, PHYSICS_RATE, CubePose, Observation

#: trifinger_simulation's PD gains of the TriFinger Pro's position controller (per finger).
DEFAULT_POSITION_KP = (15.0, 15.0, 9.0)
DEFAULT_POSITION_KD = (0.5, 1.0, 0.5)
LOCK_STEP_RESEND = 0.5          # wall s between republications of an unanswered joint state
COMMAND_TIMEOUT = 0.1           # simulated s without a torque command before the hold
MAX_LAG = 0.05                  # wall s the simulation may fall behind before it gives up the time


@dataclass(frozen=True)
class Command:
    """The held command: joint torques or joint position targets, its stamp [ns] and the
    simulation step at which it arrived."""

    kind: str                  # "torque" | "position"
    values: np.ndarray         # (9,)
    stamp_ns: int
    step: int


def _gains(value: Any, name: str) -> np.ndarray:
    gains = np.asarray(value, dtype=float).ravel()
    if gains.size == 3:
        gains = np.tile(gains, 3)
    if gains.shape != (N_JOINTS,) or not np.all(np.isfinite(gains)) or np.any(gains < 0):
        raise ConfigurationError(f"~{name} must be 3 or 9 non-negative numbers, got {value!r}")
    return gains


def _sim_options() -> SimOptions:
    """``~camera`` and ``~physics``: a name (tracker, ideal; randomised, nominal) or the model
    the launch file loaded (a mapping, as its YAML file); a file path still works, with a
    warning (deprecated, CONTRIBUTING.md "Nodes")."""
    values, sources = [], []
    for name, default, names in (("~camera", DEFAULT_CAMERA, CAMERA_NAMES),
                                 ("~physics", DEFAULT_PHYSICS, PHYSICS_NAMES)):
        value = rospy.get_param(name, default)
        value = default if value == "" else value          # an empty launch argument: the default
        resolved = rospy.resolve_name(name)
        if not isinstance(value, (str, dict)):
            raise ConfigurationError(f"{resolved} must be one of {list(names)} or a YAML mapping, "
                                     f"got {value!r}")
        if isinstance(value, str) and value not in names:
            warn_deprecated_path(name, value)
        values.append(value)
        sources.append(f"parameter {resolved}")
    try:
        return SimOptions.from_values(values[0], values[1], (sources[0], sources[1]))
    except ValueError as exc:
        raise ConfigurationError(f"~camera (tracker, ideal or a model) / ~physics (randomised, "
                                 f"nominal or ranges): {exc}") from None


class SimNode:
    """Parameters, publishers and subscribers of ``trifinger_sim``; :meth:`spin` runs it."""

    def __init__(self) -> None:
        self.name = rospy.get_name()
        self.level = integer_param("~level", 3, ConfigurationError)
        self.seed = integer_param("~seed", 0, ConfigurationError)
        try:
            task.check_level(self.level)
        except ValueError as exc:
            raise ConfigurationError(f"~level: {exc}") from None
        error = number_param("~init_orientation_error", -1.0, ConfigurationError)
        error = None if error < 0 else error          # negative: no imposed orientation error
        goal_param = rospy.get_param("~goal", None)
        try:
            goal = None if goal_param in (None, "", []) else rc.goal_from_param(goal_param)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        try:
            # trial 0 of `evaluate --seed S`: the same goal, initial pose and platform seed
            self.goal, self.initial, platform_seed = evaluation.episode_specs(
                self.level, 1, self.seed, error, goal)[0]
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        self.lock_step = flag_param("~lock_step", False, ConfigurationError)
        self.real_time_factor = number_param("~real_time_factor", 1.0, ConfigurationError, minimum=0.0)
        publish_rate = number_param("~publish_rate", PHYSICS_RATE, ConfigurationError)
        self.episode_seconds = number_param("~episode_seconds", 0.0, ConfigurationError, minimum=0.0)
        self.resend = number_param("~lock_step_resend", LOCK_STEP_RESEND, ConfigurationError, positive=True)
        delay = integer_param("~camera_delay_steps", DEFAULT_CAMERA_DELAY_STEPS, ConfigurationError,
                              minimum=0)
        self.command_timeout = number_param(
            "~command_timeout", COMMAND_TIMEOUT, ConfigurationError, minimum=1.0 / PHYSICS_RATE,
            what=f"a finite number of simulated seconds >= {1.0 / PHYSICS_RATE:g}")
        self.kp = _gains(rospy.get_param("~position_kp", DEFAULT_POSITION_KP), "position_kp")
        self.kd = _gains(rospy.get_param("~position_kd", DEFAULT_POSITION_KD), "position_kd")
        if not 0 < publish_rate <= PHYSICS_RATE:
            raise ConfigurationError(f"~publish_rate must be in (0, {PHYSICS_RATE:.0f}] Hz, "
                                     f"got {publish_rate}")
        self.watchdog = CommandWatchdog(int(round(self.command_timeout * PHYSICS_RATE)))
        self.publish_every = (1 if self.lock_step
                              else max(1, int(round(PHYSICS_RATE / publish_rate))))
        self.publish_clock = flag_param("~publish_clock", rospy.get_param("/use_sim_time", False),
                                        ConfigurationError)
        self.options = _sim_options()
        self.platform = SimulatedPlatform(seed=platform_seed, camera_delay_steps=delay,
                                          perception=self.options.perception,
                                          physics=self.options.physics)

        self.guard = node_guard()
        self._log_wait = rc.ThrottledLog(rospy.logwarn, period=5.0)
        self._hold_log = HoldLog()
        self._cond = threading.Condition()
        self._command: Optional[Command] = None
        self._step = 0                                # step of the newest observation
        self._state_ns = -1                           # stamp of the newest joint state published
        self.accepted: Counter = Counter()            # valid commands per kind
        self._pose_stamp: Optional[float] = None      # capture time of the newest published pose
        with warnings.catch_warnings():
            # queue_size=None: published synchronously from the stepping loop, no hand-over to
            # queue threads at 1 kHz (rospy warns about it; here it is deliberate)
            warnings.simplefilter("ignore")
            self._states = rospy.Publisher(rc.JOINT_STATES, JointState, queue_size=None,
                                           tcp_nodelay=True)
            self._poses = rospy.Publisher(rc.OBJECT_POSE, ObjectPose, queue_size=None,
                                          tcp_nodelay=True, latch=True)
            self._clock = (rospy.Publisher("/clock", Clock, queue_size=None)
                           if self.publish_clock else None)
        self._goal_pub = rospy.Publisher(rc.GOAL_POSE, PoseStamped, queue_size=1, latch=True)
        self._result = rospy.Publisher(rc.EPISODE_RESULT, String, queue_size=1, latch=True)
        self._diagnostics = rospy.Publisher("/diagnostics", DiagnosticArray, queue_size=1)
        self._torque_topic = rospy.resolve_name(rc.TORQUE_COMMAND)
        self._position_topic = rospy.resolve_name(rc.POSITION_COMMAND)
        rospy.Subscriber(rc.TORQUE_COMMAND, JointState, self._on_torque, queue_size=10,
                         tcp_nodelay=True)
        rospy.Subscriber(rc.POSITION_COMMAND, JointState, self._on_position, queue_size=10,
                         tcp_nodelay=True)
        rospy.loginfo("%s: simulation (trifinger_simulation, PyBullet) level %d seed %d, goal %s, "
                      "cube at %s, camera %s, physics %s, %s, joint_states every %d ms, "
                      "real-time factor %g%s",
                      self.name, self.level, self.seed, np.round(self.goal.position, 4).tolist(),
                      np.round(self.initial.position, 4).tolist(), self.options.perception.name,
                      self.options.physics.name,
                      "lock step" if self.lock_step else
                      f"free running (hold after {self.command_timeout:g} s without a torque "
                      f"command)", self.publish_every, self.real_time_factor,
                      f", episode {self.episode_seconds:g} s" if self.episode_seconds else "")

    # ------------------------------------------------------------------------------ commands
    def _on_torque(self, msg: JointState) -> None:
        self._accept(self._torque_topic, "torque", mc.torque_from_msg, msg)

    def _on_position(self, msg: JointState) -> None:
        self._accept(self._position_topic, "position", mc.position_from_msg, msg)

    def _accept(self, topic: str, kind: str, parse: Callable[[JointState], np.ndarray],
                msg: JointState) -> None:
        values = self.guard.check(topic, parse, msg)
        if values is None:
            return                  # counted and logged by the guard; the last command is held
        stamp_ns = msg.header.stamp.to_nsec()
        with self._cond:
            newest = self._state_ns
        if self.lock_step and stamp_ns > newest:
            self.guard.reject(topic, Rejected(
                "stamp", f"stamped {msg.header.stamp.to_sec():.6g} s, after the newest joint "
                         f"state ({newest / 1e9:.6g} s): not an answer to a published state"))
            return
        with self._cond:
            held = self._command
            if self.lock_step and held is not None and stamp_ns < held.stamp_ns:
                return              # an answer to a step already done (e.g. a resent state)
            self._command = Command(kind, values, stamp_ns, self._step)
            self.accepted[kind] += 1
            self._cond.notify_all()

    def torque(self, obs: Observation) -> np.ndarray:
        """The torque for the state ``obs``: zero before any command, the hold law once the
        torque command is ``~command_timeout`` old (free running), else the held command."""
        with self._cond:
            command = self._command
        if command is None:
            return np.zeros(N_JOINTS)
        robot = obs.robot
        if not self.lock_step:
            self.watchdog.update(robot, command.step,
                                 command.values if command.kind == "torque" else None)
            hold = self.watchdog.hold
            since = self._hold_log.due(hold is not None, self.watchdog.holds)
            if since is not None:
                self._log_hold(since, robot.step)
            if hold is not None:
                return hold.torque(self.kp, self.kd, robot.position, robot.velocity)
        if command.kind == "torque":
            return command.values
        return self.kp * (command.values - robot.position) - self.kd * robot.velocity

    def _log_hold(self, since: int, step: int) -> None:
        """The hold's WARN line when it begins, its INFO line when commands are back (HoldLog:
        at most one line a second; ``since`` holds began since the last line)."""
        hold, holds = self.watchdog.hold, self.watchdog.holds
        more = f", {since} holds since the last line" if since > 1 else ""
        if hold is not None:
            rospy.logwarn(f"{self.name}: [command_timeout] no torque command for "
                          f"{self.command_timeout:g} simulated s (controller gone?): holding the "
                          f"joints at {np.round(hold.position, 3).tolist()} (joint PD with the "
                          f"last command as feed-forward) until commands come back (hold "
                          f"{holds}{more})")
        elif self.watchdog.last is not None:
            held = (step - self.watchdog.last.step) / PHYSICS_RATE
            rospy.loginfo(f"{self.name}: [command_timeout] commands are back: hold ended after "
                          f"{held:.3f} simulated s (hold {holds}{more})")

    def _wait_for_answer(self, state_msg: JointState) -> bool:
        """Lock step: block until a command stamped like ``state_msg`` arrives; republish the
        state every ``resend`` s meanwhile. False on shutdown."""
        stamp_ns = state_msg.header.stamp.to_nsec()
        while not rospy.is_shutdown():
            with self._cond:
                answered = self._cond.wait_for(
                    lambda: self._command is not None and self._command.stamp_ns >= stamp_ns,
                    timeout=self.resend)
            if answered:
                return True
            with self._cond:
                started = self._command is not None
            if started:
                self._log_wait("wait", f"{self.name}: lock step: waiting for a command stamped "
                                       f"{state_msg.header.stamp.to_sec():.3f} s (a controller "
                                       f"answers each joint state, echoing its stamp)")
            else:
                self._log_wait("start", f"{self.name}: lock step: waiting for a controller",
                               rospy.loginfo)
            self.guard.publish(self._states, state_msg)
        return False

    # ------------------------------------------------------------------------------ running
    def _publish(self, obs: Observation) -> Optional[JointState]:
        """Publish what is due at this step: a new camera pose, then the joint state."""
        if self._pose_stamp is None or obs.cube.stamp != self._pose_stamp:
            self._pose_stamp = obs.cube.stamp
            self.guard.publish(self._poses, rc.object_pose_msg(obs.cube))
        if obs.robot.step % self.publish_every:
            return None
        tag = rc.lock_step_tag(self._pose_stamp) if self.lock_step else ""
        msg = rc.joint_state_msg(obs.robot, tag)
        with self._cond:
            self._state_ns = msg.header.stamp.to_nsec()
        if self._clock is not None:
            self.guard.publish(self._clock, Clock(clock=msg.header.stamp))
        self.guard.publish(self._states, msg)
        return msg

    def spin(self) -> None:
        obs = self.platform.reset(self.initial, self.goal)
        self.guard.publish(self._goal_pub, rc.pose_msg(self.goal))
        threading.Thread(target=self._publish_diagnostics, daemon=True).start()
        end_step = int(round(self.episode_seconds * PHYSICS_RATE)) if self.episode_seconds else None
        tracker = (EpisodeTracker(self.level, self.goal, self.initial, end_step)
                   if end_step is not None else None)
        wall_start = pace_start = time.monotonic()
        while not rospy.is_shutdown():
            msg = self._publish(obs)
            if end_step is not None and obs.robot.step >= end_step:
                self._finish(tracker, time.monotonic() - wall_start)
                return
            if self.lock_step and not self._wait_for_answer(msg):
                return
            obs = self.platform.step(self.torque(obs))
            with self._cond:
                self._step = obs.robot.step
            if tracker is not None:
                tracker.add(obs, self.platform.true_cube_pose())
            if self.real_time_factor > 0:
                ahead = pace_start + obs.robot.time / self.real_time_factor - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
                elif ahead < -MAX_LAG:   # behind the factor: run on, no burst to catch up
                    pace_start -= ahead + MAX_LAG
                    if not self.lock_step:   # (in lock step the controller sets the pace)
                        self._log_wait("lag", f"{self.name}: slower than real_time_factor "
                                              f"{self.real_time_factor:g}")

    def _finish(self, tracker: "EpisodeTracker", wall: float) -> None:
        result = tracker.result(self.platform)
        dropped = Counter({self._torque_topic: 0, self._position_topic: 0})
        for kv in self.guard.status().values:          # "<topic> [<reason>]": count
            topic = kv.key.rsplit(" [", 1)[0]
            if topic in dropped:
                dropped[topic] += int(kv.value)
        result.update(seed=self.seed, lock_step=self.lock_step, wall_seconds=round(wall, 3),
                      sim_options=self.options.describe(),
                      dropped_commands=dict(dropped), command_timeouts=self.watchdog.holds)
        text = json.dumps(result, sort_keys=True)
        self.guard.publish(self._result, String(data=text))
        rospy.loginfo("%s: episode done: %s", self.name, text)
        time.sleep(0.5)                     # let subscribers of the latched result receive it
        rospy.signal_shutdown("episode done")

    # ------------------------------------------------------------------------------ diagnostics
    def diagnostics(self) -> DiagnosticArray:
        """The guard's counters and the command timeouts."""
        with self._cond:
            accepted = dict(self.accepted)
        holds, holding = self.watchdog.holds, self.watchdog.hold is not None
        values = {"holds": holds, "holding": holding,
                  "commands_torque": accepted.get("torque", 0),
                  "commands_position": accepted.get("position", 0)}
        status = DiagnosticStatus(
            level=DiagnosticStatus.WARN if holding else DiagnosticStatus.OK,
            name=f"{self.name}: commands", hardware_id="trifinger (simulation)",
            message=(f"holding (no torque command for {self.command_timeout:g} s)" if holding
                     else f"{holds} command timeouts"),
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
        array = DiagnosticArray(status=[self.guard.status(), status])
        array.header.stamp = rospy.Time.now()
        return array

    def _publish_diagnostics(self) -> None:
        """Once a wall second (also while a lock-stepped simulation, and its clock, stands)."""
        while not rospy.is_shutdown():
            time.sleep(1.0)
            if not rospy.is_shutdown():
                self.guard.publish(self._diagnostics, self.diagnostics())

    def close(self) -> None:
        self.platform.close()


#: evaluation.EpisodeRecord's fields that only the controller knows (not in ``episode_result``).
CONTROLLER_FIELDS = ("reset_seconds", "compute_calls", "compute_us_mean", "compute_us_p99",
                     "compute_us", "pose_filter", "error")


class EpisodeTracker:
    """The score of an episode of ``~episode_seconds``, defined as in the in-process evaluation
    (evaluation.py: final RRC reward of the level, its sum over the 1 ms steps, final position and
    orientation errors, all on the true cube pose, and its DropDetector; the errors of the
    tracker's last report; the tracker's counts and the physics sample), so that a ROS run and
    ``evaluate`` report the same quantities. What only the controller knows (compute times, the
    pose filter's counts) is not here: :data:`CONTROLLER_FIELDS`."""

    def __init__(self, level: int, goal: CubePose, initial: CubePose, steps: int) -> None:
        from trifinger_controllers.evaluation import DropDetector
        from trifinger_controllers.kinematics import FingerKinematics
        self.level, self.goal, self.initial = level, goal, initial
        self.positions = np.empty((steps, 3))
        self.orientations = np.empty((steps, 4))
        self.steps = 0
        self.drops = DropDetector(FingerKinematics())

    def add(self, obs: Observation, truth: CubePose) -> None:
        """Record the step that led to ``obs`` (``truth``: the true cube pose then)."""
        if self.steps < len(self.positions):
            self.positions[self.steps] = truth.position
            self.orientations[self.steps] = truth.orientation
            self.steps += 1
        self.drops.update(truth, obs.robot.position)

    def result(self, platform: SimulatedPlatform) -> dict:
        """The record of the episode ``platform`` has just run."""
        final = platform.true_cube_pose()
        n = self.steps
        rewards = task.rewards(self.level, self.goal, self.positions[:n], self.orientations[:n])
        pose = lambda p: {"position": np.asarray(p.position, float).tolist(),  # noqa: E731
                          "orientation": np.asarray(p.orientation, float).tolist()}
        return {
            "label": "simulation",
            "level": self.level,
            "sim_seconds": n / PHYSICS_RATE,
            "reward": task.reward(self.level, self.goal, final),
            "cumulative_reward": float(np.sum(rewards)),
            "position_error_cm": 100.0 * task.position_error(self.goal, final),
            "orientation_error_deg": float(np.rad2deg(task.orientation_error(self.goal, final))),
            "drop": bool(self.drops.dropped),
            "goal": pose(self.goal), "initial": pose(self.initial), "final": pose(final),
            **evaluation.platform_record(platform, self.goal),
        }


def main() -> None:
    """Entry point of ``trifinger_sim``: one [FATAL] line and exit 1 on a bad parameter."""
    run_node("trifinger_sim", SimNode, SimNode.spin, SimNode.close, errors=(ConfigurationError,))
