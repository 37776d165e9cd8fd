"""The robot over libfranka (franky): one long-lived joint impedance controller that holds
position or follows the commanded trajectory, every 1 kHz state handed out, errors surfaced.

The ``fci_bridge`` node is a thin ROS layer over :class:`FciBridge`:

- :meth:`FciBridge.connect` reaches the robot (or ``fci_standin``) at an address; every way it
  can fail is one :class:`~panda_sim2real.errors.RobotError` line (unreachable, another robot
  server version, no real-time kernel where one is enforced).
- :meth:`FciBridge.start` keeps franky's ``JointImpedanceTrackingMotion`` running (libfranka
  torque control; the robot adds gravity). Each control tick, in libfranka's thread,
  :meth:`FciBridge._on_tick` samples the scheduled trajectory at the robot's own time (the
  same cubic Hermite :class:`~panda_sim2real.trajectory.TrajectoryExecutor` the simulator
  follows), sets the reference (q, qd, tau_ff = M(q) qdd), and queues the state.
- :meth:`FciBridge.command` validates a trajectory against the Panda's position, velocity,
  acceleration and jerk limits and the current position before it reaches the robot; a rejected
  one leaves the robot holding where it is.
- A reflex or a lost connection ends the motion: it is reported (:attr:`FciBridge.error`), the
  robot holds (it stops by itself), and nothing moves until :meth:`FciBridge.recover`.
"""
from __future__ import annotations

import logging
import math
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from panda_sim2real.errors import ConfigError, RobotError, TrajectoryRejected
from panda_sim2real.limits import JointLimits
from panda_sim2real.motion_limits import HermiteSegments, check_motion_limits
from panda_sim2real.realtime_host import realtime_kernel
from panda_sim2real.time_mapping import RobotClock
from panda_sim2real.trajectory import PlannedTrajectory, TrajectoryExecutor

logger = logging.getLogger(__name__)

REALTIME_MODES = ("enforce", "ignore")
IDLE_POLL = 0.01          # s between state reads while no controller runs (error, recovery)
CONNECT_RETRY = 0.5       # s between connection attempts while the robot refuses


@dataclass(frozen=True)
class BridgeConfig:
    """Gains and checks of the bridge (config/fci_bridge.yaml)."""

    stiffness: np.ndarray            # N m/rad, joint impedance
    damping: np.ndarray              # N m s/rad
    max_delta_tau: float             # N m per tick: the Panda's torque rate limit, 1000 N m/s
    feedforward: bool                # tau_ff = M(q) qdd_ref from the robot's own model
    start_tolerance: float           # rad: first knot at t=0 vs the position held now
    torque_thresholds: np.ndarray    # N m: collision reflex thresholds (libfranka)
    force_thresholds: np.ndarray     # N: Cartesian collision reflex thresholds

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
        return cls(stiffness=vector("stiffness", dof), damping=vector("damping", dof),
                   max_delta_tau=number("max_delta_tau"), feedforward=bool(raw.get("feedforward", True)),
                   start_tolerance=number("start_tolerance"),
                   torque_thresholds=vector("torque_thresholds", dof),
                   force_thresholds=vector("force_thresholds", 6))


@dataclass(frozen=True)
class RobotSample:
    """One robot state: robot time [s], host stamp [s], q [rad], dq [rad/s], measured link-side
    torque tau_J [N m], estimated external torque [N m], robot mode, command success rate."""

    robot_time: float
    stamp: float
    q: np.ndarray
    dq: np.ndarray
    tau_j: np.ndarray
    tau_ext: np.ndarray
    mode: str
    success_rate: float
    tick_wall: float          # time.perf_counter() when the state reached the host

    def is_finite(self) -> bool:
        return bool(np.all(np.isfinite(self.q)) and np.all(np.isfinite(self.dq))
                    and np.all(np.isfinite(self.tau_j)) and np.all(np.isfinite(self.tau_ext)))


def realtime_config(mode: str, franky_module: Any) -> Any:
    if mode not in REALTIME_MODES:
        raise ConfigError(f"~realtime must be one of {REALTIME_MODES}, got {mode!r}")
    return franky_module.RealtimeConfig.Enforce if mode == "enforce" else franky_module.RealtimeConfig.Ignore


