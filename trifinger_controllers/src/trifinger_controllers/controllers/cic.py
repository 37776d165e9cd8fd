"""Cartesian impedance controller, CIC (paper 004 §IV-C), at 100 Hz.

Per finger the command is ``tau = tau_1 + tau_2 + tau_3 + tau_4 + g(q)`` (§IV-C): the impedance
law ``tau_1`` about the reference ``x^_r = x_r + K1 (x_g - x_c)``, the grasp force ``tau_2`` along
the inward normals, ``tau_3`` cancelling its resultant, and ``tau_4`` for the orientation moment
``Omega = K3 phi r_phi``. Additions needed in simulation with the tracker's 10 Hz, delayed and
noisy poses, each behind its parameter: ``isotropic_impedance``, ``moment_cancellation``,
``weight_feedforward``, the moving sub-goal x_g (``goal_speed``, ``max_lead``,
``delay_compensation``), the camera integral with anti-windup (``integral_gain``,
:func:`without_windup`), the floor band (:meth:`CartesianImpedanceController.seen_position`) and
the torque limit taken by the grasp as a whole (:func:`fit_to_limit` with ``together``).

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
from trifinger_controllers import grasps, pose_filter
from trifinger_controllers.controllers.base import CallInterval, Controller
from trifinger_controllers.controllers.grasp_phases import GraspSpec, Phase, check_setup, grasp_selection
from trifinger_controllers.controllers.grasp_planner import DEFAULT_LATENCY, GraspPlanner
from trifinger_controllers.controllers.stamped_history import StampedHistory
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.params import Parameter, ParameterSet
from trifinger_controllers.types import CUBE_MASS, N_FINGERS, TORQUE_LIMIT, CubePose, Observation

GRAVITY = 9.81
#: Damping [m/rad] of the inverses J^-1 and J^-T near singular configurations.
JACOBIAN_DAMPING = 1e-3
#: Reference mass [kg] of the isotropic impedance (about the TriFinger tip's mean
#: operational-space inertia), so that K keeps its scale: stiffness ISOTROPIC_MASS * K [N/m].
ISOTROPIC_MASS = 0.08
#: eps of resultant_cancelling_forces: tangential contact forces cost 1/eps times more than
#: normal ones.
NORMAL_PREFERENCE = 1e-3
#: Controller calls of history (tips, x_g) kept to match camera images (0.5 s).
HISTORY = 50
#: A camera image is matched with the tip history if their times differ by at most this [s].
HISTORY_TOLERANCE = 0.015
#: Camera errors larger than this [m] are not integrated (slip or loss, not an offset).
INTEGRAL_ERROR_LIMIT = 0.03
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



# ------------------------------------------------------------------------------ §IV-C terms
def damped_inverse(jac: np.ndarray, damping: float = JACOBIAN_DAMPING) -> np.ndarray:
    """(..., 3, 3) ``J^T (J J^T + damping^2 I)^-1``: J^-1 where J is regular, bounded near
    singular configurations."""
    jjt = jac @ np.swapaxes(jac, -1, -2) + damping ** 2 * np.eye(3)
    return np.swapaxes(np.linalg.solve(jjt, jac), -1, -2)


def damped_inverse_transpose(jac: np.ndarray, damping: float = JACOBIAN_DAMPING) -> np.ndarray:
    """(..., 3, 3) ``(J J^T + damping^2 I)^-1 J``: J^-T, the map from a finger's joint torques
    to the tip force they exert quasi-statically, ``F = J^-T tau``."""
    jjt = jac @ np.swapaxes(jac, -1, -2) + damping ** 2 * np.eye(3)
    return np.linalg.solve(jjt, jac)


def skew(v: np.ndarray) -> np.ndarray:
    """(..., 3, 3) skew-symmetric matrices with ``skew(v) @ w = v x w``."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def impedance_torques(mass_blocks: np.ndarray, jac: np.ndarray, error: np.ndarray,
                      tip_velocity: np.ndarray, stiffness: np.ndarray, damping: float,
                      isotropic: bool = False) -> np.ndarray:
    """tau_1 (3, 3) of §IV-C: ``M_i(q) J_i^-1 M_d^-1 (K x~_i - D xd_i)`` for each finger.

    ``mass_blocks`` (3, 3, 3) the fingers' blocks of M(q), ``jac`` (3, 3, 3), ``error`` x~
    (3, 3), ``tip_velocity`` (3, 3), ``stiffness`` (3,) diagonal of K, ``damping`` D.

    ``isotropic=False``: ``M_d = I`` (the law as the paper writes it). Since
    ``M J^-1 = J^T Lambda`` (Lambda the tip's operational-space inertia), the tip presses with
    ``Lambda(q) K x~`` in contact, and Lambda's eigenvalues differ ~10x on the TriFinger (0.02 to
    0.19 kg): a finger may barely press along its contact normal. ``isotropic=True``:
    ``M_d = Lambda(q) / ISOTROPIC_MASS``, the desired apparent inertia shaped like the finger's
    own, so that ``tau_1 = ISOTROPIC_MASS J^T (K x~ - D xd)``: the same stiffness in every
    direction (M and J^-1 cancel in closed form)."""
    accel = error * stiffness - damping * tip_velocity
    if isotropic:
        return force_torques(jac, ISOTROPIC_MASS * accel)
    qdd = np.einsum("fij,fj->fi", damped_inverse(jac), accel)
    return np.einsum("fij,fj->fi", mass_blocks, qdd)


