"""Grasps of the cube by the three fingertips (paper 004 §IV, Fig. 2).

A :class:`Grasp` holds one contact point per finger (rows: finger 0, 120, 240) and the inward
surface normal there, both in the CUBE frame, so that a grasp moves with the cube: the
controllers transform it with the cube pose they observe or want (CPC §IV-B: fingertip targets
are the grasp points transformed by the desired cube motion).

Strategies (Fig. 2):

* TG, :func:`triangle_grasp` (§IV-B, [47]): three fingertips on three vertical faces along three
  horizontal rays from the cube's centre 120 deg apart (an equilateral triangle around the
  centre), the triangle turned within +-15 deg so that the contacts stay away from the edges;
* CG, :func:`center_of_three_grasp` (§IV-C): the centres of three of the four vertical faces;
  levels 1-3: the face closest to the goal stays free so that the cube can be pushed there;
  level 4: two fingers on the opposite faces whose axis is closest to the rotation axis, the
  third on a face where lifting turns the cube the right way;
* OG, :func:`opposite_faces_grasp` (§IV-A): two fingers on one vertical face, one on the
  opposite face;
* PG candidates (§IV-A): :func:`heuristic_candidates` (all permutations of fingers and vertical
  faces for CG and OG, Fig. 2 caption) ranked by reachability; then
  :func:`sample_force_closure_grasps` (random contacts kept if in force closure, [45]).

Fingers are assigned to contacts by reachability (:func:`assign_fingers`): each finger touches a
face that looks towards its own side of the arena, and, given the kinematics, the fingertip
positions are checked by inverse kinematics. :func:`force_closure` tests force closure with
linearised Coulomb friction cones by linear programming; :func:`squeeze_directions` (internal
forces of a grip) and :func:`weight_support_forces` (carrying the weight without a moment) are
the contact forces the controllers command.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from scipy.optimize import linprog

from trifinger_controllers import cube
from trifinger_controllers.errors import TrifingerError
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.types import CUBE_MASS, N_FINGERS, TORQUE_LIMIT, CubePose, Observation

HALF_WIDTH = cube.HALF_WIDTH
#: Distance [m] of the fingertip frame from a face it touches: robot_properties_fingers'
#: pro/tip_sim.stl is a 10 mm hemisphere around the tip frame, and PyBullet keeps the convex
#: shapes ~2 mm apart (collision margins): pressed tips sit 12 mm from the face in the simulator.
TIP_RADIUS = 0.012
#: Friction coefficient assumed by the force-closure tests (benchmark-rrc's MU).
DEFAULT_MU = 0.5
#: Horizontal world directions [rad] of each finger's side of the arena (finger 0 works on +y,
#: fingers 120 and 240 at -30 and 210 deg; trifinger_simulation's TriFinger Pro layout).
FINGER_ANGLES = np.deg2rad([90.0, -30.0, 210.0])
FINGER_DIRECTIONS = np.stack([np.cos(FINGER_ANGLES), np.sin(FINGER_ANGLES), np.zeros(3)], axis=1)
#: Maximal turn [rad] of TG's triangle away from the fingers' sides.
TG_MAX_TURN = np.deg2rad(15.0)
#: Offset [m] of OG's two fingers from the centre of their shared face (along the horizontal).
OG_SPREAD = 0.6 * HALF_WIDTH
#: A fingertip whose IK leaves it further than this [m] from its target is unreachable.
IK_TOLERANCE = 0.004
#: Faces whose outward normal has |z| below this count as vertical.
VERTICAL_Z = 0.5
#: Squeeze [N] along each inward normal assumed by :func:`holding_torque` (CIC's default K2).
HOLDING_SQUEEZE = 1.0
#: CG chooses by :func:`holding_torque` for goals this far [m] above the floor (the cube is
#: carried); goals on the floor (level 1, sliding) keep the paper's rule.
CARRY_HEIGHT = 0.01
#: CG's carried grasps should hold the nominal cube with at most this fraction of TORQUE_LIMIT
#: (:func:`holding_torque`): the randomised cube is up to 1.3 x heavier and 0.7 x as slippery,
#: and the controller needs the rest to carry and squeeze it. A compromise, not a bound: with 1.3 x
#: the weight and 1/0.7 x the squeeze, CG grasps at level 3 need 0 to 0.12 N m more (0.08 left here).
HOLDING_MARGIN = 0.8


class GraspError(TrifingerError):
    """No grasp of the requested kind is feasible for the cube pose."""


@dataclass(frozen=True)
class Grasp:
    """Contact points (3, 3) on the cube surface and inward normals (3, 3) there, in the cube
    frame; row i belongs to finger i (0, 120, 240 deg)."""

    name: str
    contact_points: np.ndarray
    normals: np.ndarray

    def __post_init__(self) -> None:
        points = np.asarray(self.contact_points, dtype=float)
        normals = np.asarray(self.normals, dtype=float)
        if points.shape != (N_FINGERS, 3) or normals.shape != (N_FINGERS, 3):
            raise TrifingerError(
                f"grasp {self.name!r}: points and normals must have shape (3, 3), got"
                f" {points.shape} and {normals.shape}"
            )
        if not (np.all(np.isfinite(points)) and np.all(np.isfinite(normals))):
            raise TrifingerError(f"grasp {self.name!r}: non-finite contact points or normals")
        norms = np.linalg.norm(normals, axis=1)
        if np.any(norms < 1e-9):
            raise TrifingerError(f"grasp {self.name!r}: zero normal")
        object.__setattr__(self, "contact_points", points)
        object.__setattr__(self, "normals", normals / norms[:, None])

    def in_world(self, pose: CubePose) -> Tuple[np.ndarray, np.ndarray]:
        """(contact points (3, 3), inward normals (3, 3)) in the world for cube ``pose``."""
        return cube.to_world(pose, self.contact_points), cube.rotate(pose.orientation, self.normals)

    def tip_offsets(self, depth: float = 0.0) -> np.ndarray:
        """(3, 3) fingertip-centre positions in the cube frame: touching the surface
        (``TIP_RADIUS`` outside) and pressed ``depth`` [m] into it."""
        return self.contact_points - (TIP_RADIUS - depth) * self.normals

    def tip_targets(self, pose: CubePose, depth: float = 0.0) -> np.ndarray:
        """(3, 3) world fingertip-centre positions of the grasp at cube ``pose`` (see
        :meth:`tip_offsets`)."""
        return cube.to_world(pose, self.tip_offsets(depth))

    def permuted(self, order: Sequence[int], name: Optional[str] = None) -> "Grasp":
        """The grasp with finger i on contact ``order[i]``."""
        order = list(order)
        return Grasp(name or self.name, self.contact_points[order], self.normals[order])


# --------------------------------------------------------------------------------- force closure
def _tangent_basis(normal: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Two unit vectors orthogonal to ``normal`` and to each other."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(normal, helper)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(normal, t1)


def contact_wrenches(
    points: np.ndarray, normals: np.ndarray, mu: float = DEFAULT_MU, edges: int = 8
) -> np.ndarray:
    """(6, n_contacts * edges) unit-force wrenches ``[f; p x f / L]`` along the edges of the
    linearised (inscribed) Coulomb friction cones, torques about the frame's origin scaled by
    the contacts' largest distance ``L`` (force closure does not depend on either choice)."""
    points = np.asarray(points, dtype=float)
    normals = np.asarray(normals, dtype=float)
    if points.ndim != 2 or points.shape[1] != 3 or normals.shape != points.shape:
        raise TrifingerError(f"points and normals must be (k, 3) arrays, got {points.shape}, {normals.shape}")
    if mu < 0 or edges < 3:
        raise TrifingerError(f"need mu >= 0 and at least 3 cone edges, got mu={mu}, edges={edges}")
    scale = max(float(np.max(np.linalg.norm(points, axis=1))), 1e-6)
    angles = 2 * np.pi * np.arange(edges) / edges
    wrenches = []
    for p, n in zip(points, normals):
        n = n / np.linalg.norm(n)
        t1, t2 = _tangent_basis(n)
        directions = [n] if mu == 0 else [n + mu * (np.cos(a) * t1 + np.sin(a) * t2) for a in angles]
        for f in directions:
            f = f / np.linalg.norm(f)
            wrenches.append(np.concatenate([f, np.cross(p, f) / scale]))
    return np.array(wrenches).T


