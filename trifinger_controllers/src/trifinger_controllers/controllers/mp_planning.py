"""MP's grasp selection and path planning (paper 004 §IV-A), run off the control call.

:class:`MpPlanning` tries the grasp candidates (PG: the heuristic grasps, then random
force-closure grasps; or the one given), plans the cube's path to a goal region with the grasp
maintained (rrt.py, RRT-Connect in task space, the fingers by IK), re-solves it for the squeezed
fingertip targets and builds the approach; it hands the controller (mp.py) an :class:`MpPlan`.
"""
from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, Union

import numpy as np

from trifinger_controllers import cube
from trifinger_controllers import grasps as grasp_lib
from trifinger_controllers.grasp_geometry import Grasp
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.params import ParameterSet
from trifinger_controllers.rrt import GraspPathPlanner, Plan, PlannerConfig
from trifinger_controllers.types import CUBE_WIDTH, CubePose, Observation

#: Approach geometry [m]: the tips rise to this far above the cube's top, move over the
#: pre-grasp positions this far outside the faces, then descend beside them.
APPROACH_HEIGHT = 0.03
APPROACH_CLEARANCE = 0.02
#: Candidates planned again without the collision checks when none has a plan.
RELAXED_ATTEMPTS = 3
#: Number of random force-closure grasps PG tries after the heuristic ones.
N_SAMPLED_GRASPS = 10
#: Goal region of levels 1-3: turns [deg] of the cube about the vertical, in order of preference.
GOAL_YAWS = (0.0, 15.0, -15.0, 30.0, -30.0, 45.0, -45.0, 60.0, -60.0, 90.0, -90.0)
#: Goal region of level 4: fractions of the rotation to the goal orientation, in that order.
GOAL_FRACTIONS = (1.0, 0.75, 0.5, 0.25, 0.0)

GraspSource = Union[str, Grasp, Callable[[Observation], Grasp]]


@dataclass(frozen=True)
class PlanningAttempt:
    """One grasp tried by the planner: its strategy name, wall-clock planning time [s],
    whether a path was found and the RRT-Connect iterations (0: direct path)."""

    grasp: str
    time: float
    success: bool
    iterations: int = 0
    relaxed: bool = False      # planned without the collision checks


@dataclass(frozen=True)
class MpPlan:
    """What :class:`MpPlanning` hands to the controller: the grasp, the path (squeezed joint
    positions), the planner that found it (on the planning thread's kinematics), every attempt,
    and the approach: joint positions (3, 9) with the tips raised straight up, over the
    pre-grasp positions and beside the contacts, and those holding the plan's last pose. The
    grasp and path are None if no grasp is reachable."""

    grasp: Optional[Grasp]
    plan: Optional[Plan]
    planner: Optional[GraspPathPlanner]
    attempts: List[PlanningAttempt]
    approach: Optional[np.ndarray] = None
    target_joints: Optional[np.ndarray] = None


def squeezed_joints(kinematics: FingerKinematics, grasp: Grasp, squeeze: float, position: np.ndarray,
                    orientation: np.ndarray, q_seed: np.ndarray) -> np.ndarray:
    """Joint positions commanding the fingertips ``squeeze`` [m] inside the faces at a cube pose."""
    targets = cube.rotate(orientation, grasp.tip_offsets(squeeze)) + position
    return kinematics.inverse_kinematics(targets, q_seed, iterations=60)


