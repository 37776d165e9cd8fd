"""The shared base of the controller nodes ``cpc_controller``, ``cic_controller`` and
``mp_controller`` (paper 004 §IV: CPC §IV-B, CIC §IV-C, MP §IV-A, from the library): one
structured policy run on the simulated clock of the joint states, the cube seen through the
shared pose filter (pose_filter.py), free running or in lock step with ``trifinger_sim``.
Topics, parameters (``~params``: the mapping the launch file loads), rate, lock step, checks:
trifinger_controllers/README.md, "Nodes", "cpc_controller, cic_controller, mp_controller".
"""
from __future__ import annotations

import collections
import os
import threading
import time
import warnings
from dataclasses import asdict
from typing import Any, Callable, Optional, TypeVar

import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState
from sim2real_checks import flag_param, integer_param, mapping_param, node_guard, number_param, run_node

from trifinger_controllers import message_checks as mc
from trifinger_controllers import ros_conversions as rc
from trifinger_controllers.controllers import default_grasp, default_parameters, make_controller
from trifinger_controllers.controllers.base import Controller
from trifinger_controllers.errors import ConfigurationError
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.msg import ObjectPose
from trifinger_controllers.params import ParameterSet
from trifinger_controllers.pose_filter import ObservationFilter
from trifinger_controllers.types import N_JOINTS, PHYSICS_RATE, CubePose, Observation, RobotState

T = TypeVar("T")
LOCK_STEP_WAIT = 2.0            # wall s an answer waits for an announced pose / the goal
STATS_WINDOW = 20000            # compute times kept for the statistics


def load_params(name: str) -> Optional[ParameterSet]:
    """``~params``: the hyperparameters of controller ``name`` as the launch file loaded them
    (``<rosparam file=... ns="params"/>``), validated by ParameterSet.from_mapping; a file path
    there is the old way (read by load_yaml, the same validation; for one release, with a
    warning); absent or empty: None (the defaults). ConfigurationError (one line) otherwise."""
    defaults = default_parameters(name)

    def from_file(path: Optional[str]) -> Optional[ParameterSet]:
        if not path:
            return None
        if not os.path.isfile(path):
            raise ConfigurationError(f"~params file not found: {path}")
        return defaults.load_yaml(path)
    try:
        return mapping_param("~params", defaults.from_mapping, from_file)
    except (ValueError, OSError) as exc:
        raise ConfigurationError(str(exc)) from None


def build_controller(name: str, grasp: str, level: int, params: Optional[ParameterSet],
                     residual_path: str, align: bool = False) -> Controller:
    """The controller ``name`` with ``grasp`` for RRC ``level``, the hyperparameters ``params``
    (None: the defaults; :func:`load_params`), with ``residual_path`` a residual policy on top,
    and with ``align`` the alignment primitives chained before it (aligned.py, as ``evaluate
    --align``); ConfigurationError (one line) for anything unusable."""
    if residual_path and not os.path.isfile(residual_path):
        raise ConfigurationError(f"~rpl_policy file not found: {residual_path}")
    try:
        controller = make_controller(name, grasp, params, FingerKinematics(), level=level)
        if residual_path:
            from trifinger_controllers.rpl_policy import load_policy
            controller = load_policy(residual_path, controller)
        if align:
            from trifinger_controllers.aligned import AlignedController
            controller = AlignedController(controller)
    except ImportError as exc:
        raise ConfigurationError(f"~rpl_policy / ~align: cannot import what they need: {exc}") from None
    except (ValueError, KeyError, OSError) as exc:
        raise ConfigurationError(str(exc)) from None
    if not isinstance(controller, Controller) or not controller.rate_hz > 0:
        raise ConfigurationError(f"make_controller({name!r}) did not return a Controller")
    return controller


class ComputeStats:
    """Compute times of the controller (wall clock) and counters, for /diagnostics."""

    def __init__(self) -> None:
        self.times = collections.deque(maxlen=STATS_WINDOW)
        self.calls = 0
        self.errors = 0
        self.reset_seconds: Optional[float] = None
        self.first_step: Optional[int] = None
        self.last_step: Optional[int] = None

    def add(self, seconds: float, step: int) -> None:
        self.times.append(seconds)
        self.calls += 1
        if self.first_step is None:
            self.first_step = step
        self.last_step = step

    def values(self) -> dict:
        times = np.asarray(self.times) * 1e6
        span = (self.last_step - self.first_step) if self.calls > 1 else 0
        values = {
            "calls": self.calls, "errors": self.errors,
            "compute_mean_us": f"{times.mean():.1f}" if times.size else "-",
            "compute_median_us": f"{np.median(times):.1f}" if times.size else "-",
            "compute_p99_us": f"{np.percentile(times, 99):.1f}" if times.size else "-",
            "compute_max_us": f"{times.max():.1f}" if times.size else "-",
            "reset_ms": (f"{1e3 * self.reset_seconds:.1f}" if self.reset_seconds is not None
                         else "-"),
            # calls per simulated second (the rate on the simulated clock)
            "rate_sim_hz": f"{(self.calls - 1) * PHYSICS_RATE / span:.1f}" if span else "-",
        }
        return values


