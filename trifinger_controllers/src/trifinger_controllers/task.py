"""The RRC "move cube" task: goals, initial poses, reward and errors (paper 004 §III, §VI).

Goals come from trifinger_simulation's ``move_cube.sample_goal`` (levels 1-4), the reward is
``-move_cube.evaluate_state`` and the workspace check is ``move_cube.validate_goal``; this module
only seeds them from a NumPy Generator and converts between :class:`CubePose` and
``move_cube.Pose``.

Initial poses (§VI: "we initialize the experiments so that no cube alignment primitives are
required"): the cube rests on a face on the floor within :data:`INITIAL_RADIUS` of the centre, so
the slide-to-centre primitive is not needed, and its orientation is already aligned with the
goal's as far as a resting cube can be:

* levels 1-3 (the reward ignores orientation): any face up, uniform yaw;
* level 4 without an orientation error: the resting orientation nearest to the goal's (its
  most upward face turned flat by the minimal rotation), i.e. what perfect flip and yaw
  alignments (§IV-D) achieve; the remaining error is that face's tilt in the goal, 0-54.7 deg;
* an initial orientation error ``delta`` (Table II's delta-theta in {10, 25, 35} deg):
  :func:`sample_episode` follows the paper's protocol on the robot ("assign the goal pose as a
  relative transformation of the initial pose"): the initial pose is a resting pose as above
  and the goal orientation is the initial orientation rotated by ``delta`` about an axis drawn
  uniformly on the sphere, at a level-4 goal position (height >= the cube's half diagonal, so
  every orientation is valid). For a given goal, :func:`initial_pose` instead tilts the goal's
  orientation to the nearest resting orientation (angle ``alpha``) and adds the yaw
  ``beta = 2 acos(cos(delta/2) / cos(alpha/2))`` (random sign) so that the total error is
  exactly ``delta``; if ``delta < alpha`` no resting pose has that error and it raises.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional, Tuple

import numpy as np
from trifinger_simulation.tasks import move_cube

from trifinger_controllers import cube
from trifinger_controllers.types import CUBE_WIDTH, CubePose
from trifinger_controllers.errors import TrifingerError

LEVELS = (1, 2, 3, 4)
#: Radius [m] of the disc around the centre in which the cube starts (benchmark-rrc trained its
#: residual policies with 7 cm; 5 cm keeps every grasp heuristic reachable without sliding).
INITIAL_RADIUS = 0.05
#: Height [m] of the cube's centre when it rests on the floor.
RESTING_HEIGHT = CUBE_WIDTH / 2
#: Arena constants of move_cube (xy radius for the cube's centre, height range of goals).
MAX_CENTRE_DISTANCE = float(move_cube._max_cube_com_distance_to_center)
MAX_GOAL_HEIGHT = float(move_cube._max_height)


# --------------------------------------------------------------------------------- conversions
def to_move_cube(pose: CubePose) -> move_cube.Pose:
    """The pose as trifinger_simulation's ``move_cube.Pose``."""
    return move_cube.Pose(np.asarray(pose.position, float), np.asarray(pose.orientation, float))


def from_move_cube(pose: move_cube.Pose) -> CubePose:
    """A ``move_cube.Pose`` (or any object with position/orientation) as :class:`CubePose`."""
    return CubePose(np.asarray(pose.position, float).copy(), np.asarray(pose.orientation, float).copy())


def check_level(level: int) -> int:
    """``level`` if it is one of 1-4, else ValueError."""
    if level not in LEVELS:
        raise TrifingerError(f"invalid level {level!r}: expected one of {LEVELS}")
    return int(level)


@contextlib.contextmanager
def _seeded_move_cube(rng: np.random.Generator) -> Iterator[None]:
    """Run move_cube's sampler on a RandomState drawn from ``rng`` (its module-global generator
    is restored afterwards)."""
    saved = move_cube.random
    move_cube.random = np.random.RandomState(int(rng.integers(2 ** 32)))
    try:
        yield
    finally:
        move_cube.random = saved


# --------------------------------------------------------------------------------- sampling
def sample_goal(level: int, rng: np.random.Generator) -> CubePose:
    """A goal of RRC ``level`` from move_cube's sampler, seeded by ``rng``."""
    check_level(level)
    with _seeded_move_cube(rng):
        return from_move_cube(move_cube.sample_goal(level))


def random_resting_orientation(rng: np.random.Generator) -> np.ndarray:
    """A face-down orientation: one of the six faces up, uniform yaw."""
    face_up = cube.FACE_NORMALS[rng.integers(6)]
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(face_up, z)
    if np.linalg.norm(axis) < 1e-9:  # +z or -z up
        tilt = cube.IDENTITY if face_up[2] > 0 else np.array([1.0, 0.0, 0.0, 0.0])
    else:
        tilt = cube.from_axis_angle(axis, np.pi / 2)
    return cube.normalize(cube.multiply(cube.from_yaw(rng.uniform(0, 2 * np.pi)), tilt))


def _initial_position(rng: np.random.Generator) -> np.ndarray:
    radius = INITIAL_RADIUS * np.sqrt(rng.uniform())
    theta = rng.uniform(0, 2 * np.pi)
    return np.array([radius * np.cos(theta), radius * np.sin(theta), RESTING_HEIGHT])