@dataclass(frozen=True)
class MpPlanning:
    """MP's grasp selection and path planning (§IV-A) for an observation, run by the
    GraspPlanner off the control call with its own kinematics; ``rng`` (the controller's, handed
    over with each request) seeds the planner and PG's sampled grasps."""

    grasp_source: GraspSource
    params: ParameterSet
    level: int
    planner_config: PlannerConfig

    def __call__(self, observation: Observation, kinematics: FingerKinematics,
                 rng: np.random.Generator) -> MpPlan:
        attempts: List[PlanningAttempt] = []
        grasp, plan, planner = self.select_grasp_and_plan(observation, kinematics, rng, attempts)
        if plan is None:
            return MpPlan(None, None, None, attempts)
        q = np.asarray(observation.robot.position, dtype=float)
        start = plan.pose(0)
        beside = cube.to_world(start, grasp.tip_offsets(-APPROACH_CLEARANCE))
        safe_height = float(np.max(cube.corners(start)[:, 2])) + APPROACH_HEIGHT
        raised = kinematics.tip_positions(q)                  # straight up, clear of the cube
        raised[:, 2] = np.maximum(raised[:, 2], safe_height)
        above = beside.copy()                                 # over the pre-grasp positions
        above[:, 2] = np.maximum(above[:, 2], safe_height)
        q_raised = kinematics.inverse_kinematics(raised, q)
        q_above = kinematics.inverse_kinematics(above, q_raised)
        q_beside = kinematics.inverse_kinematics(beside, q_above)
        target = planner.configuration(plan.positions[-1], plan.orientations[-1], plan.joint_positions[-1])
        if target is None:  # (the plan's last pose is valid: a different IK branch)
            target = plan.joint_positions[-1]
        return MpPlan(grasp, plan, planner, attempts, np.stack([q_raised, q_above, q_beside]), target)

    def goal_poses(self, observation: Observation) -> List[CubePose]:
        """The goal region the planner may end in, in order of preference; the goal is raised
        to ``lift_height`` above the floor if it is lower (no dragging on the floor). Levels 1-3 ignore
        the orientation: the goal position with the cube's current orientation turned about
        the vertical by up to ``GOAL_YAWS`` (the turn lets the fingers reach goals near the
        arena's edge). Level 4: the goal orientation, then orientations between it and the
        current one ("the planner may have only found a point near the goal for which the grasp
        is valid", §VII)."""
        position = np.asarray(observation.goal.position, float).copy()
        position[2] = max(position[2], CUBE_WIDTH / 2 + self.params.lift_height)
        current = cube.normalize(observation.cube.orientation)
        if self.level == 4:
            goal = cube.normalize(observation.goal.orientation)
            rotvec = cube.relative_rotation_vector(current, goal)
            return [CubePose(position, cube.normalize(cube.multiply(cube.from_rotation_vector(f * rotvec), current)))
                    for f in GOAL_FRACTIONS]
        return [CubePose(position, cube.normalize(cube.multiply(cube.from_yaw(np.deg2rad(a)), current)))
                for a in GOAL_YAWS]

    def candidates(self, observation: Observation, kinematics: FingerKinematics,
                   rng: np.random.Generator) -> Iterator[Grasp]:
        """The grasps to plan with, lazily. PG: the heuristic grasps reachable at the start and
        the goal first, then the other heuristic grasps reachable at the start (the planner may
        turn the cube at the goal), then sampled force-closure grasps."""
        pose, goal = observation.cube, observation.goal
        source = self.grasp_source
        if isinstance(source, Grasp):
            yield source
        elif callable(source):
            yield source(observation)
        elif source != "pg":
            try:
                yield grasp_lib.make_grasp(source, pose, goal, kinematics, level=self.level)
            except grasp_lib.GraspError:
                return
        else:
            seen: List[np.ndarray] = []
            for grasp in itertools.chain(
                    grasp_lib.heuristic_candidates(pose, goal, kinematics, level=self.level),
                    grasp_lib.heuristic_candidates(pose, None, kinematics, level=self.level)):
                if not any(np.array_equal(grasp.contact_points, s) for s in seen):
                    seen.append(grasp.contact_points)
                    yield grasp
            yield from grasp_lib.sample_force_closure_grasps(
                rng, N_SAMPLED_GRASPS, cube_pose=pose, kinematics=kinematics, level=self.level)

    def select_grasp_and_plan(self, observation: Observation, kinematics: FingerKinematics,
                              rng: np.random.Generator, attempts: List[PlanningAttempt]):
        """(grasp, plan, planner) of the first candidate with a path to the goal region; every
        attempt is appended to ``attempts``.

        If no candidate has one, the first ``RELAXED_ATTEMPTS`` candidates are planned again
        without the collision checks (a given TG/CG/OG grasp is then still executed, as in the
        paper's mix and match); failing that, the first candidate that can hold the cube where
        it is gets a one-pose plan (the appended segments then move it); (None, None, None) if
        no grasp is reachable at all.

        The planner checks the grasp with the fingertips touching the faces (the real contact
        geometry); the plan's joint positions are then re-solved for the commanded targets
        ``squeeze`` inside the faces (benchmark-rrc "tightens" its planned grasp likewise)."""
        start = CubePose(np.asarray(observation.cube.position, float),
                         cube.normalize(observation.cube.orientation))
        goals = self.goal_poses(observation)
        q = np.asarray(observation.robot.position, dtype=float)
        tried: List[Grasp] = []
        fallback = None
        relaxed = dataclasses.replace(self.planner_config, check_collisions=False)
        passes = itertools.chain(((g, self.planner_config) for g in self.candidates(observation, kinematics, rng)),
                                 ((g, relaxed) for g in itertools.islice(tried, RELAXED_ATTEMPTS)))
        for grasp, base in passes:
            if base is self.planner_config:
                tried.append(grasp)
            config = dataclasses.replace(base, max_time=self.params.planning_time,
                                         seed=int(rng.integers(2 ** 31)))
            planner = GraspPathPlanner(kinematics, grasp.tip_offsets(0.0), config)
            t0 = time.perf_counter()
            plan = planner.plan(start, goals, q)
            attempts.append(PlanningAttempt(
                grasp.name, time.perf_counter() - t0, plan is not None,
                0 if plan is None else plan.iterations, relaxed=not base.check_collisions))
            if plan is not None:
                return grasp, self.squeezed(plan, grasp, kinematics), planner
            if fallback is None:
                q_start = planner.configuration(start.position, start.orientation, q)
                if q_start is not None:
                    one = Plan(start.position[None], start.orientation[None], q_start[None],
                               planner.tip_targets(start.position, start.orientation)[None])
                    fallback = (grasp, self.squeezed(one, grasp, kinematics), planner)
        return fallback if fallback is not None else (None, None, None)

    def squeezed(self, plan: Plan, grasp: Grasp, kinematics: FingerKinematics) -> Plan:
        """``plan`` with joint positions for the squeezed fingertip targets."""
        joints = np.array([squeezed_joints(kinematics, grasp, self.params.squeeze, p, o, q) for p, o, q in
                           zip(plan.positions, plan.orientations, plan.joint_positions)])
        return dataclasses.replace(plan, joint_positions=joints)
