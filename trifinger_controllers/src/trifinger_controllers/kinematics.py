"""Kinematics and dynamics of the TriFinger Pro's three fingers (paper 004 §III, §IV).

One Pinocchio model of robot_properties_fingers' ``pro/trifingerpro.urdf``, the same file and
tip frames trifinger_simulation's SimFinger and its ``Kinematics`` use. The model is immutable and
shared; the workspace (Pinocchio ``Data``) belongs to one :class:`FingerKinematics` (one per
controller/thread, like Pinocchio's model/data split).

Joint order (9,): finger 0 (upper, middle, lower), finger 120, finger 240 — the order of
trifinger_simulation's observations and actions. Positions are in the world frame [m].

The controllers call :meth:`tip_positions`, :meth:`tip_jacobians` and :meth:`gravity` every 2-10 ms;
the forward pass is cached per configuration so that calling all three for the same ``q`` costs one
kinematics pass (about 10 us here).
"""
from __future__ import annotations

import copy
import pathlib
from typing import Optional

import numpy as np
import pinocchio
import robot_properties_fingers

from trifinger_controllers.types import JOINT_LOWER, JOINT_UPPER, N_FINGERS, N_JOINTS
from trifinger_controllers.errors import TrifingerError

#: URDF of the TriFinger Pro inside robot_properties_fingers (as trifinger_simulation's
#: ``finger_types_data["trifingerpro"]``).
URDF_PATH = pathlib.Path(robot_properties_fingers.__file__).parent / "urdf" / "pro" / "trifingerpro.urdf"
#: Fingertip frames, one per finger (as SimFinger.tip_link_names).
TIP_FRAMES = ("finger_tip_link_0", "finger_tip_link_120", "finger_tip_link_240")
#: The lower links' frames, at the knee joints (the lower link runs from there to the tip).
KNEE_FRAMES = ("finger_lower_link_0", "finger_lower_link_120", "finger_lower_link_240")
#: Joint names in the robot's order (the URDF names of SimFinger's joints).
JOINT_NAMES = tuple(
    f"finger_{part}_joint_{angle}"
    for angle in (0, 120, 240)
    for part in ("base_to_upper", "upper_to_middle", "middle_to_lower")
)
#: The platform's default initial joint configuration [rad].
INITIAL_POSITION = np.array([0.0, 0.9, -1.7] * N_FINGERS)


