"""The grasp strategies of paper 004 (§IV, Fig. 2): TG, CG, OG and PG's candidates.

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

:func:`make_grasp` and :func:`grasp_source` choose a strategy by name. The grasp type is in
grasp_geometry.py, force closure and contact forces in grasp_forces.py, reachability in
grasp_reachability.py.
"""
from __future__ import annotations

import itertools
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from trifinger_controllers import cube
from trifinger_controllers.errors import TrifingerError
from trifinger_controllers.grasp_forces import DEFAULT_MU, force_closure
from trifinger_controllers.grasp_geometry import (
    FINGER_ANGLES,
    HALF_WIDTH,
    Grasp,
    face_point,
    surface_point,
    vertical_faces,
)
from trifinger_controllers.grasp_reachability import (
    IK_TOLERANCE,
    assign_fingers,
    grasp_cost,
    holding_torque,
    lower_links_in_cube,
)
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.types import N_FINGERS, TORQUE_LIMIT, CubePose, Observation

#: Maximal turn [rad] of TG's triangle away from the fingers' sides.
TG_MAX_TURN = np.deg2rad(15.0)
#: Offset [m] of OG's two fingers from the centre of their shared face (along the horizontal).
OG_SPREAD = 0.6 * HALF_WIDTH
#: Faces whose outward normal has |z| below this count as vertical.
VERTICAL_Z = 0.5
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
