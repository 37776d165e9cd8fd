"""The simulated TriFinger platform with the cube (paper 004 §III, §VI: PyBullet simulation).

:class:`SimulatedPlatform` wraps trifinger_simulation's ``TriFingerPlatform`` (the official RRC
simulator, 1 kHz, torque limit 0.397 N m, the cube_v2 model of 94 g) behind the small
interface of the controllers: ``reset`` / ``step(torque)`` / ``observation`` returning
:class:`~trifinger_controllers.types.Observation`.

Timing convention: after ``n`` calls of :meth:`step` the simulated time is ``n`` ms and the
observation's robot state is the state at that time (the torque of step ``k`` acts over
``[k, k+1)`` ms). The cube pose is trifinger_simulation's camera observation: an image every
100 ms (10 Hz) delivered ``camera_delay_steps`` (+1) ms later (90 ms by default, the value the
simulator models from the real robot), so its age is in (90, 190] ms; its ``stamp`` is the time
the image was taken. Each image then goes through the object tracker model
(:class:`perception.TrackerModel`: noise, missed detections, wrong-face flips, confidence; on by
default, ``PerceptionConfig.ideal()`` gives the perfect camera). :meth:`true_cube_pose` is the
ground truth, for evaluation only.

Physics randomisation (:mod:`trifinger_controllers.physics`): the cube's mass and friction and the table's friction
are drawn from the trial's seed when given a :class:`physics.PhysicsRandomisation` (default
nominal).

The simulation is deterministic: the same seed, initial pose, goal and torques give bit-identical
observations (the platform is rebuilt by :meth:`reset`, ~0.08 s).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pybullet
from trifinger_simulation.tasks import move_cube
from trifinger_simulation.trifinger_platform import TriFingerPlatform

from trifinger_controllers.kinematics import INITIAL_POSITION
from trifinger_controllers.perception import PerceptionConfig, TrackerModel
from trifinger_controllers.physics import PhysicsRandomisation, apply_physics
from trifinger_controllers.types import (
    N_JOINTS,
    PHYSICS_RATE,
    TORQUE_LIMIT,
    CubePose,
    Observation,
    RobotState,
)
from trifinger_controllers.errors import TrifingerError

#: trifinger_simulation's default camera delay [steps of 1 ms] (measured on the real robot).
DEFAULT_CAMERA_DELAY_STEPS = 90


class UnloggedTriFingerPlatform(TriFingerPlatform):
    """TriFingerPlatform without its action log: ``append_desired_action`` does what the
    original does (camera update, step, camera timestamps) except deep-copying every step's
    action and observations into a list that grows all episode (a quarter of the step time and
    ~2 kB per step; we never store it). ``test_platform`` checks it matches the original."""

    def append_desired_action(self, action):  # noqa: D102 (same contract as the base class)
        camera_triggered = self._camera_update()
        t = self.simfinger.append_desired_action(action)
        if camera_triggered:
            stamp = self.get_timestamp_ms(t) / 1000
            for camera in self._delayed_camera_observation.cameras:
                camera.timestamp = stamp
        return t


class SimulatedPlatform:
    """trifinger_simulation's TriFingerPlatform with the cube, stepped one 1 ms torque step at a
    time.

    Args:
        seed: seeds the tracker model and the physics randomisation (PyBullet itself is
            deterministic).
        camera_delay_steps: delay [ms] of the cube pose observations.
        initial_robot_position: joint positions (9,) the fingers start at (default: the
            platform's [0, 0.9, -1.7] per finger).
        perception: the tracker model (default: ``config/perception.yaml``).
        physics: the physics randomisation (default: nominal).
    """

    def __init__(
        self,
        seed: int = 0,
        camera_delay_steps: int = DEFAULT_CAMERA_DELAY_STEPS,
        initial_robot_position: Optional[np.ndarray] = None,
        perception: Optional[PerceptionConfig] = None,
        physics: Optional[PhysicsRandomisation] = None,
    ) -> None:
        if camera_delay_steps < 0:
            raise TrifingerError(f"camera_delay_steps must be >= 0, got {camera_delay_steps}")
        self.seed = int(seed)
        self.camera_delay_steps = int(camera_delay_steps)
        self.initial_robot_position = np.asarray(
            INITIAL_POSITION if initial_robot_position is None else initial_robot_position, float
        ).copy()
        if self.initial_robot_position.shape != (N_JOINTS,):
            raise TrifingerError("initial_robot_position must have shape (9,)")
        self.perception = perception if perception is not None else PerceptionConfig.from_yaml()
        self.physics = physics if physics is not None else PhysicsRandomisation.nominal()
        self.physics_sample = self.physics.sample(self.seed)
        self.tracker = TrackerModel(self.perception, self.seed)
        self._report: Optional[CubePose] = None
        self._platform: Optional[TriFingerPlatform] = None
        self._goal: Optional[CubePose] = None
        self._steps = 0
        self._applied_torque = np.zeros(N_JOINTS)

    # ----------------------------------------------------------------------------- lifecycle
    def reset(self, initial: CubePose, goal: CubePose, seed: Optional[int] = None) -> Observation:
        """Rebuild the simulation with the cube at ``initial`` and the fingers at their initial
        position, at rest; returns the first observation (time 0). A new ``seed`` draws new
        physics and tracker noise (the same seed: the same ones)."""
        if seed is not None:
            self.seed = int(seed)
            self.physics_sample = self.physics.sample(self.seed)
        self.close()
        self._platform = UnloggedTriFingerPlatform(
            visualization=False,
            initial_robot_position=self.initial_robot_position,
            initial_object_pose=move_cube.Pose(
                np.asarray(initial.position, float), np.asarray(initial.orientation, float)
            ),
            camera_delay_steps=self.camera_delay_steps,
        )
        if not self.physics.is_nominal:
            apply_physics(self._platform, self.physics_sample)
        self.tracker = TrackerModel(self.perception, self.seed)
        self._report = None
        self._goal = CubePose(np.asarray(goal.position, float).copy(),
                              np.asarray(goal.orientation, float).copy())
        self._steps = 0
        self._applied_torque = np.zeros(N_JOINTS)
        return self.observation()

    def close(self) -> None:
        """Disconnect the PyBullet client (also done by :meth:`reset` and on deletion)."""
        if self._platform is not None:
            client = self._platform.simfinger._pybullet_client_id
            if pybullet.isConnected(physicsClientId=client):
                pybullet.disconnect(physicsClientId=client)
            self._platform = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    # ----------------------------------------------------------------------------- stepping
    def step(self, torque: np.ndarray) -> Observation:
        """Apply ``torque`` (9,) [N m], clipped to +-0.397, for one 1 ms step; the observation
        after it. (The simulator further damps the applied torque with its joint-velocity safety
        term, as the real robot does.)"""
        platform = self._require()
        torque = np.asarray(torque, dtype=float)
        if torque.shape != (N_JOINTS,) or not np.all(np.isfinite(torque)):
            raise TrifingerError(f"torque must be 9 finite values, got {torque!r}")
        t = platform.append_desired_action(
            platform.Action(torque=np.clip(torque, -TORQUE_LIMIT, TORQUE_LIMIT))
        )
        self._applied_torque = np.asarray(platform.get_applied_action(t).torque, float)
        self._steps = t + 1
        return self.observation()

    # ----------------------------------------------------------------------------- observations
    @property
    def steps(self) -> int:
        """Number of 1 ms steps since :meth:`reset`."""
        return self._steps

    @property
    def time(self) -> float:
        """Simulated time [s] since :meth:`reset`."""
        return self._steps / PHYSICS_RATE

    @property
    def goal(self) -> CubePose:
        self._require()
        assert self._goal is not None
        return self._goal

    def robot_state(self) -> RobotState:
        """Joint positions, velocities and the last applied torques now."""
        platform = self._require()
        finger = platform.simfinger
        states = pybullet.getJointStates(
            finger.finger_id, finger.pybullet_joint_indices, physicsClientId=finger._pybullet_client_id
        )
        return RobotState(
            step=self._steps,
            time=self.time,
            position=np.array([s[0] for s in states]),
            velocity=np.array([s[1] for s in states]),
            torque=self._applied_torque.copy(),
        )

    def camera_cube_pose(self) -> CubePose:
        """The tracker's report of the last image the cameras delivered (10 Hz, delayed),
        stamped with the time the image was taken (each image goes through the tracker model
        once, in order)."""
        platform = self._require()
        camera = platform.get_camera_observation(max(self._steps - 1, 0))
        stamp = camera.cameras[0].timestamp
        stamp = float(stamp) if stamp is not None else 0.0
        if self._report is None or stamp != self._report.stamp:
            truth = CubePose(np.array(camera.object_pose.position, dtype=float),
                             np.array(camera.object_pose.orientation, dtype=float), stamp)
            self._report = self.tracker.observe(truth)
        return self._report

    def observation(self) -> Observation:
        """What a controller sees now: robot state, camera cube pose, goal."""
        return Observation(robot=self.robot_state(), cube=self.camera_cube_pose(), goal=self.goal)

    def true_cube_pose(self) -> CubePose:
        """Ground-truth cube pose now (evaluation and drop detection only)."""
        platform = self._require()
        position, orientation = platform.cube.get_state()
        return CubePose(np.array(position, float), np.array(orientation, float), self.time)

    # ----------------------------------------------------------------------------- internals
    @property
    def client_id(self) -> int:
        """PyBullet client of the current episode (for tests and visualisation)."""
        return self._require().simfinger._pybullet_client_id

    @property
    def simulation(self) -> TriFingerPlatform:
        """The wrapped trifinger_simulation platform of the current episode."""
        return self._require()

    def _require(self) -> TriFingerPlatform:
        if self._platform is None:
            raise RuntimeError("SimulatedPlatform: call reset(initial, goal) first")
        return self._platform