class FingerKinematics:
    """Forward kinematics, fingertip Jacobians, gravity, mass matrix and IK of the TriFinger Pro."""

    lower: np.ndarray = JOINT_LOWER
    upper: np.ndarray = JOINT_UPPER
    initial_position: np.ndarray = INITIAL_POSITION

    def __init__(self, urdf_path: Optional[str] = None) -> None:
        path = pathlib.Path(urdf_path) if urdf_path is not None else URDF_PATH
        if not path.is_file():
            raise FileNotFoundError(f"TriFinger URDF not found: {path}")
        self.model = pinocchio.buildModelFromUrdf(str(path))
        self.data = self.model.createData()          # kinematics workspace (cached per q)
        self._dynamics_data = self.model.createData()  # gravity / mass matrix workspace
        if self.model.nq != N_JOINTS or self.model.nv != N_JOINTS:
            raise TrifingerError(f"{path}: expected {N_JOINTS} joints, got nq={self.model.nq}")
        order = [self.model.joints[self.model.getJointId(n)].idx_q for n in JOINT_NAMES]
        if order != list(range(N_JOINTS)):
            raise TrifingerError(f"{path}: unexpected joint order {order}")
        self.tip_frame_ids = [self.model.getFrameId(name) for name in TIP_FRAMES]
        self.knee_frame_ids = [self.model.getFrameId(name) for name in KNEE_FRAMES]
        self._q_cached: Optional[np.ndarray] = None

    def workspace_copy(self) -> FingerKinematics:
        """A FingerKinematics on this one's (immutable) model with a workspace of its own, for
        another thread (a Pinocchio ``Data`` must not be shared between threads)."""
        other = copy.copy(self)
        other.data = self.model.createData()
        other._dynamics_data = self.model.createData()
        other._q_cached = None
        return other

    # ----------------------------------------------------------------------------- forward pass
    def _update(self, q: np.ndarray) -> None:
        """Forward kinematics and joint Jacobians for ``q`` unless they are cached."""
        if self._q_cached is not None and np.array_equal(q, self._q_cached):
            return
        q = np.asarray(q, dtype=float)
        if q.shape != (N_JOINTS,):
            raise TrifingerError(f"joint positions must have shape (9,), got {q.shape}")
        pinocchio.computeJointJacobians(self.model, self.data, q)
        pinocchio.updateFramePlacements(self.model, self.data)
        self._q_cached = q.copy()

    def tip_positions(self, q: np.ndarray) -> np.ndarray:
        """(3, 3) fingertip positions in the world frame, row i = finger i."""
        self._update(q)
        oMf = self.data.oMf
        return np.array([oMf[i].translation for i in self.tip_frame_ids])

    def knee_positions(self, q: np.ndarray) -> np.ndarray:
        """(3, 3) knee (middle-to-lower joint) positions in the world frame, row i = finger i:
        with :meth:`tip_positions`, the ends of the lower links."""
        self._update(q)
        oMf = self.data.oMf
        return np.array([oMf[i].translation for i in self.knee_frame_ids])

    def tip_jacobians(self, q: np.ndarray) -> np.ndarray:
        """(3, 3, 3): ``J[i] = d tip_i / d q_i`` (world-aligned linear velocity rows over finger
        i's own three joints); the other fingers' joints do not move tip i."""
        self._update(q)
        jac = np.empty((N_FINGERS, 3, 3))
        for i, frame in enumerate(self.tip_frame_ids):
            full = pinocchio.getFrameJacobian(
                self.model, self.data, frame, pinocchio.ReferenceFrame.LOCAL_WORLD_ALIGNED
            )
            jac[i] = full[:3, 3 * i:3 * i + 3]
        return jac

    def tip_velocities(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """(3, 3) fingertip linear velocities in the world frame, ``J_i dq_i``."""
        return np.einsum("fij,fj->fi", self.tip_jacobians(q), np.asarray(dq).reshape(N_FINGERS, 3))

    # ----------------------------------------------------------------------------- dynamics
    def gravity(self, q: np.ndarray) -> np.ndarray:
        """(9,) joint torques that hold the fingers still against gravity, g(q) (the gravity
        compensation of CPC §IV-B and CIC §IV-C)."""
        return pinocchio.computeGeneralizedGravity(self.model, self._dynamics_data, np.asarray(q, dtype=float)).copy()

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """(9, 9) joint-space inertia matrix M(q) (symmetric, block diagonal per finger)."""
        m = pinocchio.crba(self.model, self._dynamics_data, np.asarray(q, dtype=float))
        return np.triu(m) + np.triu(m, 1).T

    # ----------------------------------------------------------------------------- limits
    def clip_to_limits(self, q: np.ndarray) -> np.ndarray:
        """``q`` clipped into the joint position limits."""
        return np.clip(q, self.lower, self.upper)

    def within_limits(self, q: np.ndarray, margin: float = 0.0) -> bool:
        """True if every joint is inside its limits shrunk by ``margin`` [rad]."""
        return bool(np.all(q >= self.lower + margin) and np.all(q <= self.upper - margin))

    # ----------------------------------------------------------------------------- inverse kinematics
    def inverse_kinematics(
        self,
        targets: np.ndarray,
        q0: Optional[np.ndarray] = None,
        iterations: int = 100,
        damping: float = 1e-3,
        tolerance: float = 1e-5,
    ) -> np.ndarray:
        """Joint positions (9,) that put the fingertips at ``targets`` (3, 3) [m, world].

        Damped least squares, all fingers at once: ``dq_i = J_i^T (J_i J_i^T + damping^2 I)^-1 e_i``
        (the damped pseudo-inverse of CPC §IV-B), clipped into the joint limits after every step,
        starting at ``q0`` (default: the platform's initial configuration) and stopping when every
        tip is within ``tolerance`` [m] or after ``iterations`` steps. Unreachable targets give
        the closest configuration found: check ``tip_positions(q)`` against the targets.
        """
        targets = np.asarray(targets, dtype=float)
        if targets.shape != (N_FINGERS, 3):
            raise TrifingerError(f"IK targets must have shape (3, 3), got {targets.shape}")
        q = self.clip_to_limits(np.asarray(self.initial_position if q0 is None else q0, dtype=float))
        eye = (damping ** 2) * np.eye(3)
        for _ in range(iterations):
            err = targets - self.tip_positions(q)
            if np.all(np.einsum("ij,ij->i", err, err) < tolerance ** 2):
                break
            jac = self.tip_jacobians(q)
            jjt = jac @ jac.transpose(0, 2, 1) + eye
            dq = np.einsum("fji,fj->fi", jac, np.linalg.solve(jjt, err[..., None])[..., 0])
            q = self.clip_to_limits(q + dq.reshape(N_JOINTS))
        return q