def force_torques(jac: np.ndarray, forces: np.ndarray) -> np.ndarray:
    """(3, 3) ``tau_i = J_i^T F_i`` (tau_2 of §IV-C for ``F_i = F_2,i``)."""
    return np.einsum("fji,fj->fi", jac, forces)


def tip_forces(jac: np.ndarray, torques: np.ndarray) -> np.ndarray:
    """(3, 3) quasi-static tip forces ``F_i = J_i^-T tau_i`` of torques (3, 3)."""
    return np.einsum("fij,fj->fi", damped_inverse_transpose(jac), torques)


def resultant_cancelling_forces(normals: np.ndarray, resultant: np.ndarray,
                                regularisation: float = NORMAL_PREFERENCE) -> np.ndarray:
    """(3, 3) tip forces ``F_3,i`` with ``sum_i F_3,i = -F_res`` that load the contacts as little
    as possible tangentially: the minimiser of ``sum_i |P_i F_3,i|^2 + eps |F_3,i|^2``
    (``P_i = I - d_i d_i^T`` the tangential projector at contact i, ``d_i`` (3, 3) the unit
    normals), in closed form ``F_3,i = W_i lambda``, ``W_i = (P_i + eps I)^-1``,
    ``lambda = -(sum_i W_i)^-1 F_res``. With CG (§IV-C) the lone finger's own push is taken
    back along its normal and the opposite pair keeps a pure squeeze.

    Why not the minimum-torque-norm solution of §IV-C's equation (the joint-space
    pseudo-inverse): it loads the finger with the most favourable Jacobian and tilts its force
    out of the face; in simulation CG's lone finger slid off the cube with it. The equal split
    ``-F_res / 3`` (large eps) leaves a third of the lone finger's push as friction load on the
    opposite pair."""
    d = np.asarray(normals, dtype=float)
    outer = np.einsum("fi,fj->fij", d, d)
    weights = outer / regularisation + (np.eye(3) - outer) / (1.0 + regularisation)
    lam = -np.linalg.solve(weights.sum(axis=0), np.asarray(resultant, dtype=float))
    return weights @ lam


def resultant_cancelling_torques(jac: np.ndarray, normals: np.ndarray, resultant: np.ndarray,
                                 regularisation: float = NORMAL_PREFERENCE) -> np.ndarray:
    """tau_3 (3, 3) of §IV-C: a solution of the underdetermined
    ``-F_res = [J_1^-T, J_2^-T, J_3^-T] [tau_3,1; tau_3,2; tau_3,3]`` (3 equations, 9 torques),
    ``tau_3,i = J_i^T F_3,i`` with the friction-sparing forces of
    :func:`resultant_cancelling_forces` (``J_i^-T tau_3,i = F_3,i`` sums to ``-F_res``)."""
    return force_torques(jac, resultant_cancelling_forces(normals, resultant, regularisation))


