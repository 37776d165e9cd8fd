"""The robot over libfranka (franky): one long-lived joint impedance controller that holds
position or follows the commanded trajectory, every 1 kHz state handed out, errors surfaced.

The ``fci_bridge`` node is a thin ROS layer over :class:`FciBridge`:

- :meth:`FciBridge.connect` reaches the robot (or ``fci_standin``) at an address; every way it
  can fail is one :class:`~panda_fci.errors.RobotError` line (unreachable, another robot
  server version, no real-time kernel where one is enforced).
- :meth:`FciBridge.start` keeps franky's ``JointImpedanceTrackingMotion`` running (libfranka
  torque control; the robot adds gravity). Each control tick, in libfranka's thread,
  :meth:`FciBridge._on_tick` samples the scheduled trajectory at the robot's own time (the
  same cubic Hermite :class:`~panda_sim2real.trajectory.TrajectoryExecutor` the simulator
  follows), sets the reference (q, qd, tau_ff = M(q) qdd) for the next tick, and queues the
  raw state; :meth:`FciBridge.next_sample` turns it into a :class:`RobotSample` in the
  consumer's thread, so that the control thread does as little as possible.
- :meth:`FciBridge.command` validates a trajectory against the Panda's position, velocity,
  acceleration and jerk limits and its continuity with the reference it replaces, before it
  reaches the robot; a rejected one leaves the robot holding where it is.
- :meth:`FciBridge.move_to` brings the arm from where it holds to a pose (the start pose) with a
  slow, limit-checked move (homing.py) and :meth:`FciBridge.wait_for` waits for a plan's end.
- A reflex or a lost connection ends the motion: it is reported (:attr:`FciBridge.error`), the
  robot holds (it stops by itself), and nothing moves until :meth:`FciBridge.recover`.
"""
from __future__ import annotations

import logging
import math
import os
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from panda_sim2real import (ConfigError, HermiteSegments, JointLimits, PlannedTrajectory, TrajectoryExecutor,
                            TrajectoryRejected, check_motion_limits)
from panda_fci.errors import RobotError
from panda_fci.homing import HomingSettings, homing_trajectory
from panda_fci.realtime_host import realtime_kernel
from panda_fci.time_mapping import RobotClock

logger = logging.getLogger(__name__)

BRIDGE_CONFIG_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config",
                                  "fci_bridge.yaml")
REALTIME_MODES = ("enforce", "ignore")
TICK = 0.001              # s: libfranka's control period
IDLE_POLL = 0.01          # s between state reads while no controller runs (error, recovery)
CONNECT_RETRY = 0.5       # s between connection attempts while the robot refuses
QUEUE_SIZE = 2000         # raw states (2 s) waiting for the consumer; older ones are dropped


@dataclass(frozen=True)
class BridgeConfig:
    """Gains and checks of the bridge (config/fci_bridge.yaml)."""

    stiffness: np.ndarray            # N m/rad, joint impedance
    damping: np.ndarray              # N m s/rad
    max_delta_tau: float             # N m per tick: the Panda's torque rate limit, 1000 N m/s
    feedforward: bool                # tau_ff = M(q) qdd_ref from the robot's own model
    start_tolerance: float           # rad: a trajectory vs the reference it takes over from
    torque_thresholds: np.ndarray    # N m: collision reflex thresholds (libfranka)
    force_thresholds: np.ndarray     # N: Cartesian collision reflex thresholds
    homing: HomingSettings = HomingSettings()   # the move to the start pose (homing.py)

    @classmethod
    def from_dict(cls, raw: Any, dof: int = 7, source: str = "fci_bridge config") -> "BridgeConfig":
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: expected a mapping of the bridge's settings")

        def vector(key: str, n: int) -> np.ndarray:
            value = raw.get(key)
            arr = np.asarray(value if value is not None else [], dtype=float).reshape(-1)
            if arr.size == 1:
                arr = np.full(n, float(arr[0]))
            if arr.shape != (n,) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise ConfigError(f"{source}: '{key}' needs {n} finite non-negative numbers")
            return arr

        def number(key: str) -> float:
            try:
                value = float(raw[key])
            except (KeyError, TypeError, ValueError):
                raise ConfigError(f"{source}: '{key}' needs a number") from None
            if not math.isfinite(value) or value <= 0:
                raise ConfigError(f"{source}: '{key}' must be a positive finite number")
            return value

        unknown = set(raw) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise ConfigError(f"{source}: unknown keys {sorted(unknown)}")
        try:
            homing = HomingSettings.from_dict(raw.get("homing"), f"{source}: 'homing'")
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
        return cls(homing=homing, stiffness=vector("stiffness", dof), damping=vector("damping", dof),
                   max_delta_tau=number("max_delta_tau"), feedforward=bool(raw.get("feedforward", True)),
                   start_tolerance=number("start_tolerance"),
                   torque_thresholds=vector("torque_thresholds", dof),
                   force_thresholds=vector("force_thresholds", 6))