class ControllerNode:
    """One structured policy on the simulator's topics; :meth:`spin` publishes diagnostics."""

    def __init__(self, name: str) -> None:
        self.node = rospy.get_name()
        self.name = name
        try:
            self.grasp = str(rospy.get_param("~grasp", "")) or default_grasp(name)
        except ValueError as exc:        # unknown controller name
            raise ConfigurationError(str(exc)) from None
        self.level = integer_param("~level", 3, ConfigurationError)
        self.wait = number_param("~lock_step_wait", LOCK_STEP_WAIT, ConfigurationError, positive=True)
        self.controller = build_controller(name, self.grasp, self.level, load_params(name),
                                           str(rospy.get_param("~rpl_policy", rospy.get_param("~residual", ""))),
                                           flag_param("~align", False, ConfigurationError))
        self.period = max(1, int(round(PHYSICS_RATE / self.controller.rate_hz)))
        self.stats = ComputeStats()
        self.estimator = ObservationFilter()             # the cube pose the controller acts on
        self.guard = node_guard()
        self._log_error = rc.ThrottledLog(rospy.logerr)
        self._cond = threading.Condition()
        self._goal: Optional[CubePose] = None
        self._cube: Optional[CubePose] = None
        self._cube_ns = rc.NO_POSE
        self._needs_reset = True
        self._last_step: Optional[int] = None          # newest joint state answered
        self._last_compute: Optional[int] = None       # step of the newest computation
        self._held = np.zeros(N_JOINTS)
        with warnings.catch_warnings():
            # queue_size=None publishes synchronously from the callback (no queue thread on the
            # 1 kHz lock-step path); rospy warns about it, here it is deliberate
            warnings.simplefilter("ignore")
            self._commands = rospy.Publisher(rc.TORQUE_COMMAND, JointState, queue_size=None,
                                             tcp_nodelay=True)
        self._diagnostics = rospy.Publisher("/diagnostics", DiagnosticArray, queue_size=1)
        self._topics = {name: rospy.resolve_name(name)
                        for name in (rc.GOAL_POSE, rc.OBJECT_POSE, rc.JOINT_STATES)}
        rospy.Subscriber(rc.GOAL_POSE, PoseStamped, self._on_goal, queue_size=1)
        rospy.Subscriber(rc.OBJECT_POSE, ObjectPose, self._on_pose, queue_size=1,
                         tcp_nodelay=True)
        # queue_size=1: free running, a slow controller skips to the newest state; in lock step
        # there is only one unanswered state at a time
        rospy.Subscriber(rc.JOINT_STATES, JointState, self._on_state, queue_size=1,
                         tcp_nodelay=True)
        rospy.loginfo("%s: %s (%s) with grasp %s at %.0f Hz (every %d simulated ms)", self.node,
                      self.name.upper(), type(self.controller).__name__, self.grasp,
                      self.controller.rate_hz, self.period)

    # ------------------------------------------------------------------------------ inputs
    def _check(self, name: str, parse: Callable[[Any], T], msg: Any) -> Optional[T]:
        """``parse(msg)``, or None after the guard counted and logged the rejection."""
        return self.guard.check(self._topics[name], parse, msg)

    def _on_goal(self, msg: PoseStamped) -> None:
        goal = self._check(rc.GOAL_POSE, mc.cube_pose_from_msg, msg)
        if goal is None:
            return
        with self._cond:
            old = self._goal
            if old is None or not (np.array_equal(old.position, goal.position)
                                   and np.array_equal(old.orientation, goal.orientation)):
                self._goal = goal
                self._needs_reset = True          # a new goal: a new episode
            self._cond.notify_all()

    def _on_pose(self, msg: ObjectPose) -> None:
        pose = self._check(rc.OBJECT_POSE, self._parse_pose, msg)
        if pose is None:
            return
        with self._cond:
            self._cube, self._cube_ns = pose, msg.header.stamp.to_nsec()
            self._cond.notify_all()

    @staticmethod
    def _parse_pose(msg: ObjectPose) -> CubePose:
        mc.check_not_ahead(msg.header.stamp, rospy.Time.now(), "object pose")
        return mc.object_pose_from_msg(msg)

    @staticmethod
    def _parse_state(msg: JointState) -> tuple[RobotState, Optional[int]]:
        mc.check_not_ahead(msg.header.stamp, rospy.Time.now(), "joint state")
        return mc.robot_state_from_msg(msg), rc.parse_lock_step_tag(msg.header.frame_id)

    def _on_state(self, msg: JointState) -> None:
        checked = self._check(rc.JOINT_STATES, self._parse_state, msg)
        if checked is None:
            return
        state, announced = checked
        lock_step = announced is not None
        with self._cond:
            if lock_step:
                ready = self._cond.wait_for(
                    lambda: self._goal is not None and self._cube is not None
                    and self._cube_ns >= announced, timeout=self.wait)
                if not ready:
                    self._log_error("lock_step", f"{self.node}: lock step: no goal or object "
                                                 f"pose stamped {announced} ns after {self.wait} s;"
                                                 f" answering with the held torque")
            goal, cube = self._goal, self._cube
        computed = self._answer(state, goal, cube, lock_step)
        if computed or lock_step:   # lock step: answer every state, or the simulator stalls
            self.guard.publish(self._commands,
                               rc.torque_command_msg(self._held, msg.header.stamp))

    # ------------------------------------------------------------------------------ control
    def _answer(self, state: RobotState, goal: Optional[CubePose], cube: Optional[CubePose],
                lock_step: bool) -> bool:
        """Update the held torque for ``state``: a new computation on the first state of each
        period (True), else (a repeated or in-between state, or no goal/pose yet) False. An
        episode's plans are taken as they arrive, or in lock step deterministically."""
        if goal is None or cube is None:
            return False
        step = state.step
        if self._last_step is not None and step < self._last_step:   # the simulation restarted
            self._last_compute = None
            with self._cond:
                self._needs_reset = True
        self._last_step = step
        last = self._last_compute
        if last is not None and step // self.period <= last // self.period:
            return False
        with self._cond:
            needs_reset = self._needs_reset
        if needs_reset:
            self.estimator.reset()
        # the tracker's report through the shared filter (each image once, by stamp)
        observation = self.estimator(Observation(robot=state, cube=cube, goal=goal))
        try:
            if needs_reset:
                self.controller.set_asynchronous_planning(not lock_step)
                start = time.perf_counter()
                self.controller.reset(observation)
                with self._cond:
                    self.stats.reset_seconds = time.perf_counter() - start
                    # a goal that arrived meanwhile asks for another reset
                    self._needs_reset = self._goal is not goal
            start = time.perf_counter()
            torque = self.controller.compute(observation)
            elapsed = time.perf_counter() - start
            with self._cond:
                self.stats.add(elapsed, step)
        except Exception as exc:  # noqa: BLE001 - any failure of the policy: hold a safe zero
            with self._cond:
                self.stats.errors += 1
            self._log_error("compute", f"{self.node}: {self.name} failed at step {step} "
                                       f"({type(exc).__name__}: {exc}); commanding zero torque")
            torque = np.zeros(N_JOINTS)
        if not np.all(np.isfinite(torque)):     # never held: the guard would withhold it forever
            with self._cond:
                self.stats.errors += 1
            self._log_error("compute", f"{self.node}: {self.name} returned NaN/Inf at step {step}; "
                                       f"commanding zero torque")
            torque = np.zeros(N_JOINTS)
        self._last_compute = step
        self._held = torque
        return True

    # ------------------------------------------------------------------------------ diagnostics
    def diagnostics(self) -> DiagnosticArray:
        with self._cond:
            values = self.stats.values()
            errors = self.stats.errors
        # the pose filter's counts since the controller's last reset (reports, accepted, missed,
        # outliers, re-locks)
        values.update({f"pose_{k}": v for k, v in asdict(self.estimator.filter.counts).items()})
        status = DiagnosticStatus(
            level=DiagnosticStatus.OK if errors == 0 else DiagnosticStatus.WARN,
            name=f"{self.node}: {self.name.upper()}-{self.grasp.upper()}",
            hardware_id="trifinger (simulation)",
            message=f"{values['calls']} calls, median {values['compute_median_us']} us",
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
        array = DiagnosticArray(status=[status, self.guard.status()])
        array.header.stamp = rospy.Time.now()
        return array

    def spin(self) -> None:
        """Publish the statistics once a wall-clock second until shutdown (the control runs in
        the joint-state callback)."""
        while not rospy.is_shutdown():
            time.sleep(1.0)
            if not rospy.is_shutdown():
                self.guard.publish(self._diagnostics, self.diagnostics())


def main(name: str) -> None:
    """Entry point of the controller nodes: ``name`` is cpc, cic or mp."""
    run_node(f"{name}_controller", lambda: ControllerNode(name), ControllerNode.spin,
             errors=(ConfigurationError,), freeze_gc=True)