def grasp_pseudo_inverse(levers: np.ndarray) -> np.ndarray:
    """(9, 6) minimum-norm inverse of the grasp matrix ``G = [I I I; S(r_1) S(r_2) S(r_3)]``
    (contact forces -> wrench on the cube about its centre, ``r_i`` (3, 3) the levers):
    ``G^T (G G^T)^-1``; the tip forces (stacked) exerting a wrench w are ``G^+ w``."""
    g = np.empty((6, 3 * N_FINGERS))
    for i in range(N_FINGERS):
        g[:3, 3 * i:3 * i + 3] = np.eye(3)
        g[3:, 3 * i:3 * i + 3] = skew(levers[i])
    return g.T @ np.linalg.inv(g @ g.T)


def wrench_forces(levers: np.ndarray, force: np.ndarray, moment: np.ndarray) -> np.ndarray:
    """(3, 3) the smallest tip forces (least squares) that exert the wrench (``force``,
    ``moment``) on the cube: ``sum_i F_i = force``, ``sum_i r_i x F_i = moment``, ``r_i`` (3, 3)
    the levers from the cube's centre to the contacts (:func:`grasp_pseudo_inverse`)."""
    wrench = np.concatenate([np.asarray(force, dtype=float), np.asarray(moment, dtype=float)])
    return (grasp_pseudo_inverse(levers) @ wrench).reshape(N_FINGERS, 3)


def moment_forces(levers: np.ndarray, moment: np.ndarray) -> np.ndarray:
    """(3, 3) the smallest tip forces that exert the pure moment ``Omega`` (zero resultant, so
    tau_4 does not push the cube away): :func:`wrench_forces` with zero force."""
    return wrench_forces(levers, np.zeros(3), moment)


def moment_torques(jac: np.ndarray, levers: np.ndarray, moment: np.ndarray) -> np.ndarray:
    """tau_4 (3, 3) of §IV-C, a solution of
    ``Omega = [S(r_1) J_1^-T, S(r_2) J_2^-T, S(r_3) J_3^-T] [tau_4,1; ...]`` (quasi-static model):
    ``tau_4,i = J_i^T F_4,i`` with the smallest forces of :func:`moment_forces` (zero resultant).
    The paper takes ``r_i`` as unit vectors; we pass the levers themselves (tip minus cube
    centre), so that Omega is a moment in N m and the moments of the other terms can be
    cancelled exactly."""
    return force_torques(jac, moment_forces(levers, moment))


def total_moment(levers: np.ndarray, forces: np.ndarray) -> np.ndarray:
    """``sum_i r_i x F_i`` of (k, 3) levers and forces (np.cross without its overhead)."""
    r, f = levers, forces
    return np.array([(r[:, 1] * f[:, 2] - r[:, 2] * f[:, 1]).sum(),
                     (r[:, 2] * f[:, 0] - r[:, 0] * f[:, 2]).sum(),
                     (r[:, 0] * f[:, 1] - r[:, 1] * f[:, 0]).sum()])