@dataclass(frozen=True)
class RobotSample:
    """One robot state: robot time [s], host stamp [s], q [rad], dq [rad/s], measured link-side
    torque tau_J [N m], estimated external torque [N m], robot mode, command success rate,
    libfranka's active errors (read in reflex only), and when it reached the host."""

    robot_time: float
    stamp: float
    q: np.ndarray
    dq: np.ndarray
    tau_j: np.ndarray
    tau_ext: np.ndarray
    mode: str
    success_rate: float
    errors: tuple[str, ...]
    tick_wall: float          # time.perf_counter() when the state reached the host

    def is_finite(self) -> bool:
        return bool(np.all(np.isfinite(self.q)) and np.all(np.isfinite(self.dq))
                    and np.all(np.isfinite(self.tau_j)) and np.all(np.isfinite(self.tau_ext)))


@dataclass(frozen=True)
class FeedForward:
    """qdd of one scheduled trajectory, per segment: a + s b with s in [0, 1] (from its cubic)."""

    plan: PlannedTrajectory
    a: np.ndarray
    b: np.ndarray

    @classmethod
    def of(cls, plan: PlannedTrajectory) -> "FeedForward":
        seg = HermiteSegments.of(plan)
        h2 = seg.h[:, None] ** 2
        return cls(plan, 2 * seg.c[2] / h2, 6 * seg.c[3] / h2)

    def acceleration(self, t: float) -> Optional[np.ndarray]:
        """qdd at ``t`` seconds after the start (None outside the trajectory)."""
        times = self.plan.times
        if t <= times[0] or t >= times[-1]:
            return None
        k = int(np.searchsorted(times, t, side="right")) - 1
        return self.a[k] + (t - times[k]) / (times[k + 1] - times[k]) * self.b[k]


def wait_for_end(plan: PlannedTrajectory, timeout: float, robot_time: Callable[[], float],
                 error: Callable[[], Optional[str]]) -> None:
    """Wait until ``robot_time()`` passes the end of ``plan`` (robot time); RobotError when
    ``error()`` reports one meanwhile or ``timeout`` wall seconds pass first."""
    deadline = time.monotonic() + timeout
    end = plan.start + plan.duration
    while robot_time() < end:
        if error() is not None:
            raise RobotError(f"the robot stopped during the move: {error()}; call ~recover")
        if time.monotonic() > deadline:
            raise RobotError(f"the robot's clock did not reach the move's end within "
                             f"{timeout:.1f} s (robot time {robot_time():.3f} of {end:.3f} s)")
        time.sleep(IDLE_POLL)


def realtime_config(mode: str, franky_module: Any) -> Any:
    if mode not in REALTIME_MODES:
        raise ConfigError(f"~realtime must be one of {REALTIME_MODES}, got {mode!r}")
    return franky_module.RealtimeConfig.Enforce if mode == "enforce" else franky_module.RealtimeConfig.Ignore


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def connection_error(address: str, exc: BaseException) -> RobotError:
    """One line for each way franky.Robot(address) fails."""
    name, text = type(exc).__name__, " ".join(str(exc).split())
    if name == "IncompatibleVersionException":
        return RobotError(f"robot at {address} speaks another protocol version: {text}. This "
                          f"franky bundles libfranka 0.21 (server protocol 10, FR3 / system "
                          f">= 5.9); a Panda on an older system image needs a libfranka 0.9.x "
                          f"build of franky (see panda_fci/README.md)")
    if name == "RealtimeException":
        return RobotError(f"{text}: run on a PREEMPT_RT kernel (see docker/README.md) or set "
                          f"~realtime:=ignore for a test against fci_standin")
    if name == "NetworkException":
        return RobotError(f"cannot reach a robot at {address}: {text} (check ~robot_ip, the "
                          f"cable, and that FCI is activated in Desk)")
    return RobotError(f"cannot connect to the robot at {address}: {name}: {text}")


