"""Cartesian position controller, CPC (paper 004 §IV-B), at 200 Hz.

A PID on each fingertip's position error through the damped pseudo-inverse, with the exponential
gain schedule of §IV-B and gravity compensation::

    tau_i = J_i^T (J_i J_i^T + lambda I)^-1 (K_p(t) e_i + K_i int e_i + K_d ed_i) + g_i(q)

The motion primitives ABOVE, BESIDE, CLOSE, MOVE, HOLD (and RETREAT with a re-grasp when the cube
is lost) move the targets; the grip comes from targets ``press_depth`` inside the cube along the
grasp's squeeze directions. Additions to the paper, each behind its parameter: the weight
feed-forward (``weight_feedforward``), the camera integral (``cube_gain``) and the yaw at levels
1-3 that keeps a finger off its weak base joint at far goals (``GOAL_YAW_TORQUE``,
cpc_grasp_plan.py). Grasps are planned off the control call (grasp_planner.py). Details and the
measurements behind them: README.md, "How the controllers work". Simulation results.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Optional, Tuple

import numpy as np

from trifinger_controllers import cube as cube_geometry
from trifinger_controllers.controllers.base import CallInterval, Controller
from trifinger_controllers.controllers.cpc_grasp_plan import CpcGraspSelection, GraspPlan
from trifinger_controllers.controllers.grasp_phases import GraspSpec, Phase, check_setup, grasp_selection
from trifinger_controllers.controllers.grasp_planner import DEFAULT_LATENCY, GraspPlanner
from trifinger_controllers.controllers.stamped_history import StampedHistory
from trifinger_controllers.grasp_geometry import Grasp
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.params import Parameter, ParameterSet
from trifinger_controllers.types import CUBE_MASS, N_FINGERS, CubePose, Observation

GRAVITY = 9.81
#: The cube is lost when fewer than two fingertip centres are this close [m] to its surface
#: (touching tips are TIP_RADIUS = 12 mm from it).
REGRASP_DISTANCE = 0.025
#: Duration [s] of the RETREAT before a new grasp, and how far [m] the tips back off.
RETREAT_SECONDS = 0.6
RETREAT_DISTANCE = 0.04
#: A tip is at its approach target when closer than this [m].
ARRIVAL_TOLERANCE = 0.012
#: Longest time [s] in ABOVE / BESIDE before moving on anyway.
APPROACH_TIMEOUT = 3.0
#: The integral of the tip error is kept within +-kp_max * INTEGRAL_LIMIT (a tip error of 1 cm).
INTEGRAL_LIMIT = 0.01
#: Limit [m] of the camera correction kappa of the commanded cube position.
CORRECTION_LIMIT = 0.02
#: Camera errors larger than this [m] are not integrated (slip or loss, not an offset).
CORRECTION_ERROR_LIMIT = 0.02
#: Fingertip history kept for the loss check [controller calls] (0.5 s at 200 Hz).
TIP_HISTORY = 100
#: Limit [rad] of each component of the orientation correction.
ROTATION_CORRECTION_LIMIT = 0.5
#: Grasp tried at a re-grasp where the controller's own reaches none (TG always exists).
FALLBACK_GRASPS = ("tg",)

#: Hyperparameters of CPC with defaults (tuned in simulation, level 3) and the intervals BO
#: searches (§VI: "CPC: gains, including values for the exponential gain scheduling").
CPC_PARAMETERS = ParameterSet("cpc", [
    Parameter("kp", 1.5, 0.3, 6.0, "initial P gain of the tip PID [N m/rad]", log=True),
    Parameter("kp_max", 4.0, 0.5, 12.0, "clip of the exponential gain scheduling [N m/rad]", log=True),
    Parameter("gain_growth", 1.3, 1.0, 2.0, "gain factor per gain_interval (gain scheduling)"),
    Parameter("gain_interval", 0.25, 0.02, 2.0, "gain scheduling interval [s]", log=True),
    Parameter("ki", 4.0, 0.0, 30.0, "I gain of the tip PID [N m/(rad s)]"),
    Parameter("kd", 0.04, 0.0, 0.2, "D gain of the tip PID [N m s/rad]"),
    Parameter("damping", 1e-4, 1e-6, 1e-2, "lambda of the damped pseudo-inverse [m^2]", log=True),
    Parameter("press_depth", 0.015, 0.005, 0.04, "targets inside the faces (grip) [m]"),
    Parameter("speed", 0.08, 0.02, 0.3, "speed of the cube reference [m/s]", log=True),
    Parameter("lift_height", 0.02, 0.0, 0.05, "lift before moving sideways [m]"),
    Parameter("cube_gain", 3.0, 0.0, 8.0, "camera feedback integral gain [1/s]"),
    Parameter("weight_feedforward", 1.0, 0.0, 2.0, "fraction of the cube weight fed forward"),
    Parameter("approach_speed", 0.3, 0.05, 1.0, "speed of the approach waypoints [m/s]", log=True),
    Parameter("approach_clearance", 0.02, 0.005, 0.05, "tips outside the faces when approaching [m]"),
    Parameter("approach_height", 0.03, 0.01, 0.08, "tips above the cube's top first [m]"),
    Parameter("grasp_time", 0.6, 0.1, 2.0, "duration of CLOSE [s]"),
])



# ------------------------------------------------------------------------------ §IV-B building blocks
def damped_pseudo_inverse(jac: np.ndarray, damping: float) -> np.ndarray:
    """(..., 3, 3) ``J^T (J J^T + lambda I)^-1`` (§IV-B): J^-1 where J is regular, bounded near
    singular configurations at the cost of a slight bias."""
    jac = np.asarray(jac, dtype=float)
    jjt = jac @ np.swapaxes(jac, -1, -2) + damping * np.eye(jac.shape[-2])
    # J^T (J J^T + l I)^-1 = ((J J^T + l I)^-1 J)^T since J J^T + l I is symmetric
    return np.swapaxes(np.linalg.solve(jjt, jac), -1, -2)


def cartesian_torques(jac: np.ndarray, command: np.ndarray, damping: float) -> np.ndarray:
    """(3, 3) joint torques ``J_i^T (J_i J_i^T + lambda I)^-1 u_i`` of the Cartesian commands
    ``u`` (3, 3) of the three fingers."""
    return np.einsum("fij,fj->fi", damped_pseudo_inverse(jac, damping), command)


def scheduled_gain(kp: float, growth: float, interval: float, kp_max: float, elapsed: float) -> float:
    """The exponential gain schedule of §IV-B: ``min(kp * growth^(elapsed / interval), kp_max)``
    (``kp`` alone once it exceeds ``kp_max``)."""
    exponent = max(elapsed, 0.0) / interval
    if growth <= 1.0 or kp >= kp_max:
        return kp
    # the clip is reached at exponent log(kp_max / kp) / log(growth): avoid overflowing the power
    if exponent >= np.log(kp_max / kp) / np.log(growth):
        return kp_max
    return kp * growth ** exponent


class CubePath:
    """The cube reference of MOVE: piecewise linear through ``waypoints`` (k, 3) at ``speed``
    [m/s] from time ``start``, with the orientation turned from ``q_start`` to ``q_end``
    proportionally to the distance travelled."""

    def __init__(self, waypoints: np.ndarray, speed: float, start: float,
                 q_start: np.ndarray, q_end: np.ndarray) -> None:
        self.waypoints = np.asarray(waypoints, dtype=float)
        lengths = np.linalg.norm(np.diff(self.waypoints, axis=0), axis=1)
        self.cumulative = np.concatenate([[0.0], np.cumsum(lengths)])
        self.length = float(self.cumulative[-1])
        self.speed = float(speed)
        self.start = float(start)
        self.q_start = np.asarray(q_start, dtype=float)
        turn = cube_geometry.relative_rotation_vector(q_start, q_end)
        self.turn = turn if np.linalg.norm(turn) > 1e-9 else np.zeros(3)
        self.q_end = cube_geometry.multiply(cube_geometry.from_rotation_vector(self.turn), self.q_start)

    def duration(self) -> float:
        return self.length / self.speed

    def _distance(self, t: float) -> float:
        return float(np.clip((t - self.start) * self.speed, 0.0, self.length))

    def position(self, t: float) -> np.ndarray:
        s = self._distance(t)
        if self.length <= 0.0:
            return self.waypoints[-1].copy()
        k = int(np.clip(np.searchsorted(self.cumulative, s, side="right") - 1, 0, len(self.waypoints) - 2))
        span = self.cumulative[k + 1] - self.cumulative[k]
        a = 0.0 if span <= 0 else (s - self.cumulative[k]) / span
        return (1 - a) * self.waypoints[k] + a * self.waypoints[k + 1]

    def velocity(self, t: float) -> np.ndarray:
        s = self._distance(t)
        if self.length <= 0.0 or s >= self.length or t < self.start:
            return np.zeros(3)
        k = int(np.clip(np.searchsorted(self.cumulative, s, side="right") - 1, 0, len(self.waypoints) - 2))
        d = self.waypoints[k + 1] - self.waypoints[k]
        n = np.linalg.norm(d)
        return np.zeros(3) if n <= 0 else d * (self.speed / n)

    def orientation(self, t: float) -> np.ndarray:
        fraction = 1.0 if self.length <= 0.0 else self._distance(t) / self.length
        if fraction >= 1.0:
            return self.q_end
        if not np.any(self.turn):
            return self.q_start
        return cube_geometry.multiply(cube_geometry.from_rotation_vector(fraction * self.turn), self.q_start)

    def done(self, t: float) -> bool:
        return self._distance(t) >= self.length


# ------------------------------------------------------------------------------ the controller
class CartesianPositionController(Controller):
    """CPC of §IV-B with any grasp (default TG), 200 Hz.

    Args:
        grasp: grasp name (tg, cg, og, pg) or names (the first reachable), a
            :class:`Grasp` (cube frame, used as is), or a callable ``observation ->
            Grasp`` called at every (re)grasp, on the grasp planner's thread.
        params: a :data:`CPC_PARAMETERS` set (default values if None).
        kinematics: the fingers' kinematics (a new one if None).
        level: RRC level of the task: level 4 also turns the cube to the goal orientation,
            levels 1-3 keep the orientation it is grasped with.
    """

    name = "cpc"
    rate_hz = 200.0

    def __init__(self, grasp: GraspSpec = "tg", params: Optional[ParameterSet] = None,
                 kinematics: Optional[FingerKinematics] = None, level: int = 3) -> None:
        self.params = check_setup("cpc", params, CPC_PARAMETERS, level)
        # plain attributes: read every call (ParameterSet lookups cost ~1 us each)
        self._p = SimpleNamespace(**self.params.to_dict())
        self._weight_force = self._p.weight_feedforward * CUBE_MASS * GRAVITY
        self.kin = kinematics if kinematics is not None else FingerKinematics()
        self.level = int(level)
        self.grasp_planner: GraspPlanner[GraspPlan] = GraspPlanner(
            CpcGraspSelection(grasp_selection("cpc", grasp, self.level, FALLBACK_GRASPS), self._weight_force),
            self.kin, DEFAULT_LATENCY, name="cpc-grasp-planner")
        self.grasp: Optional[Grasp] = None
        self.grasp_plan: Optional[GraspPlan] = None
        self.phase = Phase.ABOVE
        self.regrasps = 0

    def set_asynchronous_planning(self, enabled: bool) -> None:
        self.grasp_planner.asynchronous = bool(enabled)

    # ----------------------------------------------------------------------------- episode
    def reset(self, observation: Observation) -> None:
        self.regrasps = 0
        self.grasp = None
        self._interval = CallInterval()
        self._waypoint = self.kin.tip_positions(observation.robot.position)
        self._start_grasp(observation, self.grasp_planner.plan(observation))

    def _start_grasp(self, observation: Observation, plan: GraspPlan) -> None:
        """Start approaching the grasp of ``plan``."""
        self.grasp_plan = plan
        self.grasp = plan.grasp
        # tip centres touching the contacts, and pressed into the cube, cube frame
        self._surface_offsets = plan.surface_offsets
        self._pressed_offsets = self._surface_offsets + self._p.press_depth * plan.squeeze
        self._support = plan.support
        self._outward = -self.grasp.normals
        self._rotated_key: Optional[tuple] = None
        self._goal_turn = plan.goal_turn
        self._grasp_pose = observation.cube
        self._path: Optional[CubePath] = None
        self._correction = np.zeros(3)
        self._rotation_correction = np.zeros(3)
        self._correction_turn: Optional[np.ndarray] = None   # its quaternion, None if zero
        self._q_cmd_key: Optional[tuple] = None
        self._correction_updates = 0
        self._last_stamp = observation.cube.stamp
        self._lost_images = 0
        self._tips_seen = StampedHistory(TIP_HISTORY, tips=(N_FINGERS, 3))
        self._enter(Phase.ABOVE, observation.robot.time)

    def _enter(self, phase: Phase, t: float) -> None:
        """Switch to ``phase`` at time ``t``. The gain schedule and the PID integral restart with
        every motion primitive except MOVE (and HOLD), which continue CLOSE's: the grip built up
        while closing must not relax when the cube starts moving."""
        self.phase = phase
        self._phase_start = t
        if phase is not Phase.MOVE:
            self._schedule_start = t
            self._integral = np.zeros((N_FINGERS, 3))

    # ----------------------------------------------------------------------------- targets
    def _approach_targets(self, pose: CubePose, above: bool) -> np.ndarray:
        p = self._p
        offsets = self._surface_offsets + p.approach_clearance * self._outward
        targets = cube_geometry.to_world(pose, offsets)
        if above:  # approach_height above the cube's highest corner
            targets[:, 2] = cube_geometry.corners(pose)[:, 2].max() + p.approach_height
        return targets

    def _held(self, position: np.ndarray, orientation: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(pressed tip targets, weight support forces) in the world for the cube at the given
        pose (rotations cached: the orientation is constant at levels 1-3)."""
        key = tuple(orientation)
        if key != self._rotated_key:
            self._rotated_key = key
            rotation = cube_geometry.to_matrix(orientation).T
            self._rotated_offsets = self._pressed_offsets @ rotation
            self._rotated_support = self._support @ rotation
        return self._rotated_offsets + position, self._rotated_support

    def _move_waypoint(self, target: np.ndarray, dt: float) -> np.ndarray:
        """Advance the approach waypoints towards ``target`` at approach_speed."""
        step = self._p.approach_speed * dt
        delta = target - self._waypoint
        dist = np.linalg.norm(delta, axis=1, keepdims=True)
        self._waypoint = self._waypoint + delta * np.minimum(1.0, step / np.maximum(dist, 1e-9))
        return self._waypoint

    def _start_move(self, observation: Observation) -> None:
        p = self._p
        t = observation.robot.time
        start = np.asarray(self._grasp_pose.position, dtype=float)
        goal = np.asarray(observation.goal.position, dtype=float)
        lifted = start + np.array([0.0, 0.0, p.lift_height])
        q_start = np.asarray(self._grasp_pose.orientation, dtype=float)
        if self.level == 4:
            q_end = np.asarray(observation.goal.orientation, dtype=float)
        else:
            q_end = cube_geometry.multiply(self._goal_turn, q_start)
        self._path = CubePath(np.stack([start, lifted, goal]), p.speed, t, q_start, q_end)
        self._last_stamp = observation.cube.stamp
        self._enter(Phase.MOVE, t)

    def _camera_feedback(self, observation: Observation) -> None:
        """Integrate the reference-vs-observed cube error of a new image into the command
        correction; count images that show the cube lost."""
        pose = observation.cube
        if pose.stamp == self._last_stamp or self._path is None:
            return
        period = pose.stamp - self._last_stamp if self._last_stamp is not None else 0.1
        self._last_stamp = pose.stamp
        c_ref = self._path.position(pose.stamp)
        q_ref = self._path.orientation(pose.stamp)
        if self._touching_at(pose) < 2:
            self._lost_images += 1
        else:
            self._lost_images = 0
        error = c_ref - np.asarray(pose.position, dtype=float)
        if np.linalg.norm(error) < CORRECTION_ERROR_LIMIT:
            gain = self._p.cube_gain * min(max(period, 0.0), 0.2)
            self._correction = np.clip(self._correction + gain * error, -CORRECTION_LIMIT, CORRECTION_LIMIT)
            turn = cube_geometry.relative_rotation_vector(pose.orientation, q_ref)
            self._rotation_correction = np.clip(self._rotation_correction + gain * turn,
                                                -ROTATION_CORRECTION_LIMIT, ROTATION_CORRECTION_LIMIT)
            self._correction_turn = cube_geometry.from_rotation_vector(self._rotation_correction)
            self._correction_updates += 1

    def _commanded_orientation(self, q_path: np.ndarray) -> np.ndarray:
        """The path orientation turned by the camera correction (cached between images while
        the path does not turn)."""
        if self._correction_turn is None:
            return q_path
        key = (q_path.tobytes(), self._correction_updates)
        if key != self._q_cmd_key:
            self._q_cmd_key = key
            self._q_cmd = cube_geometry.multiply(self._correction_turn, q_path)
        return self._q_cmd

    def _touching_at(self, pose: CubePose) -> int:
        """Number of fingertips within REGRASP_DISTANCE of the cube's surface when the image of
        ``pose`` was taken (3 if no tips were logged then)."""
        k = self._tips_seen.index_at(pose.stamp, 0.01)
        if k is None:
            return N_FINGERS
        return cube_geometry.points_near_surface(pose, self._tips_seen.values["tips"][k], REGRASP_DISTANCE)

    # ----------------------------------------------------------------------------- control
    def _torque(self, observation: Observation) -> np.ndarray:
        if self.grasp is None:
            raise RuntimeError("cpc: reset() must be called before compute()")
        p = self._p
        robot = observation.robot
        t = robot.time
        dt = self._interval(t)
        q = robot.position
        tips = self.kin.tip_positions(q)
        jac = self.kin.tip_jacobians(q)
        tip_velocity = np.einsum("fij,fj->fi", jac, robot.velocity.reshape(N_FINGERS, 3))
        elapsed = t - self._phase_start
        scheduled = t - self._schedule_start
        target_velocity = np.zeros((N_FINGERS, 3))
        weight = 0.0        # fraction of the weight feed-forward
        support = np.zeros((N_FINGERS, 3))

        if self.phase in (Phase.ABOVE, Phase.BESIDE):
            goal_targets = self._approach_targets(observation.cube, self.phase is Phase.ABOVE)
            targets = self._move_waypoint(goal_targets, dt)
            arrived = np.all(np.linalg.norm(goal_targets - tips, axis=1) < ARRIVAL_TOLERANCE)
            if arrived or elapsed > APPROACH_TIMEOUT:
                if self.phase is Phase.ABOVE:
                    self._enter(Phase.BESIDE, t)
                else:
                    self._grasp_pose = observation.cube
                    self._enter(Phase.CLOSE, t)
        elif self.phase is Phase.CLOSE:
            pose = self._grasp_pose
            held, support = self._held(pose.position, pose.orientation)
            targets = self._move_waypoint(held, dt)
            weight = min(1.0, 2.0 * elapsed / p.grasp_time)
            if elapsed >= p.grasp_time:
                self._grasp_pose = observation.cube
                self._start_move(observation)
        elif self.phase is Phase.RETREAT:
            targets = self._move_waypoint(self._retreat_targets, dt)
            if elapsed >= RETREAT_SECONDS:
                # a grasp for the cube as seen now, chosen off this call: the tips hold their
                # retreat targets until the plan is taken
                plan = self.grasp_planner.poll(observation, regrasp=True)
                if plan is not None:
                    self.regrasps += 1
                    self._start_grasp(observation, plan)
                    return self._torque(observation)
        else:  # MOVE, HOLD: the grasp moved with the desired cube motion
            weight = 1.0
            assert self._path is not None
            self._tips_seen.record(t, tips=tips)
            self._camera_feedback(observation)
            if self._lost_images >= 2:
                self._retreat_targets = tips + RETREAT_DISTANCE * (
                    cube_geometry.rotate(self._grasp_pose.orientation, self._outward)
                    + np.array([0.0, 0.0, 1.0]))
                self._waypoint = tips.copy()
                self._enter(Phase.RETREAT, t)
                return self._torque(observation)
            if self.phase is Phase.MOVE and self._path.done(t):
                self.phase = Phase.HOLD  # gains and integrals carry on: the grip must not relax
            c_cmd = self._path.position(t) + self._correction
            q_cmd = self._commanded_orientation(self._path.orientation(t))
            targets, support = self._held(c_cmd, q_cmd)
            target_velocity = np.tile(self._path.velocity(t), (N_FINGERS, 1))
            self._waypoint = targets

        feedforward = self.kin.gravity(q).reshape(N_FINGERS, 3)
        if weight > 0.0:
            feedforward = feedforward + weight * np.einsum("fji,fj->fi", jac, support)
        return self._pid(targets, target_velocity, tips, tip_velocity, jac, scheduled, dt, feedforward)

    def _pid(self, targets: np.ndarray, target_velocity: np.ndarray, tips: np.ndarray,
             tip_velocity: np.ndarray, jac: np.ndarray, elapsed: float, dt: float,
             feedforward: np.ndarray) -> np.ndarray:
        """The §IV-B torque: damped pseudo-inverse of the scheduled PID command plus the
        feed-forward torques (3, 3): gravity compensation and the cube's weight."""
        p = self._p
        error = targets - tips
        kp = scheduled_gain(p.kp, p.gain_growth, p.gain_interval, p.kp_max, elapsed)
        if p.ki > 0.0:
            limit = p.kp_max * INTEGRAL_LIMIT / p.ki
            self._integral = np.minimum(np.maximum(self._integral + error * dt, -limit), limit)
        command = kp * error + p.ki * self._integral + p.kd * (target_velocity - tip_velocity)
        return (cartesian_torques(jac, command, p.damping) + feedforward).reshape(-1)

    # ----------------------------------------------------------------------------- inspection
    def commanded_pose(self, t: float) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """(position, orientation) of the commanded cube pose at time ``t`` once moving."""
        if self._path is None:
            return None
        return self._path.position(t) + self._correction, self._path.orientation(t)
