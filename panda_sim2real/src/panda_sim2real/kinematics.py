"""Forward and inverse kinematics of the Panda's end effector (link ``panda_hand``).

Used by the trajectory generator for the Cartesian test set of Realeasy (paper 000, §IV-B:
linear moves in the xy, xz and yz planes). The model is the nominal pybullet_data Panda with
geometry removed and the fingers fixed (:func:`panda_sim2real.urdf_model.prepare_dynamics_urdf`),
loaded on a private PyBullet DIRECT client so that it never disturbs a simulation.

Poses are (position [m], quaternion x, y, z, w) of the link frame in the world (= base) frame;
Jacobians are (6, dof): linear velocity rows first, then angular velocity rows, both in world
coordinates.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from panda_sim2real.errors import ConfigError
from panda_sim2real.limits import JointLimits
from panda_sim2real.physics import PyBulletPhysics
from panda_sim2real.urdf_model import load_urdf, prepare_dynamics_urdf

END_EFFECTOR_LINK = "panda_hand"
DEFAULT_DAMPING = 1e-2        # damped least squares lambda [m or rad]
MAX_STEP = 0.2                # rad, largest joint change of one IK iteration


def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` of quaternions in (x, y, z, w) order."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def orientation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Rotation vector [rad] (world frame) turning ``current`` into ``target`` (xyzw quaternions),
    from the quaternion difference ``target * conj(current)``, taking the shorter way round."""
    current_conj = np.array([-current[0], -current[1], -current[2], current[3]])
    diff = quaternion_multiply(np.asarray(target, dtype=float), current_conj)
    diff /= np.linalg.norm(diff)
    if diff[3] < 0.0:
        diff = -diff
    sin_half = float(np.linalg.norm(diff[:3]))
    if sin_half < 1e-12:
        return 2.0 * diff[:3]
    angle = 2.0 * np.arctan2(sin_half, diff[3])
    return diff[:3] * (angle / sin_half)


class PandaKinematics:
    """Forward kinematics, Jacobian and damped-least-squares IK of the Panda end effector."""

    def __init__(self, limits: Optional[JointLimits] = None,
                 link_name: str = END_EFFECTOR_LINK, urdf_text: Optional[str] = None) -> None:
        """``limits`` (default: config/panda_limits.yaml) name the joints and bound the IK;
        ``urdf_text`` defaults to the nominal Panda prepared for dynamics."""
        import pybullet

        self._p = pybullet
        self.limits = limits or JointLimits.from_yaml()
        text = urdf_text or prepare_dynamics_urdf(load_urdf(None), {})
        # dt is irrelevant: nothing is ever stepped.
        self._physics = PyBulletPhysics(text, self.limits.joint_names, dt=1e-3)
        self._client = self._physics.client
        self._body = self._physics.body
        links = {}
        for j in range(pybullet.getNumJoints(self._body, physicsClientId=self._client)):
            info = pybullet.getJointInfo(self._body, j, physicsClientId=self._client)
            links[info[12].decode()] = j
            if info[2] != pybullet.JOINT_FIXED and info[1].decode() not in self.limits.joint_names:
                self.close()
                raise ConfigError(f"kinematics: joint {info[1].decode()} is movable but has no limits")
        if link_name not in links:
            self.close()
            raise ConfigError(f"kinematics: the URDF has no link {link_name!r}")
        self.link_index = links[link_name]
        self._zeros = [0.0] * self.limits.dof
        # PyBullet's documentation places calculateJacobian's point in the centre-of-mass frame,
        # but PyBullet 3.2 measures it from the link (URDF) frame: checked against finite
        # differences of getLinkState's link frame in test_trajectory_generation.py.
        self._local_origin = [0.0, 0.0, 0.0]

    def _set(self, q: np.ndarray) -> list[float]:
        values = [float(v) for v in np.asarray(q, dtype=float).reshape(self.limits.dof)]
        self._physics.reset(values, self._zeros)
        return values

    def _pose(self) -> tuple[np.ndarray, np.ndarray]:
        state = self._p.getLinkState(self._body, self.link_index, computeForwardKinematics=True,
                                     physicsClientId=self._client)
        return np.array(state[4]), np.array(state[5])

    def _jacobian(self, values: list[float]) -> np.ndarray:
        linear, angular = self._p.calculateJacobian(self._body, self.link_index, self._local_origin,
                                                    values, self._zeros, self._zeros,
                                                    physicsClientId=self._client)
        return np.vstack([np.asarray(linear), np.asarray(angular)])

    def forward(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """End-effector pose at joint positions ``q``: position (3,) [m], quaternion xyzw (4,)."""
        self._set(q)
        return self._pose()

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """Geometric Jacobian (6, dof) of the end-effector frame origin at ``q``."""
        values = self._set(q)
        return self._jacobian(values)

    def solve(self, target_pos: np.ndarray, target_quat: np.ndarray, q_seed: np.ndarray,
              tol: float = 1e-4, max_iter: int = 100, damping: float = DEFAULT_DAMPING,
              min_iter: int = 0) -> tuple[np.ndarray, bool]:
        """Damped-least-squares IK from ``q_seed``: dq = J^T (J J^T + damping^2 I)^-1 e.

        ``e`` stacks the position error [m] and the orientation error (rotation vector of the
        quaternion difference, [rad]). Each step is limited to MAX_STEP rad and the result is
        clipped to the joint position limits. Starting from the seed keeps the solution on the
        seed's branch, so a path of nearby targets solved in turn (each seeded with the previous
        solution) gives a continuous joint path. ``min_iter`` steps are taken even if the seed
        already meets ``tol``: on a finely sampled path this avoids a stick-slip joint path
        (knots left at the seed while the target creeps within ``tol``, then a jump). Returns
        (q, converged) where converged means both error norms are below ``tol``.
        """
        target_pos = np.asarray(target_pos, dtype=float)
        target_quat = np.asarray(target_quat, dtype=float)
        lo, hi = self.limits.position_min, self.limits.position_max
        q = np.clip(np.asarray(q_seed, dtype=float).reshape(self.limits.dof), lo, hi)
        regulariser = damping ** 2 * np.eye(6)
        for iteration in range(max_iter + 1):
            values = self._set(q)
            pos, quat = self._pose()
            error = np.concatenate([target_pos - pos, orientation_error(target_quat, quat)])
            if (iteration >= min_iter and np.linalg.norm(error[:3]) < tol
                    and np.linalg.norm(error[3:]) < tol):
                return q, True
            if iteration == max_iter:
                break
            jac = self._jacobian(values)
            dq = jac.T @ np.linalg.solve(jac @ jac.T + regulariser, error)
            largest = float(np.max(np.abs(dq)))
            if largest > MAX_STEP:
                dq *= MAX_STEP / largest
            q = np.clip(q + dq, lo, hi)
        return q, False

    def close(self) -> None:
        """Disconnect the private PyBullet client."""
        self._physics.close()

    def __enter__(self) -> "PandaKinematics":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
