"""CPC's grasp selection (paper 004 §IV-B), run off the control call by the GraspPlanner.

:class:`CpcGraspSelection` turns the chosen grasp into a :class:`GraspPlan`: the tip offsets,
the squeeze directions and the weight support (grasp_forces.py) and, at levels 1-3, the turn
about the vertical on the way to the goal that keeps the holding torque below
``GOAL_YAW_TORQUE`` (an addition to the paper). The controller is cpc.py.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from trifinger_controllers import cube as cube_geometry
from trifinger_controllers.controllers.grasp_phases import GraspSelection
from trifinger_controllers.grasp_forces import squeeze_directions, weight_support_forces
from trifinger_controllers.grasp_geometry import Grasp
from trifinger_controllers.grasp_reachability import IK_TOLERANCE
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.types import N_FINGERS, CubePose, Observation

#: Largest yaw [rad] the cube is turned by on the way to a level 1-3 goal, the candidates'
#: spacing, the holding torque [N m] above which a turn is looked for, and the squeeze force
#: [N] of the most loaded fingertip that holding torque assumes.
MAX_GOAL_YAW = np.deg2rad(45.0)
GOAL_YAW_STEP = np.deg2rad(15.0)
GOAL_YAW_TORQUE = 0.28
NOMINAL_GRIP = 1.5


@dataclass(frozen=True)
class GraspPlan:
    """A grasp as CPC holds it (cube frame): ``surface_offsets`` (3, 3) the tip centres touching
    the contacts, ``squeeze`` (3, 3) the squeeze directions (grasp_forces.squeeze_directions),
    ``support`` (3, 3) the contact forces carrying the fed-forward weight without a moment about
    the centre, and ``goal_turn`` the turn (quaternion) about the vertical on the way to a level
    1-3 goal."""

    grasp: Grasp
    surface_offsets: np.ndarray
    squeeze: np.ndarray
    support: np.ndarray
    goal_turn: np.ndarray = field(default_factory=lambda: cube_geometry.IDENTITY.copy())

    def holding_torque(self, pose: CubePose, kinematics: FingerKinematics) -> float:
        """Largest joint torque [N m] of gravity compensation, cube weight and a NOMINAL_GRIP
        squeeze with the grasp at cube ``pose`` (fingers by IK; inf if out of reach): how weak
        the fingers are there."""
        targets = cube_geometry.to_world(pose, self.surface_offsets)
        q = kinematics.inverse_kinematics(targets)
        if np.max(np.linalg.norm(kinematics.tip_positions(q) - targets, axis=1)) > IK_TOLERANCE:
            return float("inf")
        jac = kinematics.tip_jacobians(q)
        forces = cube_geometry.rotate(pose.orientation, NOMINAL_GRIP * self.squeeze + self.support)
        tau = np.einsum("fji,fj->fi", jac, forces) + kinematics.gravity(q).reshape(N_FINGERS, 3)
        return float(np.max(np.abs(tau)))

    def goal_orientation(self, q_start: np.ndarray, goal: np.ndarray,
                         kinematics: FingerKinematics) -> np.ndarray:
        """Levels 1-3: the grasped orientation, unless holding the cube at the goal needs more
        than GOAL_YAW_TORQUE; then the smallest turn about the vertical (steps of GOAL_YAW_STEP
        up to MAX_GOAL_YAW) that needs less, or else the one that needs least (turning a held
        cube costs accuracy, so it is done only where a finger would be too weak)."""
        def need(q: np.ndarray) -> float:
            return self.holding_torque(CubePose(goal, q), kinematics)

        best_q, best = q_start, need(q_start)
        if best <= GOAL_YAW_TORQUE:
            return q_start
        for yaw in np.arange(GOAL_YAW_STEP, MAX_GOAL_YAW + 1e-9, GOAL_YAW_STEP):
            for signed in (yaw, -yaw):
                q = cube_geometry.multiply(cube_geometry.from_yaw(signed), q_start)
                torque = need(q)
                if torque < best:
                    best_q, best = q, torque
            if best <= GOAL_YAW_TORQUE:
                break
        return best_q


@dataclass(frozen=True)
class CpcGraspSelection:
    """CPC's grasp selection, run by the GraspPlanner off the control call: the grasp for the
    observed cube and goal, its squeeze and weight support (``weight_force`` [N] fed forward)
    and, at levels 1-3, the turn on the way to the goal (IK, 1-5 ms)."""

    grasp: GraspSelection
    weight_force: float

    def __call__(self, observation: Observation, kinematics: FingerKinematics,
                 regrasp: bool = False) -> GraspPlan:
        grasp = self.grasp(observation, kinematics, regrasp)
        # the cube's weight carried without a moment about its centre (cube frame; constant
        # while only the yaw changes)
        q0 = np.asarray(observation.cube.orientation, dtype=float)
        up = cube_geometry.rotate(cube_geometry.conjugate(q0), [0.0, 0.0, 1.0])
        plan = GraspPlan(grasp, grasp.tip_offsets(), squeeze_directions(grasp),
                         weight_support_forces(grasp, self.weight_force * up))
        if self.grasp.level == 4:
            return plan
        chosen = plan.goal_orientation(q0, np.asarray(observation.goal.position, dtype=float), kinematics)
        return dataclasses.replace(plan, goal_turn=cube_geometry.relative(q0, chosen))