def initial_pose(
    goal: CubePose,
    level: int,
    rng: np.random.Generator,
    orientation_error_deg: Optional[float] = None,
) -> CubePose:
    """A resting initial pose near the centre for ``goal`` (see the module docstring).

    With ``orientation_error_deg`` the initial orientation differs from the goal's by exactly
    that angle (for levels 1-3 the goal orientation is the identity, so it is a pure yaw);
    ValueError if no resting orientation is that close to the goal's."""
    check_level(level)
    position = _initial_position(rng)
    if orientation_error_deg is None:
        if level == 4:
            orientation = cube.nearest_resting_orientation(goal.orientation)
        else:
            orientation = random_resting_orientation(rng)
        return CubePose(position, orientation)
    delta = np.deg2rad(float(orientation_error_deg))
    if not 0.0 <= delta <= np.pi:
        raise TrifingerError(f"orientation error {orientation_error_deg} deg outside [0, 180]")
    resting = cube.nearest_resting_orientation(goal.orientation)
    alpha = float(cube.angle_between(resting, goal.orientation))
    if delta < alpha - 1e-9:
        raise TrifingerError(
            f"the goal orientation is {np.rad2deg(alpha):.1f} deg from every resting orientation:"
            f" an initial orientation error of {orientation_error_deg} deg is impossible"
        )
    ratio = np.clip(np.cos(delta / 2) / np.cos(alpha / 2), -1.0, 1.0)
    beta = 2.0 * np.arccos(ratio) * rng.choice([-1.0, 1.0])
    orientation = cube.normalize(cube.multiply(cube.from_yaw(beta), resting))
    return CubePose(position, orientation)


def sample_episode(
    level: int, rng: np.random.Generator, orientation_error_deg: Optional[float] = None
) -> Tuple[CubePose, CubePose]:
    """(goal, initial pose) of one evaluation episode, drawn from ``rng`` only.

    Level 4 with ``orientation_error_deg``: the paper's relative-goal protocol (module
    docstring); otherwise :func:`sample_goal` then :func:`initial_pose`."""
    check_level(level)
    if level == 4 and orientation_error_deg is not None:
        delta = np.deg2rad(float(orientation_error_deg))
        initial = CubePose(_initial_position(rng), random_resting_orientation(rng))
        axis = rng.normal(size=3)
        rotation = cube.from_axis_angle(axis / np.linalg.norm(axis), delta)
        goal_position = sample_goal(4, rng).position
        goal = CubePose(goal_position, cube.normalize(cube.multiply(rotation, initial.orientation)))
        check_goal(goal)
        return goal, initial
    goal = sample_goal(level, rng)
    return goal, initial_pose(goal, level, rng, orientation_error_deg)


# --------------------------------------------------------------------------------- workspace
def check_goal(pose: CubePose) -> CubePose:
    """``pose`` if it is a valid goal (move_cube.validate_goal: inside the arena circle, centre
    height in [CUBE_WIDTH/2, 0.1] m, no corner below the floor, unit quaternion), else
    ValueError with one line saying why."""
    position = np.asarray(pose.position, dtype=float)
    orientation = np.asarray(pose.orientation, dtype=float)
    if position.shape != (3,) or orientation.shape != (4,):
        raise TrifingerError(
            f"goal must have a 3-vector position and an xyzw quaternion, got shapes"
            f" {position.shape} and {orientation.shape}"
        )
    if not (np.all(np.isfinite(position)) and np.all(np.isfinite(orientation))):
        raise TrifingerError("goal contains non-finite values")
    if abs(np.linalg.norm(orientation) - 1.0) > 1e-3:
        raise TrifingerError(f"goal orientation {orientation.tolist()} is not a unit quaternion (xyzw)")
    try:
        move_cube.validate_goal(move_cube.Pose(position, orientation / np.linalg.norm(orientation)))
    except move_cube.InvalidGoalError as error:
        raise TrifingerError(
            f"goal outside the workspace: {error} (position {np.round(position, 4).tolist()};"
            f" centre within {MAX_CENTRE_DISTANCE:.3f} m of the axis, height"
            f" {RESTING_HEIGHT:.4f}-{MAX_GOAL_HEIGHT} m)"
        ) from None
    return pose


def in_workspace(pose: CubePose) -> bool:
    """True if ``pose`` is a valid goal (see :func:`check_goal`)."""
    try:
        check_goal(pose)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------------- reward, errors
def reward(level: int, goal: CubePose, pose: CubePose) -> float:
    """RRC reward of ``pose`` for ``goal`` at ``level``: ``-move_cube.evaluate_state`` (§III:
    r_3 for levels 1-3, r_4 with the orientation for level 4; 0 is perfect)."""
    check_level(level)
    return -float(move_cube.evaluate_state(to_move_cube(goal), to_move_cube(pose), level))


def rewards(level: int, goal: CubePose, positions: np.ndarray, orientations: np.ndarray) -> np.ndarray:
    """:func:`reward` of many poses at once (positions (n, 3), orientations (n, 4)): the same
    formulas as ``move_cube.evaluate_state``, vectorised for per-step episode returns."""
    check_level(level)
    positions = np.asarray(positions, dtype=float).reshape(-1, 3)
    goal_position = np.asarray(goal.position, dtype=float)
    xy = np.linalg.norm(positions[:, :2] - goal_position[:2], axis=1)
    z = np.abs(positions[:, 2] - goal_position[2])
    cost = (xy / (2 * move_cube._ARENA_RADIUS) + z / move_cube._max_height) / 2
    if level == 4:
        angle = cube.angle_between(np.asarray(goal.orientation, float), np.asarray(orientations, float).reshape(-1, 4))
        cost = (cost + angle / np.pi) / 2
    return -cost


def position_error(goal: CubePose, pose: CubePose) -> float:
    """Euclidean distance [m] between the cube's and the goal's centres."""
    return float(np.linalg.norm(np.asarray(pose.position, float) - np.asarray(goal.position, float)))


def orientation_error(goal: CubePose, pose: CubePose) -> float:
    """Angle [rad] of the rotation between the cube's and the goal's orientations."""
    return float(cube.angle_between(goal.orientation, pose.orientation))
