"""Cartesian impedance controller, CIC (paper 004 §IV-C), at 100 Hz.

Per finger the command is ``tau = tau_1 + tau_2 + tau_3 + tau_4 + g(q)`` (§IV-C): the impedance
law ``tau_1`` about the reference ``x^_r = x_r + K1 (x_g - x_c)``, the grasp force ``tau_2`` along
the inward normals, ``tau_3`` cancelling its resultant, and ``tau_4`` for the orientation moment
``Omega = K3 phi r_phi`` (the terms: cic_terms.py). Additions needed in simulation with the
tracker's 10 Hz, delayed and noisy poses, each behind its parameter: ``isotropic_impedance``,
``moment_cancellation``, ``weight_feedforward``, the moving sub-goal x_g (``goal_speed``,
``max_lead``, ``delay_compensation``), the camera integral with anti-windup (``integral_gain``;
these two and the floor band: cic_camera.py) and the torque limit taken by the grasp as a whole
(saturation.py, ``fit_to_limit`` with ``together``).

Phases: ABOVE, BESIDE, CLOSE, MOVE, and RETREAT with a re-grasp when the cube is lost; grasps are
planned off the control call (grasp_planner.py). The derivation, the reasons for each addition
and the measurements behind them: README.md, "How the controllers work". Simulation results.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Optional

import numpy as np

from trifinger_controllers import cube as cube_geometry
from trifinger_controllers.controllers.base import CallInterval, Controller
from trifinger_controllers.controllers.cic_camera import CameraFeedback
from trifinger_controllers.controllers.cic_terms import (
    ISOTROPIC_MASS,
    force_torques,
    grasp_pseudo_inverse,
    impedance_torques,
    resultant_cancelling_forces,
    tip_forces,
    total_moment,
)
from trifinger_controllers.controllers.grasp_phases import GraspSpec, Phase, check_setup, grasp_selection
from trifinger_controllers.controllers.grasp_planner import DEFAULT_LATENCY, GraspPlanner
from trifinger_controllers.controllers.rotation_matrices import (
    matrix_rotation_vector,
    rotation_between,
    rotation_from_vector,
)
from trifinger_controllers.controllers.saturation import fit_to_limit, windup_directions
from trifinger_controllers.controllers.stamped_history import StampedHistory
from trifinger_controllers.grasp_geometry import TIP_RADIUS, Grasp
from trifinger_controllers.grasps import GraspError
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.params import Parameter, ParameterSet
from trifinger_controllers.types import CUBE_MASS, N_FINGERS, CubePose, Observation

GRAVITY = 9.81
#: Controller calls of history (tips, x_g) kept to match camera images (0.5 s).
HISTORY = 50
#: ABOVE keeps the tips at least this high [m] over the cube's highest corner.
SAFE_HEIGHT = 0.035
#: A tip is at its approach target when closer than this [m].
ARRIVAL_TOLERANCE = 0.012
#: ... and at its BESIDE target (the height at which it then closes) [m].
BESIDE_TOLERANCE = 0.004
#: Longest time [s] in ABOVE / BESIDE before moving on anyway.
APPROACH_TIMEOUT = 3.0
#: The cube is lost if fewer than two fingertip centres are this close [m] to its surface.
REGRASP_DISTANCE = 0.025
#: Grasps tried, in this order, at a re-grasp where the controller's own reaches none.
FALLBACK_GRASPS = ("pg", "og", "tg")
#: Duration [s] of RETREAT and how far [m] the tips back off outwards and upwards.
RETREAT_SECONDS = 0.6
RETREAT_DISTANCE = 0.04

#: Hyperparameters of CIC with defaults (tuned in simulation, level 3, CG) and the intervals BO
#: searches (§VI: "CIC: gains and reference position x_r").
CIC_PARAMETERS = ParameterSet("cic", [
    Parameter("stiffness_xy", 700.0, 100.0, 3000.0, "K of tau_1, x and y [1/s^2]", log=True),
    Parameter("stiffness_z", 750.0, 100.0, 3000.0, "K of tau_1, z [1/s^2]", log=True),
    Parameter("damping", 20.0, 0.0, 60.0, "D of tau_1 [1/s] (paper: 0)"),
    Parameter("isotropic_impedance", 1.0, 0.0, 1.0,
              "1: M_d shaped like the tip inertia (isotropic stiffness); 0: M_d = I", integer=True),
    Parameter("position_gain", 1.0, 0.0, 3.0, "K1 of x^_r = x_r + K1 (x_g - x_c)"),
    Parameter("max_lead", 0.01, 0.005, 0.05, "x_g waits while this far ahead of the cube [m]", log=True),
    Parameter("integral_gain", 2.0, 0.0, 10.0, "integral of x_g - x_c into x^_r [1/s]"),
    Parameter("integral_limit", 0.04, 0.0, 0.08, "clip of the integral shift [m]"),
    Parameter("grasp_force", 1.0, 0.0, 3.0, "K2 of F_2 = K2 d [N]"),
    Parameter("normal_preference", 1e-3, 1e-3, 1e3, "eps of tau_3 (small: cancel along normals)", log=True),
    Parameter("orientation_gain", 0.03, 0.0, 0.2, "K3 of Omega = K3 phi r_phi [N m/rad]"),
    Parameter("turn_speed", 0.3, 0.05, 1.5, "level 4: speed of the reference orientation [rad/s]", log=True),
    Parameter("moment_cancellation", 1.0, 0.0, 1.0, "share of the other terms' moment tau_4 cancels"),
    Parameter("slip_correction", 0.0, 0.0, 5.0,
              "rate at which the camera corrects the tips' orientation estimate [1/s]"),
    Parameter("reference_depth", 0.01, 0.0, 0.04, "x_r behind each contact, inside the cube [m]"),
    Parameter("reference_height", 0.0, -0.02, 0.02, "x_r raised by [m]"),
    Parameter("contact_height", 0.01, -0.02, 0.02, "contacts on side faces raised by [m]"),
    Parameter("goal_speed", 0.05, 0.01, 0.3, "speed of the sub-goal x_g [m/s]", log=True),
    Parameter("lift_height", 0.03, 0.0, 0.05, "sub-goal: lift before moving sideways [m]"),
    Parameter("weight_feedforward", 1.0, 0.0, 2.0, "fraction of the cube weight fed forward"),
    Parameter("delay_compensation", 1.0, 0.0, 1.0,
              "1: camera pose moved by the command since the image", integer=True),
    Parameter("approach_stiffness", 400.0, 50.0, 2000.0, "K while approaching [1/s^2]", log=True),
    Parameter("approach_damping", 30.0, 5.0, 80.0, "D while approaching [1/s]"),
    Parameter("approach_speed", 0.3, 0.05, 1.0, "speed of the approach waypoints [m/s]", log=True),
    Parameter("approach_clearance", 0.025, 0.005, 0.05, "tips outside the faces when approaching [m]"),
    Parameter("approach_height", 0.06, 0.01, 0.08, "tips above the contacts first [m]"),
    Parameter("close_time", 0.5, 0.1, 2.0, "duration of CLOSE [s]"),
])


# ------------------------------------------------------------------------------ the controller
#: The phases in which the tips approach or leave the cube (no grasp held).
APPROACH_PHASES = (Phase.ABOVE, Phase.BESIDE, Phase.RETREAT)


@dataclass(frozen=True)
class FingerState:
    """The fingers at one control call: time ``t`` and the step ``dt`` since the last call [s],
    tip positions (3, 3), tip Jacobians (3, 3, 3), the mass matrix's finger blocks (None with
    isotropic impedance), tip velocities (3, 3) and gravity torques (3, 3)."""

    t: float
    dt: float
    tips: np.ndarray
    jac: np.ndarray
    mass_blocks: Optional[np.ndarray]
    tip_velocity: np.ndarray
    gravity: np.ndarray


class CartesianImpedanceController(CameraFeedback, Controller):
    """CIC of §IV-C with any grasp (default CG), 100 Hz.

    Args:
        grasp: grasp name (tg, cg, og, pg) or names (the first reachable), a
            :class:`Grasp` (cube frame, used as is), or a callable ``observation ->
            Grasp`` called at every (re)grasp, on the grasp planner's thread.
        params: a :data:`CIC_PARAMETERS` set (default values if None).
        kinematics: the fingers' kinematics (a new one if None).
        level: RRC level: level 4 turns the cube to the goal orientation (tau_4), levels 1-3
            hold the orientation it is grasped with.
    """

    name = "cic"
    rate_hz = 100.0

    def __init__(self, grasp: GraspSpec = "cg", params: Optional[ParameterSet] = None,
                 kinematics: Optional[FingerKinematics] = None, level: int = 3) -> None:
        self.params = check_setup("cic", params, CIC_PARAMETERS, level)
        self._p = SimpleNamespace(**self.params.to_dict())  # plain attributes: read every call
        self.kin = kinematics if kinematics is not None else FingerKinematics()
        self.level = int(level)
        self.grasp_planner: GraspPlanner[Grasp] = GraspPlanner(
            grasp_selection("cic", grasp, self.level, FALLBACK_GRASPS), self.kin, DEFAULT_LATENCY,
            name="cic-grasp-planner")
        self.grasp: Optional[Grasp] = None
        self._matrix_key = b""
        self._matrix_value = np.eye(3)
        self.phase = Phase.ABOVE
        self.regrasps = 0
        self._band_key: Optional[tuple[float, float]] = None
        self._band: Optional[tuple[float, float]] = None
        p = self._p
        self._stiffness = np.array([p.stiffness_xy, p.stiffness_xy, p.stiffness_z])
        self._weight = np.array([0.0, 0.0, p.weight_feedforward * CUBE_MASS * GRAVITY / N_FINGERS])

    def set_asynchronous_planning(self, enabled: bool) -> None:
        self.grasp_planner.asynchronous = bool(enabled)

    # ----------------------------------------------------------------------------- episode
    def reset(self, observation: Observation) -> None:
        self.regrasps = 0
        self._interval = CallInterval()
        self._waypoint = self.kin.tip_positions(observation.robot.position)
        # the first grasp has no fallback to other strategies: GraspError if the cube is out of reach
        self._start_grasp(observation, self.grasp_planner.plan(observation))

    def _start_grasp(self, observation: Observation, grasp: Grasp) -> None:
        """Approach ``grasp``."""
        p = self._p
        self.grasp = grasp
        self._normals = self.grasp.normals                                   # inward, cube frame
        # tip centres touching the faces, contacts on side faces raised by contact_height (above
        # the centre of mass the cube hangs from its contacts like a pendulum instead of
        # balancing on them)
        up = cube_geometry.rotate(cube_geometry.conjugate(observation.cube.orientation),
                                  np.array([0.0, 0.0, 1.0]))
        side = np.abs(self._normals @ up) < 0.5
        self._surface = self.grasp.tip_offsets() + p.contact_height * side[:, None] * up
        self._references = self._surface + (TIP_RADIUS + p.reference_depth) * self._normals
        self._history = StampedHistory(HISTORY, tips=(N_FINGERS, 3), goal=(3,), rotation=(3, 3))
        self._slip = np.zeros(3)
        self._lead = 0.0
        self._integral = np.zeros(3)
        self._windup = np.zeros((0, 3))
        self._lost_images = 0
        self._last_stamp = observation.cube.stamp
        self._lost_stamp = observation.cube.stamp
        self._held_orientation = np.asarray(observation.cube.orientation, dtype=float)
        self._reference_rotation: Optional[np.ndarray] = None
        self._start_position = np.asarray(observation.cube.position, dtype=float)
        self._travelled = 0.0
        self._tip_offsets: Optional[np.ndarray] = None
        self._closed_tips: Optional[np.ndarray] = None
        self._enter(Phase.ABOVE, observation.robot.time)

    def _enter(self, phase: Phase, t: float) -> None:
        self.phase = phase
        self._phase_start = t

    # ----------------------------------------------------------------------------- hooks
    def goal_position(self, observation: Observation) -> np.ndarray:
        """Where the cube should go: the goal's position (alignment primitives override it)."""
        return np.asarray(observation.goal.position, dtype=float)

    def held_orientation(self, t: float) -> np.ndarray:
        """Levels 1-3: the orientation the grasp holds the cube in at time ``t`` (the one it was
        grasped with; alignment primitives turn it)."""
        return self._held_orientation

    def _turn_reference(self, goal_orientation: np.ndarray, dt: float) -> np.ndarray:
        """Level 4: the references' orientation (3, 3), turned from the grasp's orientation
        towards ``goal_orientation`` by at most ``turn_speed * dt`` about the axis between them
        (a sub-goal in orientation, like x_g in position). Turning them with the camera's delayed
        orientation instead fed the delay back: measured, the cube turned away and dropped."""
        if self._reference_rotation is None:
            self._reference_rotation = self._matrix(self._held_orientation).copy()
        remaining = matrix_rotation_vector(cube_geometry.to_matrix(goal_orientation) @ self._reference_rotation.T)
        angle = float(np.linalg.norm(remaining))
        step = min(angle, self._p.turn_speed * dt)
        if step > 0.0:
            self._reference_rotation = rotation_from_vector(remaining * (step / angle)) @ self._reference_rotation
        return self._reference_rotation

    # ----------------------------------------------------------------------------- control
    def _torque(self, observation: Observation) -> np.ndarray:
        if self.grasp is None:
            raise RuntimeError("cic: reset() must be called before compute()")
        fingers = self._fingers(observation)
        self._update_phase(observation, fingers)
        if self.phase in APPROACH_PHASES:
            return self._approach_torque(observation, fingers)
        return self._grasp_torque(observation, fingers)

    def _fingers(self, observation: Observation) -> FingerState:
        """The fingers' kinematic state at this call (one forward-kinematics pass)."""
        p = self._p
        robot = observation.robot
        q = robot.position
        jac = self.kin.tip_jacobians(q)
        blocks = None
        if not p.isotropic_impedance:
            mass = self.kin.mass_matrix(q)
            blocks = np.stack([mass[3 * i:3 * i + 3, 3 * i:3 * i + 3] for i in range(N_FINGERS)])
        return FingerState(
            t=robot.time, dt=self._interval(robot.time), tips=self.kin.tip_positions(q), jac=jac,
            mass_blocks=blocks, tip_velocity=np.einsum("fij,fj->fi", jac, robot.velocity.reshape(N_FINGERS, 3)),
            gravity=self.kin.gravity(q).reshape(N_FINGERS, 3))

    # ----------------------------------------------------------------------------- phases
    def _update_phase(self, observation: Observation, fingers: FingerState) -> None:
        """The transitions decided at the start of a call: a RETREAT that has lasted
        ``RETREAT_SECONDS`` takes a new grasp from the planner (ABOVE) once one is ready; a MOVE
        that lost the cube (:meth:`_lost`) retreats. The approach's arrivals and the grasp's
        closing are decided by the phases' own laws (they need the call's targets)."""
        t = fingers.t
        if self.phase is Phase.RETREAT and t - self._phase_start >= RETREAT_SECONDS:
            # a grasp for the cube as seen now, chosen off this call: the tips hold their
            # retreat targets until the plan is taken
            try:
                grasp = self.grasp_planner.poll(observation, regrasp=True)
            except GraspError:  # e.g. the cube rests on an edge: wait, try again
                self._enter(Phase.RETREAT, t)
                return
            if grasp is not None:
                self.regrasps += 1
                self._start_grasp(observation, grasp)
        elif self.phase is Phase.MOVE and self._lost(observation, fingers.tips):
            self._retreat_targets = fingers.tips + RETREAT_DISTANCE * (
                -cube_geometry.rotate(observation.cube.orientation, self._normals) + np.array([0.0, 0.0, 1.0]))
            self._waypoint = fingers.tips.copy()
            self._enter(Phase.RETREAT, t)

    def _approach_target(self, observation: Observation) -> np.ndarray:
        """ABOVE and BESIDE: the tips' targets, ``approach_clearance`` outside the contacts (ABOVE:
        ``approach_height`` above them and clear of the cube); RETREAT: the retreat targets."""
        p = self._p
        if self.phase is Phase.RETREAT:
            return self._retreat_targets
        target = cube_geometry.to_world(observation.cube, self._surface - p.approach_clearance * self._normals)
        if self.phase is Phase.ABOVE:  # above the contacts and well above the cube
            target[:, 2] = np.maximum(target[:, 2] + p.approach_height,
                                      cube_geometry.corners(observation.cube)[:, 2].max() + SAFE_HEIGHT)
        return target

    def _arrive(self, observation: Observation, target: np.ndarray, fingers: FingerState) -> None:
        """ABOVE -> BESIDE -> CLOSE when the tips are at their targets (or after
        ``APPROACH_TIMEOUT``); CLOSE holds the orientation the cube has then."""
        tolerance = ARRIVAL_TOLERANCE if self.phase is Phase.ABOVE else BESIDE_TOLERANCE
        arrived = np.all(np.linalg.norm(target - fingers.tips, axis=1) < tolerance)
        if not (arrived or fingers.t - self._phase_start > APPROACH_TIMEOUT):
            return
        if self.phase is Phase.ABOVE:
            self._enter(Phase.BESIDE, fingers.t)
        else:
            self._held_orientation = np.asarray(observation.cube.orientation, dtype=float)
            self._reference_rotation = None
            self._enter(Phase.CLOSE, fingers.t)

    def _close(self, camera: np.ndarray, fingers: FingerState, stamp: float) -> None:
        """CLOSE -> MOVE: the references move to where the tips came to rest on the (still
        resting) cube, keeping only the press along the normals; the carry starts here."""
        held = CubePose(camera, self._held_orientation)
        tips_cube = cube_geometry.to_cube_frame(held, fingers.tips)
        pressed = np.einsum("fi,fi->f", self._references - tips_cube, self._normals)
        self._references = tips_cube + pressed[:, None] * self._normals
        self._tip_offsets = tips_cube
        self._closed_tips = fingers.tips.copy()
        self._start_position = camera.copy()
        self._travelled = 0.0
        self._last_stamp = stamp
        self._enter(Phase.MOVE, fingers.t)

    # ----------------------------------------------------------------------------- laws
    def _approach_torque(self, observation: Observation, fingers: FingerState) -> np.ndarray:
        """ABOVE, BESIDE, RETREAT: tau_1 with ``approach_stiffness`` towards a waypoint moving
        to the phase's target at ``approach_speed``."""
        p = self._p
        target = self._approach_target(observation)
        if self.phase is not Phase.RETREAT:
            self._arrive(observation, target, fingers)
        step = p.approach_speed * fingers.dt
        delta = target - self._waypoint
        dist = np.linalg.norm(delta, axis=1, keepdims=True)
        self._waypoint = self._waypoint + delta * np.minimum(1.0, step / np.maximum(dist, 1e-9))
        tau = impedance_torques(fingers.mass_blocks, fingers.jac, self._waypoint - fingers.tips,
                                fingers.tip_velocity, np.full(3, p.approach_stiffness), p.approach_damping,
                                bool(p.isotropic_impedance))
        return fit_to_limit(tau, fingers.gravity).reshape(-1)

    def _grasp_torque(self, observation: Observation, fingers: FingerState) -> np.ndarray:
        """CLOSE and MOVE: the superposition tau_1 + ... + tau_4 of §IV-C (eqs. in the module
        docstring) about x_c + K1 (x_g - x_c) + integral."""
        p = self._p
        t, tips, jac = fingers.t, fingers.tips, fingers.jac
        camera = np.asarray(observation.cube.position, dtype=float)
        grasp_rotation = self._matrix(self._held_orientation)
        if self.phase is Phase.CLOSE:
            ramp = min(1.0, (t - self._phase_start) / p.close_time)
            centre, shift = camera, np.zeros(3)
            self._remember(t, tips, camera, self._matrix(self._held_orientation))
            if t - self._phase_start >= p.close_time:
                self._close(camera, fingers, observation.cube.stamp)
        else:
            ramp = 1.0
            goal = self.goal_position(observation)
            subgoal = self.subgoal(goal)
            grasp_rotation = rotation_between(self._closed_tips, tips) @ self._matrix(self._held_orientation)
            then = self._camera_feedback(observation.cube, subgoal, goal)
            subgoal = self._advance(fingers.dt, goal)
            self._remember(t, tips, subgoal, grasp_rotation)
            # x_c: the image moved on by the commanded motion since it was taken (delay)
            camera = self.seen_position(observation.cube, then)
            centre = camera + (subgoal - then) if p.delay_compensation else camera
            shift = p.position_gain * (subgoal - centre) + self._integral

        # levels 1-3: the references keep the orientation of the grasp (the springs resist the
        # cube pivoting in the grasp); level 4: a reference orientation turning from the grasp's
        # to the goal's at turn_speed, which the springs and tau_4 follow
        if self.level == 4:
            rotation = self._turn_reference(observation.goal.orientation,
                                            fingers.dt if self.phase is Phase.MOVE else 0.0)
        else:
            rotation = self._matrix(self.held_orientation(t))
        normals = self._normals @ rotation.T
        references = self._references @ rotation.T + centre + np.array([0.0, 0.0, p.reference_height]) + shift
        error = references - tips
        if self.phase is Phase.CLOSE:  # close horizontally; the tips stay at their height
            error[:, 2] = 0.0
        isotropic = bool(p.isotropic_impedance)
        if isotropic:  # tau_1 = J^T F_1 (see impedance_torques): work with tip forces
            f1 = ISOTROPIC_MASS * (error * self._stiffness - p.damping * fingers.tip_velocity)
            tau1 = np.zeros((N_FINGERS, 3))
        else:
            tau1 = impedance_torques(fingers.mass_blocks, jac, error, fingers.tip_velocity, self._stiffness,
                                     p.damping)
            f1 = tip_forces(jac, tau1)

        f2 = (ramp * p.grasp_force) * normals
        f3 = resultant_cancelling_forces(normals, f2.sum(axis=0), p.normal_preference)

        # levers from the centre to the contact points (not the tip centres); the centre as the
        # grasp holds it (no camera delay): the tips minus their offsets when the grasp closed
        held_centre = centre
        if self._tip_offsets is not None:
            held_centre = (tips - self._tip_offsets @ rotation.T).sum(axis=0) / N_FINGERS
        lever = tips + TIP_RADIUS * normals - held_centre
        inverse = grasp_pseudo_inverse(lever)
        # the cube's weight, shared so that it exerts no moment about the cube's centre (CG: the
        # opposite pair carries it; a lone finger lifting off-centre would tip the cube over)
        fw = (inverse[:, 2] * (ramp * self._weight[2] * N_FINGERS)).reshape(N_FINGERS, 3)
        omega = np.zeros(3)
        if self.phase is Phase.MOVE and p.orientation_gain > 0.0:
            # the cube's orientation as the grasp holds it: turned like the tips since it closed
            # (no camera delay: the camera-delayed orientation made this loop oscillate), and by
            # the slow slip the camera shows; the target is the references' orientation
            current = rotation_from_vector(self._slip) @ grasp_rotation
            omega = p.orientation_gain * matrix_rotation_vector(rotation @ current.T)
        if p.moment_cancellation > 0.0:
            # the moment the other terms exert about the cube's centre (quasi-static tip forces)
            omega = omega - p.moment_cancellation * total_moment(lever, f1 + f2 + f3 + fw)
        f4 = (inverse[:, 3:] @ omega).reshape(N_FINGERS, 3)

        self.terms = dict(f1=f1, f2=f2, f3=f3, f4=f4, weight=fw, gravity=fingers.gravity,
                          references=references, tips=tips)
        command = tau1 + force_torques(jac, (f2 + f3 + f4 + fw) + (f1 if isotropic else 0.0))
        self._windup = windup_directions(jac, fingers.gravity + command, ISOTROPIC_MASS * self._stiffness)
        return fit_to_limit(command, fingers.gravity, together=True).reshape(-1)

    def _matrix(self, quaternion: np.ndarray) -> np.ndarray:
        """Rotation matrix of ``quaternion``, cached (levels 1-3 hold one orientation)."""
        key = quaternion.tobytes()
        if key != self._matrix_key:
            self._matrix_key = key
            self._matrix_value = cube_geometry.to_matrix(quaternion)
        return self._matrix_value

    def _lost(self, observation: Observation, tips: np.ndarray) -> bool:
        """True on the second image in a row on which fewer than two fingertips (as they were
        when the image was taken) are within ``REGRASP_DISTANCE`` of the observed cube's
        surface."""
        pose = observation.cube
        if pose.stamp == self._lost_stamp:
            return False
        self._lost_stamp = pose.stamp
        k = self._at(pose.stamp)
        then = self._history.values["tips"][k] if k is not None else tips
        holding = cube_geometry.points_near_surface(pose, then, REGRASP_DISTANCE)
        self._lost_images = self._lost_images + 1 if holding < 2 else 0
        return self._lost_images >= 2
