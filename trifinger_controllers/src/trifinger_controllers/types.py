"""Plain data exchanged by the simulation, the controllers, the evaluation and the ROS nodes
(paper 004 §III: the TriFinger with 3 fingers x 3 joints, torques at 1 kHz, the cube's pose from
the cameras at 10 Hz)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_FINGERS = 3
N_JOINTS = 9
TORQUE_LIMIT = 0.397          # N m, each joint (TriFinger Pro; paper 004 §VI)
#: Joint position limits [rad] of the platform (trifinger_simulation.trifingerpro_limits, equal to
#: the URDF's).
JOINT_LOWER = np.array([-0.33, 0.0, -2.7] * N_FINGERS)
JOINT_UPPER = np.array([1.0, 1.57, 0.0] * N_FINGERS)
VELOCITY_LIMIT = 10.0         # rad/s, each joint (trifingerpro_limits.max_velocity_radps)
#: Radius [m] around the arena centre within which a cube pose is physical: every point of
#: trifinger_simulation's object position box (|x|, |y| <= 0.3 m, 0 <= z <= 0.3 m) lies within
#: 0.3 * sqrt(3) = 0.52 m of it.
WORKSPACE_RADIUS = 0.3 * float(np.sqrt(3.0))
CUBE_WIDTH = 0.065            # m (paper 004 §III: 65 mm, about 94 g)
CUBE_MASS = 0.094             # kg
PHYSICS_RATE = 1000.0         # Hz


@dataclass(frozen=True)
class CubePose:
    """Pose of the cube's centre in the world frame; ``orientation`` is a unit quaternion in
    (x, y, z, w) order as in trifinger_simulation and geometry_msgs; ``stamp`` [s] is the
    simulated time the pose refers to (for camera observations: when the image was taken);
    ``confidence`` is the object tracker's, in [0, 1] as on the robot (0: the object was not
    detected in this image and the previous pose is repeated; 1 for ground truth)."""

    position: np.ndarray      # (3,)
    orientation: np.ndarray   # (4,) x, y, z, w
    stamp: float = 0.0
    confidence: float = 1.0


@dataclass(frozen=True)
class RobotState:
    """Joint measurements at simulated time ``time`` (step index ``step`` at 1 kHz)."""

    step: int
    time: float
    position: np.ndarray      # (9,) rad, finger 0 joints 0-2, finger 120 joints 3-5, finger 240 joints 6-8
    velocity: np.ndarray      # (9,) rad/s
    torque: np.ndarray        # (9,) N m, as measured


@dataclass(frozen=True)
class Observation:
    """What a controller sees: the robot now and the cube as the camera last reported it
    (10 Hz, with the camera delay of trifinger_simulation), plus the goal."""

    robot: RobotState
    cube: CubePose
    goal: CubePose