def connection_error(address: str, exc: BaseException) -> RobotError:
    """One line for each way franky.Robot(address) fails."""
    name, text = type(exc).__name__, " ".join(str(exc).split())
    if name == "IncompatibleVersionException":
        return RobotError(f"robot at {address} speaks another protocol version: {text}. This "
                          f"franky bundles libfranka 0.21 (server protocol 10, FR3 / system "
                          f">= 5.9); a Panda on an older system image needs a libfranka 0.9.x "
                          f"build of franky (see panda_sim2real/README.md)")
    if name == "RealtimeException":
        return RobotError(f"{text}: run on a PREEMPT_RT kernel (see docker/README.md) or set "
                          f"~realtime:=ignore for a test against fci_standin")
    if name == "NetworkException":
        return RobotError(f"cannot reach a robot at {address}: {text} (check ~robot_ip, the "
                          f"cable, and that FCI is activated in Desk)")
    return RobotError(f"cannot connect to the robot at {address}: {name}: {text}")


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
        self.samples: "queue.SimpleQueue[RobotSample]" = queue.SimpleQueue()
        self.clock = RobotClock()
        self.error: Optional[str] = None
        self.robot = None
        self._motion = None
        self._lock = threading.Lock()
        self._executor: Optional[TrajectoryExecutor] = None
        self._segments: Optional[tuple[PlannedTrajectory, HermiteSegments]] = None
        self._robot_time = 0.0
        self._last_q: Optional[np.ndarray] = None
        self._stopping = False
        self._model = None
        self._watcher: Optional[threading.Thread] = None
        self._watch_stop = threading.Event()
        self.on_error: Callable[[str], None] = lambda message: None

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
        self.clock = RobotClock()
        self._refresh_state()

    def _refresh_state(self) -> None:
        """Read the state once (no controller running): robot time, position, clock."""
        state = self._read_state()
        self._robot_time = state.time.to_sec()
        self._last_q = np.asarray(state.q, dtype=float)
        self.clock.observe(self._robot_time, time.time())

    def start(self) -> None:
        """Start the controller holding the current position, and the watcher thread."""
        if self.robot is None:
            raise RobotError("not connected to a robot")
        q = self._last_q.copy()
        with self._lock:
            self._executor = TrajectoryExecutor(q)
            self._segments = None
        motion = self.franky.JointImpedanceTrackingMotion(
            stiffness=self.config.stiffness, damping=self.config.damping,
            max_delta_tau=self.config.max_delta_tau)
        motion.set_reference(self.franky.JointReference(q=q))
        motion.register_callback(self._on_tick)
        self._motion = motion
        self.error = None
        self._stopping = False
        try:
            self.robot.move(motion, asynchronous=True)
        except Exception as exc:
            raise RobotError(f"the robot refused the controller: {type(exc).__name__}: "
                             f"{' '.join(str(exc).split())}") from exc
        self._watch_stop.clear()
        self._watcher = threading.Thread(target=self._watch, name="fci_watch", daemon=True)
        self._watcher.start()

    def recover(self) -> str:
        """Clear a reflex (libfranka's automatic error recovery) or, when the connection is
        gone, connect anew; then hold the current position again. RobotError if it cannot."""
        if self.error is None and self._watcher is not None and self._watcher.is_alive():
            return "nothing to recover: the robot is holding or tracking"
        self._stop_watcher()
        try:
            recovered = self.robot is not None and bool(self.robot.recover_from_errors())
        except Exception:                    # no connection left to recover on
            recovered = False
        if recovered:
            self._refresh_state()
        else:
            self.connect()
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
    def command(self, trajectory: PlannedTrajectory) -> PlannedTrajectory:
        """Schedule ``trajectory`` (start in host time, None = now). Raises TrajectoryRejected
        (the robot holds where it is) or RobotError (not running); returns it in robot time."""
        if self.error is not None or self._executor is None:
            raise RobotError(f"the robot is not ready: {self.error or 'not started'}; call ~recover")
        with self._lock:
            now = self._robot_time
            start = None if trajectory.start is None else self.clock.to_robot(trajectory.start)
            try:
                plan = self._executor.prepare(
                    PlannedTrajectory(trajectory.times, trajectory.positions, trajectory.velocities,
                                      start), now)
                self._check_start(plan)
                check_motion_limits(plan, self.limits)
            except TrajectoryRejected:
                self._executor.stop(now)
                self._segments = None
                raise
            scheduled = self._executor.command(plan, now)
            self._segments = (scheduled, HermiteSegments.of(scheduled))
        return scheduled

    def hold(self) -> None:
        """Stop following any trajectory; hold the reference of now."""
        with self._lock:
            if self._executor is not None:
                self._executor.stop(self._robot_time)
                self._segments = None

    def executing(self, robot_time: float) -> bool:
        """Is a trajectory being followed at ``robot_time``?"""
        segments = self._segments
        return segments is not None and robot_time <= segments[0].start + segments[0].duration

    def _check_start(self, plan: PlannedTrajectory) -> None:
        held, _ = self._executor.peek(plan.start)
        jump = np.abs(plan.positions[0] - held)
        if np.any(jump > self.config.start_tolerance):
            j = int(np.argmax(jump))
            raise TrajectoryRejected(
                f"the first point is {jump[j]:.3f} rad from where {self.limits.joint_names[j]} "
                f"will be at the start (tolerance {self.config.start_tolerance:g} rad)")

    # -- the control tick (libfranka's thread) ----------------------------------------------
    def _on_tick(self, state: Any, *_: Any) -> None:
        arrival, wall = time.time(), time.perf_counter()
        robot_time = state.time.to_sec()
        q = np.asarray(state.q, dtype=float)
        with self._lock:
            self._robot_time = robot_time
            q_ref, dq_ref = self._executor.reference(robot_time)
            segments = self._segments
        tau_ff = None
        if self.config.feedforward and segments is not None:
            qdd = _acceleration(segments, robot_time)
            if qdd is not None:
                mass = np.asarray(self._model.mass(state), dtype=float).reshape(7, 7)
                tau_ff = mass @ qdd
        reference = (self.franky.JointReference(q=q_ref, dq=dq_ref, tau_ff=tau_ff)
                     if tau_ff is not None else self.franky.JointReference(q=q_ref, dq=dq_ref))
        self._motion.set_reference(reference)
        self._last_q = q
        self._put(state, robot_time, arrival, wall, q)

    def _put(self, state: Any, robot_time: float, arrival: float, wall: float, q: np.ndarray) -> None:
        self.samples.put(RobotSample(
            robot_time=robot_time, stamp=self.clock.observe(robot_time, arrival), q=q,
            dq=np.asarray(state.dq, dtype=float), tau_j=np.asarray(state.tau_J, dtype=float),
            tau_ext=np.asarray(state.tau_ext_hat_filtered, dtype=float),
            mode=state.robot_mode.name, success_rate=float(state.control_command_success_rate),
            tick_wall=wall))

    # -- errors --------------------------------------------------------------------------------
    def _watch(self) -> None:
        """Wait for the motion to end; an end we did not ask for is an error. While in error,
        keep reading the robot's state (a robot in reflex still reports it)."""
        try:
            self.robot.join_motion()
            if not self._stopping:
                self._fail("the controller ended without a request")
        except Exception as exc:
            if not self._stopping:
                self._fail(f"{type(exc).__name__}: {' '.join(str(exc).split())}")
        while self.error is not None and not self._watch_stop.is_set():
            try:
                state = self._read_state()
                self._put(state, state.time.to_sec(), time.time(), time.perf_counter(),
                          np.asarray(state.q, dtype=float))
                pause = IDLE_POLL
            except RobotError:               # disconnected: nothing to read until recover
                pause = 1.0
            self._watch_stop.wait(pause)

    def _fail(self, message: str) -> None:
        self.error = message
        with self._lock:
            self._segments = None
            if self._executor is not None:
                self._executor.hold(self._last_q)
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
            raise RobotError(f"cannot read the robot's state: {type(exc).__name__}: "
                             f"{' '.join(str(exc).split())}") from exc

    def current_errors(self) -> list[str]:
        """Names of the robot's active errors (libfranka's Errors), [] when none or unknown."""
        try:
            text = str(self.robot.state.current_errors)
        except Exception:
            return []
        return [e.strip().strip('"') for e in text.strip("[]").split(",") if e.strip()]


def _acceleration(segments: tuple[PlannedTrajectory, HermiteSegments], robot_time: float) -> Optional[np.ndarray]:
    """qdd of the scheduled trajectory at ``robot_time`` (None outside it)."""
    plan, seg = segments
    t = robot_time - plan.start
    if t <= plan.times[0] or t >= plan.times[-1]:
        return None
    k = int(np.searchsorted(plan.times, t, side="right")) - 1
    s = np.array([(t - plan.times[k]) / seg.h[k]])
    one = HermiteSegments(tuple(c[k:k + 1] for c in seg.c), seg.h[k:k + 1])
    return one.acceleration(s)[0]