def force_closure(
    points: np.ndarray, normals: np.ndarray, mu: float = DEFAULT_MU, edges: int = 8,
    margin: float = 1e-6,
) -> bool:
    """True if point contacts with friction at ``points`` (k, 3) pushing along the inward
    ``normals`` (k, 3) hold the object in force closure ([45]).

    The cones are linearised with ``edges`` edges; the grasp is in force closure iff the edge
    wrenches positively span the wrench space, i.e. they have rank 6 and some combination with
    all weights >= t > ``margin`` (weights summing to 1) is zero (the origin strictly inside
    their convex hull). The LP maximises that t."""
    w = contact_wrenches(points, normals, mu, edges)
    if np.linalg.matrix_rank(w, tol=1e-8) < 6:
        return False
    m = w.shape[1]
    a_eq = np.zeros((7, m + 1))
    a_eq[:6, :m] = w
    a_eq[6, :m] = 1.0
    b_eq = np.zeros(7)
    b_eq[6] = 1.0
    a_ub = np.hstack([-np.eye(m), np.ones((m, 1))])  # t - lambda_k <= 0
    cost = np.zeros(m + 1)
    cost[-1] = -1.0
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(m), A_eq=a_eq, b_eq=b_eq,
                     bounds=[(0, None)] * m + [(None, 1.0)], method="highs")
    return bool(result.status == 0 and -result.fun > margin)


