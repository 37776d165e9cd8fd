"""Joint-space rigid-body physics on PyBullet or MuJoCo behind one small interface.

Both back-ends load the same URDF text (see :mod:`panda_sim2real.urdf_model`), take link-side
joint torques, and advance by a fixed step. The nominal simulator runs on PyBullet; the reality
stand-in on MuJoCo, so the gap between them includes an engine's integrator and solver, not only
the effects planted in its configuration.
"""
from __future__ import annotations

import os
import tempfile
from typing import Protocol, Sequence

import numpy as np

from panda_sim2real.errors import ConfigError
from panda_sim2real.urdf_model import mujoco_urdf


class JointSpacePhysics(Protocol):
    """What a robot needs from a physics engine: state, one torque step, a model."""

    dt: float
    joint_names: tuple[str, ...]

    def reset(self, q: np.ndarray, qd: np.ndarray) -> None: ...

    def step(self, tau: np.ndarray) -> None: ...

    def state(self) -> tuple[np.ndarray, np.ndarray]: ...

    def inverse_dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray: ...

    def close(self) -> None: ...


def make_physics(engine: str, urdf_text: str, joint_names: Sequence[str], dt: float) -> JointSpacePhysics:
    """Build the back-end named ``engine`` ('pybullet' or 'mujoco')."""
    if engine == "pybullet":
        return PyBulletPhysics(urdf_text, joint_names, dt)
    if engine == "mujoco":
        return MuJoCoPhysics(urdf_text, joint_names, dt)
    raise ConfigError(f"unknown physics engine {engine!r}")


class PyBulletPhysics:
    """PyBullet in DIRECT mode, torque control, no default joint motors, no link damping."""

    def __init__(self, urdf_text: str, joint_names: Sequence[str], dt: float) -> None:
        import pybullet

        self._p = pybullet
        self.dt = float(dt)
        self.joint_names = tuple(joint_names)
        self._client = pybullet.connect(pybullet.DIRECT)
        pybullet.setGravity(0.0, 0.0, -9.81, physicsClientId=self._client)
        pybullet.setTimeStep(self.dt, physicsClientId=self._client)
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
            f.write(urdf_text)
            path = f.name
        try:
            self._body = pybullet.loadURDF(path, useFixedBase=True,
                                           flags=pybullet.URDF_USE_INERTIA_FROM_FILE,
                                           physicsClientId=self._client)
        except pybullet.error as exc:
            pybullet.disconnect(self._client)
            raise ConfigError(f"PyBullet could not load the URDF: {exc}") from exc
        finally:
            os.unlink(path)
        index = {}
        for j in range(pybullet.getNumJoints(self._body, physicsClientId=self._client)):
            info = pybullet.getJointInfo(self._body, j, physicsClientId=self._client)
            index[info[1].decode()] = j
            pybullet.changeDynamics(self._body, j, linearDamping=0.0, angularDamping=0.0,
                                    maxJointVelocity=100.0, physicsClientId=self._client)
        missing = [n for n in self.joint_names if n not in index]
        if missing:
            raise ConfigError(f"URDF lacks the joints {missing}")
        self._idx = [index[n] for n in self.joint_names]
        # Release the default velocity motors, which would act as friction.
        pybullet.setJointMotorControlArray(self._body, self._idx, pybullet.VELOCITY_CONTROL,
                                           forces=[0.0] * len(self._idx),
                                           physicsClientId=self._client)

    @property
    def body(self) -> int:
        return self._body

    @property
    def client(self) -> int:
        return self._client

    def reset(self, q: np.ndarray, qd: np.ndarray) -> None:
        for j, qi, qdi in zip(self._idx, q, qd):
            self._p.resetJointState(self._body, j, float(qi), float(qdi), physicsClientId=self._client)

    def step(self, tau: np.ndarray) -> None:
        self._p.setJointMotorControlArray(self._body, self._idx, self._p.TORQUE_CONTROL,
                                          forces=[float(t) for t in tau],
                                          physicsClientId=self._client)
        self._p.stepSimulation(physicsClientId=self._client)

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        states = self._p.getJointStates(self._body, self._idx, physicsClientId=self._client)
        return (np.array([s[0] for s in states]), np.array([s[1] for s in states]))

    def inverse_dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        tau = self._p.calculateInverseDynamics(self._body, [float(v) for v in q],
                                               [float(v) for v in qd], [float(v) for v in qdd],
                                               physicsClientId=self._client)
        return np.asarray(tau, dtype=float)

    def close(self) -> None:
        if self._client is not None and self._p.isConnected(self._client):
            self._p.disconnect(self._client)
        self._client = None


class MuJoCoPhysics:
    """MuJoCo from the same URDF; torques enter as generalised applied forces."""

    def __init__(self, urdf_text: str, joint_names: Sequence[str], dt: float) -> None:
        import mujoco

        self._mj = mujoco
        self.dt = float(dt)
        self.joint_names = tuple(joint_names)
        try:
            self._model = mujoco.MjModel.from_xml_string(mujoco_urdf(urdf_text))
        except ValueError as exc:
            raise ConfigError(f"MuJoCo could not load the URDF: {exc}") from exc
        self._model.opt.timestep = self.dt
        self._data = mujoco.MjData(self._model)
        self._id_data = mujoco.MjData(self._model)
        try:
            joints = [self._model.joint(n) for n in self.joint_names]
        except KeyError as exc:
            raise ConfigError(f"URDF lacks the joint {exc}") from exc
        self._qpos = np.array([int(j.qposadr[0]) for j in joints])
        self._dof = np.array([int(j.dofadr[0]) for j in joints])
        if self._model.nv != len(self.joint_names):
            raise ConfigError(f"MuJoCo model has {self._model.nv} degrees of freedom, "
                              f"expected {len(self.joint_names)} (fix the other joints)")

    def reset(self, q: np.ndarray, qd: np.ndarray) -> None:
        self._mj.mj_resetData(self._model, self._data)
        self._data.qpos[self._qpos] = q
        self._data.qvel[self._dof] = qd
        self._mj.mj_forward(self._model, self._data)

    def step(self, tau: np.ndarray) -> None:
        self._data.qfrc_applied[self._dof] = tau
        self._mj.mj_step(self._model, self._data)

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        return self._data.qpos[self._qpos].copy(), self._data.qvel[self._dof].copy()

    def inverse_dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        d = self._id_data
        d.qpos[self._qpos] = q
        d.qvel[self._dof] = qd
        d.qacc[self._dof] = qdd
        self._mj.mj_inverse(self._model, d)
        return d.qfrc_inverse[self._dof].copy()

    def close(self) -> None:
        pass