def matrix_rotation_vector(rotation: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle, angle in [0, pi]) of a rotation matrix."""
    cosine = np.clip((np.trace(rotation) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cosine)
    axis = np.array([rotation[2, 1] - rotation[1, 2], rotation[0, 2] - rotation[2, 0],
                     rotation[1, 0] - rotation[0, 1]])
    norm = np.linalg.norm(axis)
    if norm < 1e-9:
        if angle < 1e-6:
            return np.zeros(3)
        # a half turn: the axis is the eigenvector of eigenvalue 1
        w, v = np.linalg.eigh((rotation + rotation.T) / 2.0)
        return np.pi * v[:, int(np.argmax(w))]
    return axis / norm * angle


def rotation_from_vector(rotvec: np.ndarray) -> np.ndarray:
    """(3, 3) rotation matrix of a rotation vector (Rodrigues)."""
    angle = float(np.linalg.norm(rotvec))
    if angle < 1e-12:
        return np.eye(3)
    k = skew(rotvec / angle)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def rotation_between(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """(3, 3) the rotation that best maps the points ``before`` (k, 3) onto ``after`` about their
    centroids (Kabsch: least squares, proper rotation)."""
    a = before - before.sum(axis=0) / len(before)
    b = after - after.sum(axis=0) / len(after)
    u, _, vt = np.linalg.svd(a.T @ b)
    d = np.sign(np.linalg.det(vt.T @ u.T))
    return vt.T @ np.diag([1.0, 1.0, d]) @ u.T


def fit_to_limit(command: np.ndarray, gravity: np.ndarray, limit: float = TORQUE_LIMIT,
                 together: bool = False) -> np.ndarray:
    """(3, 3) ``gravity + s_i command_i`` with the largest ``s_i`` in [0, 1] per finger (or, with
    ``together``, one ``s`` for all) that keeps every joint within ``limit``: a finger's command
    is scaled down as a whole, so its tip force keeps its direction (clipping joints one by one
    would turn it, and a turned squeeze lets the cube slip). ``together``, for a grasp: the
    smallest factor of the fingers that have room, for all of them; scaling one finger's squeeze
    alone unbalances the others', which push the cube into it and out of the grasp (a stretched
    finger whose own weight takes most of a joint's torque, at the workspace's edge). A finger
    whose gravity torque alone leaves no room (factor 0) gets 0 alone: all the others letting go
    would drop the cube for certain."""
    total = gravity + command
    if np.max(np.abs(total)) <= limit:  # the usual case
        return total
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(command > 0, (limit - gravity) / command,
                        np.where(command < 0, (-limit - gravity) / command, np.inf))
    scale = np.clip(np.min(room, axis=1, keepdims=True), 0.0, 1.0)
    has_room = scale > 0.0
    if together and has_room.any():
        scale = np.where(has_room, scale[has_room].min(), 0.0)
    return gravity + scale * command


def windup_directions(jac: np.ndarray, torques: np.ndarray, stiffness: np.ndarray,
                      limit: float = TORQUE_LIMIT) -> np.ndarray:
    """(k, 3) unit directions of the reference shift that would load a finger already over the
    limit further, one per such finger: its joint furthest over ``limit``, ``j``, and
    ``d ~ stiffness * sign(tau_j) J[:, j]`` (a shift ``s`` of every reference changes each tip
    force by ``stiffness * s``, and ``tau_j`` by ``J[:, j] . dF``)."""
    directions = []
    for f in np.flatnonzero(np.max(np.abs(torques), axis=1) > limit):
        j = int(np.argmax(np.abs(torques[f])))
        d = stiffness * np.sign(torques[f, j]) * jac[f][:, j]
        norm = float(np.linalg.norm(d))
        if norm > 0.0:
            directions.append(d / norm)
    return np.array(directions).reshape(-1, 3)


def without_windup(step: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """``step`` without its components along ``directions`` that point the same way
    (conditional integration: the integral grows only where no saturated finger is loaded
    further)."""
    for d in directions:
        along = float(step @ d)
        if along > 0.0:
            step = step - along * d
    return step


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


class CartesianImpedanceController(Controller):
    """CIC of §IV-C with any grasp (default CG), 100 Hz.

    Args:
        grasp: grasp name (tg, cg, og, pg) or names (the first reachable), a
            :class:`grasps.Grasp` (cube frame, used as is), or a callable ``observation ->
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
        self.grasp_planner: GraspPlanner[grasps.Grasp] = GraspPlanner(
            grasp_selection("cic", grasp, self.level, FALLBACK_GRASPS), self.kin, DEFAULT_LATENCY,
            name="cic-grasp-planner")
        self.grasp: Optional[grasps.Grasp] = None
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

    def _start_grasp(self, observation: Observation, grasp: grasps.Grasp) -> None:
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
        self._references = self._surface + (grasps.TIP_RADIUS + p.reference_depth) * self._normals
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

    # ----------------------------------------------------------------------------- camera
    def _remember(self, t: float, tips: np.ndarray, subgoal: np.ndarray,
                  rotation: Optional[np.ndarray] = None) -> None:
        """Keep the tips, x_g and the grasp's orientation of the last ``HISTORY`` calls."""
        self._history.record(t, tips=tips, goal=subgoal,
                             rotation=np.eye(3) if rotation is None else rotation)

    def _at(self, stamp: float) -> Optional[int]:
        """History index of the call at camera time ``stamp`` (None if not kept)."""
        return self._history.index_at(stamp, HISTORY_TOLERANCE)

    def _camera_feedback(self, pose: CubePose, subgoal: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Process the camera pose: on a new image, integrate the error between x_g when the
        image was taken and the observed cube (``integral_gain``, clipped at
        ``integral_limit``; errors over ``INTEGRAL_ERROR_LIMIT`` are a slip, not an offset; none
        once x_g is at a ``goal`` on the floor: the floor's friction holds the cube, and the
        integral would wind up against it) and update the lead of x_g over the cube. Returns x_g
        at the image's time."""
        p = self._p
        k = self._at(pose.stamp)
        then = self._history.values["goal"][k] if k is not None else subgoal
        if pose.stamp != self._last_stamp:
            period = min(max(pose.stamp - self._last_stamp, 0.0), 0.2)
            self._last_stamp = pose.stamp
            error = then - self.seen_position(pose, then)
            self._lead = float(np.linalg.norm(error))
            placed = self._height_band(pose) is not None and np.array_equal(then, goal)
            if self._lead < INTEGRAL_ERROR_LIMIT and not placed:
                step = without_windup(p.integral_gain * period * error, self._windup)
                self._integral = np.clip(self._integral + step, -p.integral_limit, p.integral_limit)
            if k is not None and p.slip_correction > 0.0:
                # how far the cube has turned in the grasp: the camera's orientation against the
                # one the tips held when the image was taken (low-pass: a complementary filter)
                seen = cube_geometry.to_matrix(pose.orientation) @ self._history.values["rotation"][k].T
                rate = min(1.0, p.slip_correction * period)
                self._slip += rate * (matrix_rotation_vector(seen) - self._slip)
        return then

    def _height_band(self, pose: CubePose) -> Optional[tuple[float, float]]:
        """:func:`pose_filter.height_band` of ``pose``, computed once per image (the control
        calls between two images see the same estimate)."""
        key = (pose.stamp, float(pose.position[2]))
        if key != self._band_key:
            self._band_key, self._band = key, pose_filter.height_band(pose)
        return self._band

    def seen_position(self, pose: CubePose, then: np.ndarray) -> np.ndarray:
        """The cube position the image shows; for an estimate the pose filter snapped to the
        floor, the height is x_g's at the image's time ``then`` within the band the snap allows
        (:func:`pose_filter.height_band`: the image bounds the height, it does not measure it)."""
        position = np.asarray(pose.position, dtype=float)
        band = self._height_band(pose)
        if band is None:
            return position
        seen = position.copy()
        seen[2] = min(max(float(then[2]), band[0]), band[1])
        return seen

    def subgoal(self, goal: np.ndarray) -> np.ndarray:
        """x_g for the distance travelled so far along the path from the grasp position, up by
        ``lift_height`` and then straight to ``goal``."""
        p = self._p
        start = self._start_position
        lifted = start + np.array([0.0, 0.0, p.lift_height])
        travelled = self._travelled
        if travelled <= p.lift_height:
            return start + np.array([0.0, 0.0, travelled])
        to_goal = goal - lifted
        dist = float(np.linalg.norm(to_goal))
        travelled -= p.lift_height
        return goal.copy() if travelled >= dist else lifted + to_goal * (travelled / dist)

    def _advance(self, dt: float, goal: np.ndarray) -> np.ndarray:
        """Move x_g on by ``goal_speed * dt`` unless the last image showed the cube more than
        ``max_lead`` behind it (then it waits for the cube); the new x_g."""
        p = self._p
        if self._lead < p.max_lead:
            self._travelled += p.goal_speed * dt
        return self.subgoal(goal)

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
            except grasps.GraspError:  # e.g. the cube rests on an edge: wait, try again
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
        lever = tips + grasps.TIP_RADIUS * normals - held_centre
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