def grasp_in_force_closure(grasp: Grasp, mu: float = DEFAULT_MU) -> bool:
    """:func:`force_closure` of a grasp's contacts (cube frame)."""
    return force_closure(grasp.contact_points, grasp.normals, mu)


def squeeze_directions(grasp: Grasp, mu: float = DEFAULT_MU, safety: float = 0.5) -> np.ndarray:
    """(3, 3) internal ("squeeze") forces of the grasp in the cube frame: contact forces with
    zero resultant force and moment on the cube (the grip holds it without pushing it away,
    cf. CIC's tau_2 + tau_3 of §IV-C), each well inside its friction cone.

    Linear program: normal components N_i >= 1, tangential components within the inscribed
    pyramid ``|a| + |b| <= safety * mu * N`` (``safety`` < 1 keeps a margin to slipping; the
    rest of the cone carries the cube's weight), minimal total tangential force, then minimal
    normal force; scaled to a largest magnitude of 1. If no such forces exist (a grasp that is
    not in force closure), the inward normals."""
    mu = safety * mu
    n = grasp.normals
    m = len(n)
    tangents = [_tangent_basis(v) for v in n]
    # variables per contact: N, a+, a-, b+, b-
    k = 5
    a_eq = np.zeros((6, k * m))
    a_ub = np.zeros((m, k * m))
    for i in range(m):
        t1, t2 = tangents[i]
        for j, f in enumerate([n[i], t1, -t1, t2, -t2]):
            a_eq[:3, k * i + j] = f
            a_eq[3:, k * i + j] = np.cross(grasp.contact_points[i], f) / HALF_WIDTH
        a_ub[i, k * i] = -mu
        a_ub[i, k * i + 1:k * i + 5] = 1.0
    cost = np.tile([1e-3, 1.0, 1.0, 1.0, 1.0], m)
    bounds = [(1.0, None) if j % k == 0 else (0.0, None) for j in range(k * m)]
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(m), A_eq=a_eq, b_eq=np.zeros(6),
                     bounds=bounds, method="highs")
    if result.status != 0:
        return n.copy()
    x = result.x.reshape(m, k)
    forces = np.array([x[i, 0] * n[i] + (x[i, 1] - x[i, 2]) * tangents[i][0]
                       + (x[i, 3] - x[i, 4]) * tangents[i][1] for i in range(m)])
    return forces / np.max(np.linalg.norm(forces, axis=1))


def weight_support_forces(grasp: Grasp, weight: np.ndarray) -> np.ndarray:
    """(3, 3) contact forces in the cube frame that carry ``weight`` (3,), the force the
    fingers must exert on the cube against gravity (cube frame), with zero moment about the
    cube's centre: the minimum-norm solution of ``sum_i f_i = weight``,
    ``sum_i p_i x f_i = 0``. Added to the squeeze it keeps a held cube from turning in the
    grasp when the contacts' centroid is off its centre."""
    rows = np.zeros((6, 3 * N_FINGERS))
    for i, p in enumerate(grasp.contact_points):
        rows[:3, 3 * i:3 * i + 3] = np.eye(3)
        rows[3:, 3 * i:3 * i + 3] = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]]) / HALF_WIDTH
    target = np.concatenate([np.asarray(weight, dtype=float), np.zeros(3)])
    return np.linalg.lstsq(rows, target, rcond=None)[0].reshape(N_FINGERS, 3)