def error_names(errors: Any) -> tuple[str, ...]:
    """libfranka's active error flags by name (franky prints them as a list)."""
    return tuple(e.strip().strip('"\'') for e in str(errors).strip("[]").split(",") if e.strip())


class FciBridge:
    """The robot behind libfranka, holding or tracking; see the module docstring."""

    def __init__(self, address: str, limits: JointLimits, config: BridgeConfig,
                 realtime: str = "enforce", franky_module: Any = None) -> None:
        if franky_module is None:
            import franky as franky_module
        self.franky = franky_module
        self.address = address
        self.limits = limits
        self.config = config
        self.realtime = realtime_config(realtime, franky_module)
        self.realtime_kernel = realtime_kernel()
        self.clock = RobotClock()          # written by the consumer of next_sample only
        self.error: Optional[str] = None
        self.dropped = 0                   # raw states the consumer did not take in time
        self.on_error: Callable[[str], None] = lambda message: None
        self.robot = None
        self._model = None
        self._motion = None
        self._raw: "queue.Queue[tuple[Any, float, float]]" = queue.Queue(maxsize=QUEUE_SIZE)
        self._lock = threading.Lock()      # executor, feed-forward, robot time (the tick takes it)
        self._command_lock = threading.Lock()
        self._recover_lock = threading.Lock()
        self._executor: Optional[TrajectoryExecutor] = None
        self._feedforward: dict[int, FeedForward] = {}
        self._robot_time = 0.0
        self._last_q: Optional[np.ndarray] = None
        self.latest_q: Optional[np.ndarray] = None   # the last state's q handed out by next_sample
        self._connection_lost = False
        self._stopping = False
        self._watcher: Optional[threading.Thread] = None
        self._watch_stop = threading.Event()

    # -- connection ------------------------------------------------------------------------
    def connect(self, timeout: float = 0.0) -> None:
        """Connect (RobotError with one line on failure) and set the collision behaviour. A
        refused connection (a robot, or fci_standin, still starting) is retried for ``timeout``
        seconds; every other failure is final at once."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.robot = self.franky.Robot(self.address, realtime_config=self.realtime)
                self.robot.set_collision_behavior(self.config.torque_thresholds.tolist(),
                                                  self.config.force_thresholds.tolist())
                break
            except Exception as exc:      # franky raises its own types and RuntimeError
                self.robot = None
                refused = type(exc).__name__ == "NetworkException" and "refused" in str(exc)
                if not refused or time.monotonic() + CONNECT_RETRY > deadline:
                    raise connection_error(self.address, exc) from exc
                time.sleep(CONNECT_RETRY)
        self._model = self.robot.model
        self._connection_lost = False
        self._refresh_state()

    def _refresh_state(self) -> None:
        """Read the state once (no controller running): robot time and position."""
        state = self._read_state()
        self._robot_time = state.time.to_sec()
        self._last_q = np.asarray(state.q, dtype=float)

    def start(self) -> None:
        """Start the controller holding the current position, and the watcher thread."""
        if self.robot is None:
            raise RobotError("not connected to a robot")
        q = self._last_q.copy()
        with self._lock:
            self._executor = TrajectoryExecutor(q)
            self._feedforward = {}
        motion = self.franky.JointImpedanceTrackingMotion(
            stiffness=self.config.stiffness, damping=self.config.damping,
            max_delta_tau=self.config.max_delta_tau)
        motion.set_reference(self.franky.JointReference(q=q))
        motion.register_callback(self._on_tick)
        self._motion = motion
        self._stopping = False
        try:
            self.robot.move(motion, asynchronous=True)
        except Exception as exc:
            self.error = f"the robot refused the controller: {one_line(exc)}"
            raise RobotError(self.error) from exc
        self.error = None
        self._watch_stop.clear()
        self._watcher = threading.Thread(target=self._watch, name="fci_watch", daemon=True)
        self._watcher.start()

    def recover(self) -> str:
        """Clear a reflex (libfranka's automatic error recovery) or, when the connection is
        gone, connect anew; then hold the current position again. RobotError if it cannot."""
        with self._recover_lock:
            if self.error is None and self._watcher is not None and self._watcher.is_alive():
                return "nothing to recover: the robot is holding or tracking"
            self._stop_watcher()
            recovered = False
            if self.robot is not None and not self._connection_lost:
                try:
                    recovered = bool(self.robot.recover_from_errors())
                except Exception:            # the connection went with the error
                    recovered = False
            if recovered:
                self._refresh_state()
            else:
                self.connect()
                if self._read_state().robot_mode.name == "Reflex":   # a reflex outlived the connection
                    self.robot.recover_from_errors()
                    self._refresh_state()
            self.start()
            return "recovered: holding the current position"

    def close(self) -> None:
        self._stopping = True
        if self.robot is not None:
            try:
                self.robot.stop()
            except Exception:                # already stopped or disconnected
                pass
        self._stop_watcher()

    # -- trajectories ----------------------------------------------------------------------
    def command(self, trajectory: PlannedTrajectory, idle_only: bool = False) -> PlannedTrajectory:
        """Schedule ``trajectory`` (start in host time, None = now). Raises TrajectoryRejected
        (the robot holds where it is; with ``idle_only`` also while a trajectory runs or waits
        for its start) or RobotError (not running); returns it in robot time. The checks run
        outside the lock the control tick needs."""
        with self._command_lock:
            with self._lock:
                if self.error is not None or self._executor is None:
                    raise RobotError(f"the robot is not ready: {self.error or 'not started'}; "
                                     f"call ~recover")
                now = self._robot_time
                if idle_only and self._busy(now):
                    raise TrajectoryRejected("a trajectory is running or scheduled: move to the "
                                             "start pose after its end", "busy")
                start = (None if trajectory.start is None
                         else max(self.clock.to_robot(trajectory.start), TICK))
                plan = self._executor.prepare(trajectory.at(start), now)
                takeover = max(plan.start, now)
                held, _ = self._executor.peek(takeover)
            try:
                self._check_continuity(plan, takeover, held)
                check_motion_limits(plan, self.limits)
            except TrajectoryRejected:
                self.hold()
                raise
            feedforward = FeedForward.of(plan) if self.config.feedforward else None
            with self._lock:
                if self.error is not None:
                    raise RobotError(f"the robot stopped: {self.error}; call ~recover")
                scheduled = self._executor.schedule(plan, self._robot_time)
                # feed-forward for the scheduled plan and, until it starts, the one running now
                running = self._executor.plan_at(self._robot_time)
                kept = self._feedforward.get(id(running)) if running is not None else None
                self._feedforward = {id(p.plan): p for p in (kept, feedforward) if p is not None}
        return scheduled

    def move_to(self, goal: np.ndarray) -> PlannedTrajectory:
        """Schedule the slow move of homing.py from the reference held now to ``goal``; returns
        it in robot time. TrajectoryRejected (the robot holds) while a trajectory runs or waits
        for its start, or when the move would leave the limits' margins; RobotError when the
        robot is not ready. The idle check is repeated under the command lock (command)."""
        with self._lock:
            if self.error is not None or self._executor is None:
                raise RobotError(f"the robot is not ready: {self.error or 'not started'}; "
                                 f"call ~recover")
            held, _ = self._executor.peek(self._robot_time)
        return self.command(homing_trajectory(held, goal, self.limits, self.config.homing),
                            idle_only=True)

    def _busy(self, now: float) -> bool:
        """A trajectory runs at ``now`` or is scheduled to start later (call under _lock)."""
        plan = self._executor.plan_at(math.inf)     # the pending one if any, else the active one
        return plan is not None and now <= plan.start + plan.duration

    def wait_for(self, plan: PlannedTrajectory, timeout: float) -> None:
        """Wait until the robot's clock passes the end of ``plan`` (robot time); RobotError when
        the robot stops on an error meanwhile or ``timeout`` wall seconds pass first."""
        wait_for_end(plan, timeout, lambda: self._robot_time, lambda: self.error)

    def hold(self) -> None:
        """Stop following any trajectory; hold the reference of now."""
        with self._lock:
            if self._executor is not None:
                self._executor.stop(self._robot_time)
                self._feedforward = {}

    def executing(self, robot_time: float) -> bool:
        """Is a trajectory being followed at ``robot_time``?"""
        with self._lock:
            plan = self._executor.plan_at(robot_time) if self._executor is not None else None
        return plan is not None and robot_time <= plan.start + plan.duration

    def _check_continuity(self, plan: PlannedTrajectory, takeover: float, held: np.ndarray) -> None:
        """The trajectory must take over within start_tolerance of the reference it replaces
        (at its start, or now if its start is already past)."""
        new, _ = plan.sample(takeover - plan.start)
        jump = np.abs(new - held)
        if np.any(jump > self.config.start_tolerance):
            j = int(np.argmax(jump))
            when = "its start" if takeover == plan.start else "now (its start is past)"
            raise TrajectoryRejected(
                f"at {when} the trajectory is {jump[j]:.3f} rad from the reference of "
                f"{self.limits.joint_names[j]} (tolerance {self.config.start_tolerance:g} rad)",
                "continuity")

    # -- the control tick (libfranka's thread) ----------------------------------------------
    def _on_tick(self, state: Any, *_: Any) -> None:
        arrival, wall = time.time(), time.perf_counter()
        robot_time = state.time.to_sec()
        t = robot_time + TICK              # franky applies this reference at the next tick
        with self._lock:
            self._robot_time = robot_time
            q_ref, dq_ref = self._executor.reference(t)
            plan = self._executor.plan_at(t)
            feedforward = self._feedforward.get(id(plan)) if plan is not None else None
        qdd = (feedforward.acceleration(t - plan.start)
               if feedforward is not None and feedforward.plan is plan else None)
        if qdd is not None:
            tau_ff = np.asarray(self._model.mass(state), dtype=float) @ qdd
            reference = self.franky.JointReference(q=q_ref, dq=dq_ref, tau_ff=tau_ff)
        else:
            reference = self.franky.JointReference(q=q_ref, dq=dq_ref)
        self._motion.set_reference(reference)
        self._queue(state, arrival, wall)

    def _queue(self, state: Any, arrival: float, wall: float) -> None:
        """Queue a raw state; when the consumer fell 2 s behind, the oldest one makes room
        (the newest state is the one a publisher needs)."""
        try:
            self._raw.put_nowait((state, arrival, wall))
        except queue.Full:
            try:
                self._raw.get_nowait()
            except queue.Empty:              # the consumer took it meanwhile
                pass
            self._raw.put_nowait((state, arrival, wall))
            self.dropped += 1

    def next_sample(self, timeout: Optional[float] = None) -> Optional[RobotSample]:
        """The next robot state as a RobotSample (None after ``timeout`` seconds without one).
        Call from one consumer thread: it also advances the robot clock mapping."""
        try:
            state, arrival, wall = self._raw.get(timeout=timeout) if timeout else self._raw.get_nowait()
        except queue.Empty:
            return None
        robot_time = state.time.to_sec()
        mode = state.robot_mode.name
        self.latest_q = np.asarray(state.q, dtype=float)
        return RobotSample(
            robot_time=robot_time, stamp=self.clock.observe(robot_time, arrival),
            q=np.asarray(state.q, dtype=float),
            dq=np.asarray(state.dq, dtype=float), tau_j=np.asarray(state.tau_J, dtype=float),
            tau_ext=np.asarray(state.tau_ext_hat_filtered, dtype=float), mode=mode,
            success_rate=float(state.control_command_success_rate),
            errors=error_names(state.current_errors) if mode == "Reflex" else (), tick_wall=wall)

    # -- errors --------------------------------------------------------------------------------
    def _watch(self) -> None:
        """Wait for the motion to end; an end we did not ask for is an error. While in error,
        keep reading the robot's state (a robot in reflex still reports it)."""
        try:
            self.robot.join_motion()
            if not self._stopping:
                self._fail("the controller ended without a request", lost=False)
        except Exception as exc:
            if not self._stopping:
                self._fail(one_line(exc), lost=type(exc).__name__ == "NetworkException")
        while self.error is not None and not self._watch_stop.is_set() and not self._connection_lost:
            try:
                state = self._read_state()
                self._queue(state, time.time(), time.perf_counter())
            except RobotError:               # the connection went after all
                self._connection_lost = True
                break
            self._watch_stop.wait(IDLE_POLL)

    def _fail(self, message: str, lost: bool) -> None:
        with self._lock:
            self.error = message
            self._connection_lost = lost
            if self._executor is not None:
                self._executor.stop(self._robot_time)
            self._feedforward = {}
        logger.error("robot stopped: %s", message)
        self.on_error(message)

    def _stop_watcher(self) -> None:
        self._watch_stop.set()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join(timeout=5.0)

    def _read_state(self) -> Any:
        try:
            return self.robot.state
        except Exception as exc:
            raise RobotError(f"cannot read the robot's state: {one_line(exc)}") from exc