def surface_point(direction: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(point, inward normal) in the cube frame where the ray from the centre along
    ``direction`` (cube frame) leaves the cube."""
    d = np.asarray(direction, dtype=float)
    axis = int(np.argmax(np.abs(d)))
    if abs(d[axis]) < 1e-12:
        raise TrifingerError("zero ray direction")
    point = d * (HALF_WIDTH / abs(d[axis]))
    normal = np.zeros(3)
    normal[axis] = -np.sign(d[axis])
    return point, normal


def vertical_faces(pose: CubePose) -> List[int]:
    """Indices (cube.FACE_NORMALS order) of the four faces whose outward normals are the most
    horizontal in the world (the side faces of a resting cube)."""
    normals = cube.rotate(pose.orientation, cube.FACE_NORMALS)
    order = np.argsort(np.abs(normals[:, 2]), kind="stable")
    return sorted(int(i) for i in order[:4])


def face_point(face: int, offset: float = 0.0, pose: Optional[CubePose] = None) -> Tuple[np.ndarray, np.ndarray]:
    """(point, inward normal) in the cube frame on ``face``: its centre moved ``offset`` [m]
    along the face's most horizontal in-face direction (the world horizontal for ``pose``)."""
    n = cube.FACE_NORMALS[face]
    point = HALF_WIDTH * n
    if offset != 0.0:
        candidates = [a for a in np.eye(3) if abs(a @ n) < 0.5]
        if pose is not None:
            heights = [abs(cube.rotate(pose.orientation, a)[2]) for a in candidates]
            tangent = candidates[int(np.argmin(heights))]
        else:
            tangent = candidates[0]
        point = point + offset * tangent
    return point, -n


# --------------------------------------------------------------------------------- reachability
def _side_cost(pose: CubePose, normals_cube: np.ndarray) -> np.ndarray:
    """(k, 3) cost of finger j touching contact i: 1 - cos of the angle between the contact's
    outward normal (horizontal part, world) and finger j's side direction (0 = facing it)."""
    outward = -cube.rotate(pose.orientation, normals_cube)
    outward[:, 2] = 0.0
    norms = np.linalg.norm(outward, axis=1, keepdims=True)
    outward = np.where(norms > 1e-9, outward / np.maximum(norms, 1e-9), 0.0)
    return 1.0 - outward @ FINGER_DIRECTIONS.T


def ik_residual(grasp: Grasp, pose: CubePose, kinematics: FingerKinematics,
                q0: Optional[np.ndarray] = None) -> np.ndarray:
    """(3,) distance [m] of each fingertip from its grasp target after inverse kinematics
    (0 = reachable)."""
    targets = grasp.tip_targets(pose)
    q = kinematics.inverse_kinematics(targets, q0)
    return np.linalg.norm(kinematics.tip_positions(q) - targets, axis=1)


def grasp_cost(grasp: Grasp, pose: CubePose, kinematics: Optional[FingerKinematics] = None,
               extra_poses: Sequence[CubePose] = ()) -> float:
    """Reachability cost of ``grasp`` at ``pose`` (and at ``extra_poses``, e.g. the goal): the
    fingers' side costs (each finger should touch a face that looks towards it), plus, given the
    kinematics, inf if any fingertip target is unreachable by IK (error > ``IK_TOLERANCE``)."""
    cost = 0.0
    for p in (pose, *extra_poses):
        side = _side_cost(p, grasp.normals)
        cost += float(np.trace(side))
        if kinematics is not None and np.max(ik_residual(grasp, p, kinematics)) > IK_TOLERANCE:
            return float("inf")
    return cost


def segment_enters_box(start: np.ndarray, end: np.ndarray, half_width: float = HALF_WIDTH) -> bool:
    """True if the segment from ``start`` to ``end`` (cube frame) meets the cube
    ``|x|, |y|, |z| <= half_width`` (slab test)."""
    low, high = 0.0, 1.0
    for a, d in zip(start, np.asarray(end, dtype=float) - start):
        if abs(d) < 1e-12:
            if abs(a) > half_width:
                return False
            continue
        t1, t2 = (-half_width - a) / d, (half_width - a) / d
        low, high = max(low, min(t1, t2)), min(high, max(t1, t2))
        if low > high:
            return False
    return True


def lower_links_in_cube(grasp: Grasp, pose: CubePose, kinematics: FingerKinematics,
                        q: Optional[np.ndarray] = None) -> np.ndarray:
    """(3,) bool: finger i's lower link (the segment from its knee to its tip) passes through
    the cube at ``pose`` in the grasp's IK configuration ``q`` (tips touching the contacts; None:
    solved here). IK knows no collisions: a finger reaching across the cube to a face that looks
    away from it gets such a configuration, which the real link cannot take (it rests on the
    cube's top edge, its tip above the contact)."""
    q = kinematics.inverse_kinematics(grasp.tip_targets(pose)) if q is None else q
    tips = cube.to_cube_frame(pose, kinematics.tip_positions(q))
    knees = cube.to_cube_frame(pose, kinematics.knee_positions(q))
    return np.array([segment_enters_box(tip, knee) for tip, knee in zip(tips, knees)])


def holding_torque(grasp: Grasp, pose: CubePose, kinematics: FingerKinematics,
                   squeeze: float = HOLDING_SQUEEZE, q: Optional[np.ndarray] = None) -> float:
    """Largest joint torque [N m] of holding the cube statically with ``grasp`` at ``pose``:
    ``max |g(q) + J^T F|`` at the IK configuration, each tip pressing ``squeeze`` along its inward
    normal and carrying a third of the cube's weight (inf if unreachable). A grasp whose holding
    torque is near the robot's 0.397 N m has nothing left to correct with: measured with CG at
    far goals (level 3), those dropped the cube while the alternatives held it. ``q``: the IK
    configuration if already solved."""
    targets = grasp.tip_targets(pose)
    q = kinematics.inverse_kinematics(targets) if q is None else q
    if np.max(np.linalg.norm(kinematics.tip_positions(q) - targets, axis=1)) > IK_TOLERANCE:
        return float("inf")
    _, normals = grasp.in_world(pose)
    forces = squeeze * normals + np.array([0.0, 0.0, CUBE_MASS * 9.81 / N_FINGERS])
    torques = kinematics.gravity(q).reshape(N_FINGERS, 3) + np.einsum(
        "fji,fj->fi", kinematics.tip_jacobians(q), forces)
    return float(np.max(np.abs(torques)))


def assign_fingers(
    points: np.ndarray, normals: np.ndarray, pose: CubePose,
    kinematics: Optional[FingerKinematics] = None, name: str = "grasp",
    extra_poses: Sequence[CubePose] = (),
) -> Tuple[Grasp, float]:
    """The permutation of the three contacts (cube frame) over the fingers with the lowest
    :func:`grasp_cost`, as (grasp, cost); the cost is inf if none is reachable."""
    best: Optional[Tuple[Grasp, float]] = None
    side = _side_cost(pose, np.asarray(normals, dtype=float))
    # cheap side costs first; IK only for the permutations in that order until one is reachable
    perms = sorted(itertools.permutations(range(N_FINGERS)),
                   key=lambda o: sum(side[o[j], j] for j in range(N_FINGERS)))
    for order in perms:
        grasp = Grasp(name, np.asarray(points)[list(order)], np.asarray(normals)[list(order)])
        cost = grasp_cost(grasp, pose, kinematics, extra_poses)
        if best is None or cost < best[1]:
            best = (grasp, cost)
        if np.isfinite(cost) and kinematics is not None:
            break
    assert best is not None
    return best


def _goal_pose(pose: CubePose, goal: Optional[CubePose], level: int) -> Optional[CubePose]:
    """The cube pose at the goal as the controllers move it: the goal position, the goal's
    orientation at level 4 and the current orientation otherwise (levels 1-3 ignore it)."""
    if goal is None:
        return None
    orientation = goal.orientation if level == 4 else pose.orientation
    return CubePose(np.asarray(goal.position, float), np.asarray(orientation, float))


# --------------------------------------------------------------------------------- strategies
def triangle_grasp(cube_pose: CubePose, goal: Optional[CubePose] = None,
                   kinematics: Optional[FingerKinematics] = None) -> Grasp:
    """TG (§IV-B, [47]): each finger on the ray from the cube's centre towards its side of the
    arena (three horizontal rays 120 deg apart, an equilateral triangle around the centre),
    contacts where the rays leave the cube. The triangle is turned by up to 15 deg so that the
    contacts are as far from the faces' edges as possible (a turn that puts the rays at 0 and
    +-30 deg to the face normals always exists). ``goal`` and ``kinematics`` are accepted for a
    uniform strategy signature; TG does not depend on them."""
    world_to_cube = cube.conjugate(cube_pose.orientation)
    # candidates: a grid, plus the turns aligning a ray with a (horizontal) face normal, which
    # are optimal for a cube resting on a face
    normals = cube.rotate(cube_pose.orientation, cube.FACE_NORMALS[vertical_faces(cube_pose)])
    step = np.deg2rad(30.0)
    aligned = np.mod(np.arctan2(normals[:, 1], normals[:, 0]) - FINGER_ANGLES[0] + step / 2, step) - step / 2
    best: Optional[Tuple[float, np.ndarray, np.ndarray]] = None
    for turn in np.concatenate([np.linspace(-TG_MAX_TURN, TG_MAX_TURN, 31), aligned]):
        angles = FINGER_ANGLES + turn
        rays = np.stack([np.cos(angles), np.sin(angles), np.zeros(3)], axis=1)
        contacts = [surface_point(d) for d in cube.rotate(world_to_cube, rays)]
        points = np.array([c[0] for c in contacts])
        normals = np.array([c[1] for c in contacts])
        # distance of each contact from its face centre (0 at the centre, HALF_WIDTH at an edge)
        off_centre = np.linalg.norm(points + HALF_WIDTH * normals, axis=1)
        score = float(np.max(off_centre)) + 1e-3 * abs(turn)
        if best is None or score < best[0]:
            best = (score, points, normals)
    assert best is not None
    return Grasp("tg", best[1], best[2])


def center_of_three_grasp(cube_pose: CubePose, goal: Optional[CubePose] = None,
                          kinematics: Optional[FingerKinematics] = None, level: int = 3) -> Grasp:
    """CG (§IV-C): fingertips at the centres of three of the four vertical faces.

    Levels 1-3: a vertical face whose normal points towards the goal (horizontally) gets no
    finger, so the others can push the cube there: the paper's face closest to the goal without
    the kinematics; with them, of the faces towards the goal and their finger assignments the one
    needing the least torque to hold the cube at a goal above the floor (:func:`holding_torque`;
    the other face sets if none of those holds it within :data:`HOLDING_MARGIN` without a lower
    link through the cube; without a goal: the face that is hardest for the fingers to reach).
    Level 4: two fingers on the pair of opposite faces whose axis is closest to the rotation from
    the cube's to the goal's orientation, the third on the face at which an upward force turns the
    cube about that axis in the right sense (with the kinematics, its assignments ranked as above,
    without other face sets). Fingers are assigned by :func:`assign_fingers`; GraspError if no
    assignment is reachable. Goals on the floor keep the paper's rule and have no link check; the
    link check tests the link's centreline, not its thickness."""
    faces = vertical_faces(cube_pose)
    normals_world = cube.rotate(cube_pose.orientation, cube.FACE_NORMALS)
    if level == 4 and goal is not None:
        rotvec = cube.relative_rotation_vector(cube_pose.orientation, goal.orientation)
        pairs = [(f, int(cube.OPPOSITE_FACE[f])) for f in faces if f % 2 == 0]
        pair = max(pairs, key=lambda fp: abs(normals_world[fp[0]] @ rotvec))
        others = [f for f in faces if f not in pair]
        # an upward force at a face centre c = h n turns the cube about h (n x z)
        z = np.array([0.0, 0.0, 1.0])
        third = max(others, key=lambda f: float(np.cross(normals_world[f], z) @ rotvec))
        chosen = [pair[0], pair[1], third]
        if kinematics is not None and goal.position[2] > HALF_WIDTH + CARRY_HEIGHT:
            return _least_torque_assignments([chosen], cube_pose, goal, kinematics, level)
    else:
        if goal is not None:
            towards = np.asarray(goal.position, float) - np.asarray(cube_pose.position, float)
            towards[2] = 0.0
        else:
            towards = np.zeros(3)
        if np.linalg.norm(towards) > 1e-3:
            if kinematics is not None and goal.position[2] > HALF_WIDTH + CARRY_HEIGHT:
                preferred = _faces_towards(cube_pose, towards)
                others = [[f for f in faces if f != free] for free in faces]
                others = [fs for fs in others if fs not in preferred]
                return _least_torque_assignments(preferred, cube_pose, goal, kinematics, level, others)
            free = max(faces, key=lambda f: float(normals_world[f] @ towards))
            chosen = [f for f in faces if f != free]
        else:  # no horizontal motion needed: leave free the face that suits the fingers least
            results = [_faces_grasp([f for f in faces if f != free], cube_pose, goal, kinematics, level)
                       for free in faces]
            grasp, cost = min(results, key=lambda r: r[1])
            if not np.isfinite(cost):
                raise GraspError("no reachable centre-of-three grasp for this cube pose")
            return grasp
    grasp, cost = _faces_grasp(chosen, cube_pose, goal, kinematics, level)
    if not np.isfinite(cost):
        raise GraspError("no reachable centre-of-three grasp for this cube pose")
    return grasp


def _least_torque_assignments(face_sets: Sequence[Sequence[int]], pose: CubePose, goal: CubePose,
                              kinematics: FingerKinematics, level: int,
                              fallback_sets: Sequence[Sequence[int]] = ()) -> Grasp:
    """CG on one of ``face_sets`` (each three vertical faces) with the reachable finger
    assignment that needs the least :func:`holding_torque` at the goal (ties: the lower side
    cost); GraspError if none is reachable. An addition to §IV-C: with the paper's choice (face
    nearest the goal free, first reachable assignment) far goals left a finger at its torque or
    joint limit and the cube dropped (level 3), or the fingers saturated at the goal (level 4).
    Ranked by: lower link through the cube (:func:`lower_links_in_cube`, now or at the goal:
    the IK ignores collisions, the link rests on the cube's top edge and CLOSE throws the cube);
    holding torque over :data:`HOLDING_MARGIN` x TORQUE_LIMIT; a set of ``fallback_sets`` rather
    than of ``face_sets``; holding torque; side cost. So a fallback set (e.g. one pulling the cube
    towards the goal) is used only if every preferred assignment crosses or lacks the margin."""
    goal_pose = _goal_pose(pose, goal, level)
    best: Optional[Tuple[Tuple[bool, bool, bool, float, float], Grasp]] = None
    for fallback, sets in ((False, face_sets), (True, fallback_sets)):
        for faces in sets:
            contacts = [face_point(f) for f in faces]
            for order in itertools.permutations(range(N_FINGERS)):
                grasp = Grasp("cg", np.array([contacts[o][0] for o in order]),
                              np.array([contacts[o][1] for o in order]))
                # reachable at the goal (holding_torque's check) and where the cube is now; one IK
                # solve per pose serves the torque, the reach and the link checks
                at_goal = kinematics.inverse_kinematics(grasp.tip_targets(goal_pose))
                torque = holding_torque(grasp, goal_pose, kinematics, q=at_goal)
                targets = grasp.tip_targets(pose)
                now = kinematics.inverse_kinematics(targets)
                if not np.isfinite(torque) or np.max(np.linalg.norm(
                        kinematics.tip_positions(now) - targets, axis=1)) > IK_TOLERANCE:
                    continue
                crossing = bool(np.any(lower_links_in_cube(grasp, pose, kinematics, now))
                                or np.any(lower_links_in_cube(grasp, goal_pose, kinematics, at_goal)))
                key = (crossing, torque > HOLDING_MARGIN * TORQUE_LIMIT, fallback, torque,
                       grasp_cost(grasp, pose, None, (goal_pose,)))
                if best is None or key < best[0]:
                    best = (key, grasp)
    if best is None:
        raise GraspError("no reachable centre-of-three grasp for this cube pose")
    return best[1]


def _faces_towards(pose: CubePose, towards: np.ndarray) -> List[List[int]]:
    """The CG face sets whose free face faces ``towards`` (horizontal normal component >= 0, so
    the three fingers push the cube there rather than pull it)."""
    faces = vertical_faces(pose)
    normals_world = cube.rotate(pose.orientation, cube.FACE_NORMALS)
    return [[f for f in faces if f != free] for free in faces
            if float(normals_world[free] @ towards) >= -1e-9]


def _faces_grasp(faces: Sequence[int], pose: CubePose, goal: Optional[CubePose],
                 kinematics: Optional[FingerKinematics], level: int) -> Tuple[Grasp, float]:
    contacts = [face_point(f) for f in faces]
    goal_pose = _goal_pose(pose, goal, level)
    return assign_fingers(np.array([c[0] for c in contacts]), np.array([c[1] for c in contacts]),
                          pose, kinematics, "cg", () if goal_pose is None else (goal_pose,))


def _opposite_faces_candidates(pose: CubePose) -> List[Grasp]:
    """All 24 OG contact sets x finger assignments: pair face (4) x lone finger (3) x order
    of the pair's two fingers (2)."""
    grasps = []
    for face in vertical_faces(pose):
        pair = [face_point(face, s * OG_SPREAD, pose) for s in (-1.0, 1.0)]
        lone = face_point(int(cube.OPPOSITE_FACE[face]))
        for lone_finger in range(N_FINGERS):
            pair_fingers = [f for f in range(N_FINGERS) if f != lone_finger]
            for swap in (False, True):
                contacts: List[Tuple[np.ndarray, np.ndarray]] = [lone] * N_FINGERS
                a, b = (pair[1], pair[0]) if swap else (pair[0], pair[1])
                contacts[pair_fingers[0]], contacts[pair_fingers[1]] = a, b
                contacts[lone_finger] = lone
                grasps.append(Grasp("og", np.array([c[0] for c in contacts]),
                                    np.array([c[1] for c in contacts])))
    return grasps


def _center_of_three_candidates(pose: CubePose) -> List[Grasp]:
    """All 24 CG contact sets x finger assignments: free face (4) x permutation (6)."""
    faces = vertical_faces(pose)
    grasps = []
    for free in faces:
        contacts = [face_point(f) for f in faces if f != free]
        for order in itertools.permutations(range(N_FINGERS)):
            grasps.append(Grasp("cg", np.array([contacts[o][0] for o in order]),
                                np.array([contacts[o][1] for o in order])))
    return grasps


def _rank(candidates: Sequence[Grasp], pose: CubePose, goal: Optional[CubePose],
          kinematics: Optional[FingerKinematics], level: int) -> Iterator[Tuple[Grasp, float]]:
    """(grasp, cost) best side cost first; with the kinematics the IK check (cost inf if
    unreachable) runs lazily, as the caller consumes the list."""
    goal_pose = _goal_pose(pose, goal, level)
    extra = () if goal_pose is None else (goal_pose,)
    scored = sorted(((g, grasp_cost(g, pose, None, extra)) for g in candidates), key=lambda r: r[1])
    for grasp, cost in scored:
        if kinematics is not None and np.isfinite(cost):
            cost = cost if np.isfinite(grasp_cost(grasp, pose, kinematics, extra)) else float("inf")
        yield grasp, cost


def opposite_faces_grasp(cube_pose: CubePose, goal: Optional[CubePose] = None,
                         kinematics: Optional[FingerKinematics] = None, level: int = 3) -> Grasp:
    """OG (§IV-A, Fig. 2): two fingers on one vertical face (``OG_SPREAD`` either side of its
    centre), one on the centre of the opposite face; of all 24 such grasps the one with the
    lowest reachability cost at the cube and at the goal pose. GraspError if none is reachable."""
    for grasp, cost in _rank(_opposite_faces_candidates(cube_pose), cube_pose, goal, kinematics, level):
        if np.isfinite(cost):
            return grasp
    raise GraspError("no reachable opposite-faces grasp for this cube pose")


def heuristic_candidates(cube_pose: CubePose, goal: Optional[CubePose] = None,
                         kinematics: Optional[FingerKinematics] = None, level: int = 3) -> List[Grasp]:
    """PG's heuristic grasps (§IV-A, Fig. 2 caption): all permutations of fingers and vertical
    faces for CG (24) and OG (24), best first by :func:`grasp_cost` at the cube and goal poses;
    unreachable ones (given the kinematics) are left out. The motion planner tries them in
    this order and falls back to :func:`sample_force_closure_grasps`."""
    candidates = _center_of_three_candidates(cube_pose) + _opposite_faces_candidates(cube_pose)
    ranked = _rank(candidates, cube_pose, goal, kinematics, level)
    return [g for g, c in ranked if np.isfinite(c)]


def sample_force_closure_grasps(
    rng: np.random.Generator, n: int, mu: float = DEFAULT_MU,
    cube_pose: Optional[CubePose] = None, kinematics: Optional[FingerKinematics] = None,
    goal: Optional[CubePose] = None, level: int = 3, max_tries: int = 2000,
) -> List[Grasp]:
    """Up to ``n`` random grasps in force closure (PG's fallback, §IV-A, [45]).

    Each try draws three faces and a point on each (uniform, 5 mm away from the edges) and keeps
    the contacts if :func:`force_closure` holds. Given ``cube_pose``, the face the cube rests
    on is never used and fingers are assigned by :func:`assign_fingers` (with ``kinematics``:
    unreachable grasps are dropped); without it the finger order is as drawn."""
    if n < 0:
        raise TrifingerError(f"n must be >= 0, got {n}")
    allowed = list(range(6))
    if cube_pose is not None:
        up_normals = cube.rotate(cube_pose.orientation, cube.FACE_NORMALS)[:, 2]
        allowed = [f for f in allowed if up_normals[f] > -VERTICAL_Z]
    goal_pose = _goal_pose(cube_pose, goal, level) if cube_pose is not None else None
    extra = () if goal_pose is None else (goal_pose,)
    limit = HALF_WIDTH - 0.005
    grasps: List[Grasp] = []
    for _ in range(max_tries):
        if len(grasps) >= n:
            break
        faces = rng.choice(allowed, size=N_FINGERS)
        points = []
        for f in faces:
            p = rng.uniform(-limit, limit, size=3)
            axis = int(np.argmax(np.abs(cube.FACE_NORMALS[f])))
            p[axis] = HALF_WIDTH * cube.FACE_NORMALS[f][axis]
            points.append(p)
        points_arr = np.array(points)
        normals = -cube.FACE_NORMALS[faces]
        if not force_closure(points_arr, normals, mu):
            continue
        if cube_pose is None:
            grasps.append(Grasp("fc", points_arr, normals))
            continue
        grasp, cost = assign_fingers(points_arr, normals, cube_pose, kinematics, "fc", extra)
        if np.isfinite(cost):
            grasps.append(grasp)
    return grasps


def planned_grasp(cube_pose: CubePose, goal: Optional[CubePose] = None,
                  kinematics: Optional[FingerKinematics] = None, level: int = 3) -> Grasp:
    """PG without a motion planner (for CPC/CIC in the mix and match, §VI): the best-ranked
    heuristic candidate; a sampled force-closure grasp if none is reachable."""
    candidates = _center_of_three_candidates(cube_pose) + _opposite_faces_candidates(cube_pose)
    for grasp, cost in _rank(candidates, cube_pose, goal, kinematics, level):
        if np.isfinite(cost):
            return Grasp("pg", grasp.contact_points, grasp.normals)
    sampled = sample_force_closure_grasps(np.random.default_rng(0), 1, cube_pose=cube_pose,
                                          kinematics=kinematics, goal=goal, level=level)
    if not sampled:
        raise GraspError("no reachable grasp (heuristic or sampled) for this cube pose")
    return Grasp("pg", sampled[0].contact_points, sampled[0].normals)


GraspStrategy = Callable[..., Grasp]
#: Grasp strategies by their short name (the ``--grasp`` option): each is called as
#: ``strategy(cube_pose, goal, kinematics, level=level)``.
STRATEGIES: Dict[str, GraspStrategy] = {
    "tg": lambda pose, goal=None, kinematics=None, level=3: triangle_grasp(pose, goal, kinematics),
    "cg": center_of_three_grasp,
    "og": opposite_faces_grasp,
    "pg": planned_grasp,
}


def make_grasp(name: str, cube_pose: CubePose, goal: Optional[CubePose] = None,
               kinematics: Optional[FingerKinematics] = None, level: int = 3) -> Grasp:
    """The grasp of strategy ``name`` (tg, cg, og, pg) for the cube at ``cube_pose``."""
    try:
        strategy = STRATEGIES[name]
    except KeyError:
        raise TrifingerError(f"unknown grasp {name!r}: expected one of {sorted(STRATEGIES)}") from None
    return strategy(cube_pose, goal, kinematics, level=level)


def grasp_source(name: str, kinematics: Optional[FingerKinematics] = None,
                 level: int = 3) -> Callable[[Observation], Grasp]:
    """A callable ``observation -> Grasp`` choosing grasp ``name`` for the observed cube and goal
    when an episode starts (what the controllers call in ``reset``; validates ``name`` now)."""
    if name not in STRATEGIES:
        raise TrifingerError(f"unknown grasp {name!r}: expected one of {sorted(STRATEGIES)}")

    def choose(observation: Observation) -> Grasp:
        return make_grasp(name, observation.cube, observation.goal, kinematics, level)

    choose.__name__ = f"grasp_{name}"
    return choose
