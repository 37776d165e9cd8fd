"""Tracking with a learnt inverse-dynamics model in PyBullet (paper 002 §4.1.1, Table 1).

Paper 002 evaluates each trained model "on tracking a) the sine motion itself (which the
parameters were fitted for), and b) on a series of 5 operational space control tasks", with "a
velocity-based operational space controller as described in (Nakanishi et al., 2008)" that
uses the learnt model, and measures "the tracking performance through NMSE, which is the mean
squared tracking error normalized by the variance of the target trajectory". Every model runs
in the same simulator (the true iiwa, as in :mod:`diffnea_ros.experiments.sine_tracking`); only the
controller's inverse dynamics ``model(q, qd, qdd) -> tau`` changes.

(a) :func:`track_sine`: the data-collection controller of :mod:`diffnea_ros.experiments.sine_tracking`
    with the learnt model as feed-forward, tau = f(q_des, qd_des, qdd_des) + Kp e + Kd ė, the
    same gains for every model (from the URDF's H at the centre configuration). Scores: NMSE per
    joint of q and qd against the desired waves, and their RMS errors (rad, rad/s).
(b) :func:`track_operational_space`: for each seeded goal, the end-effector point (the
    centre of mass of link 7, 2 cm beyond the flange) starts at rest at ``HOME`` and follows a
    minimum-jerk line to a goal ``x_home + U(±r)³`` in ``move_seconds``, then holds.
    Velocity-based operational space control (Nakanishi et al. 2008, "velocity-based
    control", position part): reference joint velocity
    qd_r = J⁺ (xd_des + Kx (x_des − x)) + (1 − J⁺ J) Kn (q_home − q), J⁺ = Jᵀ (J Jᵀ + λ² 1)⁻¹,
    qdd_r its backward difference over one control period, and
    tau = f(q, qd, qdd_r) + Kd (qd_r − qd), Kd = 2ζω H(q_home) (the URDF's H, the same for
    every model). Scores: NMSE of x and xd per task and axis against the target trajectory
    (mean over axes and tasks) and the RMS errors (m, m/s).

A run whose error exceeds ``UNSTABLE_Q`` rad (a) or ``UNSTABLE_X`` m (b), or whose state
becomes non-finite, stops and is reported unstable (the paper's "Unstable" entries).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch

from diffnea_ros.crba import mass_matrix
from diffnea_ros.identification import nmse
from diffnea_ros.inverse_dynamics import rnea
from diffnea_ros.model import GRAVITY, RigidBodyModel
from diffnea_ros.experiments.sine_tracking import (SineTrajectory, TrackingConfig, joint_limits,
                                                   kuka_urdf_path, load_pybullet_robot, pd_gains)
from diffnea_ros.urdf import load_robot

InverseDynamics = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
HOME = (0.0, 0.6, 0.0, -1.4, 0.0, 0.9, 0.0)   # [rad] iiwa start of every reaching task
UNSTABLE_Q = 1.0      # [rad]
UNSTABLE_X = 0.5      # [m]


def _nmse(target: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Per-column mean squared error over the target's variance (paper §4.1.1): the training
    NMSE of identification.nmse, on tracked states."""
    return nmse(torch.as_tensor(actual, dtype=torch.float64), torch.as_tensor(target, dtype=torch.float64))


@torch.no_grad()
def _torques(model: InverseDynamics, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
             chunk: int = 4096) -> np.ndarray:
    """model(q, qd, qdd) for (N, dof) arrays, in float64 chunks."""
    out = []
    for i in range(0, q.shape[0], chunk):
        args = (torch.as_tensor(x[i:i + chunk], dtype=torch.float64) for x in (q, qd, qdd))
        out.append(model(*args).detach().cpu().double().numpy())
    return np.concatenate(out)


def ground_truth(model: RigidBodyModel) -> InverseDynamics:
    """The URDF's inverse dynamics (RNEA with the URDF's joint damping): the reference row."""
    return lambda q, qd, qdd: rnea(model, q, qd, qdd)


@dataclass(frozen=True)
class JointTrackingResult:
    """Sine tracking: NMSE per joint of q and qd (None when unstable), RMS errors, stability."""

    nmse_q: Optional[np.ndarray]
    nmse_qd: Optional[np.ndarray]
    rms_q: float          # [rad] over all joints and samples
    rms_qd: float         # [rad/s]
    stable: bool
    seconds: float        # simulated


def track_sine(model: InverseDynamics, config: TrackingConfig = TrackingConfig(),
               urdf_path: Optional[str] = None) -> JointTrackingResult:
    """Track the paper's sine waves with ``model`` as feed-forward (module docstring, (a))."""
    import pybullet as p

    urdf_path = urdf_path or kuka_urdf_path()
    description = load_robot(urdf_path)
    truth = RigidBodyModel(description)
    dt = 1.0 / config.physics_rate
    n_steps = int(round(config.duration * config.physics_rate))
    trajectory = SineTrajectory.from_limits(*joint_limits(description))
    t = np.arange(n_steps) * dt
    q_des, qd_des, qdd_des = trajectory(t)
    feedforward = _torques(model, q_des, qd_des, qdd_des)
    kp, kd = pd_gains(truth, trajectory.centre, config.bandwidth_hz, config.damping_ratio)
    q, qd = np.full((n_steps, truth.dof), np.nan), np.full((n_steps, truth.dof), np.nan)
    stable = bool(np.all(np.isfinite(feedforward)))
    client = p.connect(p.DIRECT)
    try:
        p.setGravity(*GRAVITY, physicsClientId=client)
        p.setTimeStep(dt, physicsClientId=client)
        body, joints = load_pybullet_robot(client, urdf_path)
        for k, j in enumerate(joints):
            p.resetJointState(body, j, q_des[0, k], qd_des[0, k], physicsClientId=client)
        for step in range(n_steps if stable else 0):
            states = p.getJointStates(body, joints, physicsClientId=client)
            q[step] = [s[0] for s in states]
            qd[step] = [s[1] for s in states]
            error = q_des[step] - q[step]
            if not np.all(np.isfinite(qd[step])) or np.max(np.abs(error)) > UNSTABLE_Q:
                stable = False
                break
            tau = feedforward[step] + kp * error + kd * (qd_des[step] - qd[step])
            p.setJointMotorControlArray(body, joints, p.TORQUE_CONTROL, forces=tau.tolist(),
                                        physicsClientId=client)
            p.stepSimulation(physicsClientId=client)
    finally:
        p.disconnect(client)
    if not stable:
        return JointTrackingResult(None, None, float("nan"), float("nan"), False, config.duration)
    return JointTrackingResult(
        nmse_q=_nmse(q_des, q), nmse_qd=_nmse(qd_des, qd),
        rms_q=float(np.sqrt(np.mean((q_des - q) ** 2))),
        rms_qd=float(np.sqrt(np.mean((qd_des - qd) ** 2))), stable=True,
        seconds=config.duration)


@dataclass(frozen=True)
class OperationalSpaceConfig:
    tasks: int = 5                    # reaching goals per seed (paper: "a series of 5")
    move_seconds: float = 2.0         # minimum-jerk move to the goal
    hold_seconds: float = 0.5         # then hold it
    goal_range: float = 0.15          # [m] goal = home end-effector position + U(-r, r) per axis
    physics_rate: float = 1000.0      # [Hz]
    control_rate: float = 250.0       # [Hz], must divide physics_rate
    position_gain: float = 10.0       # Kx [1/s]
    nullspace_gain: float = 5.0       # Kn [1/s]
    bandwidth_hz: float = 5.0         # velocity loop: Kd = 2 ζ ω H(home) (full matrix)
    damping_ratio: float = 1.0
    pinv_damping: float = 0.01        # λ of the damped pseudo-inverse
    home: tuple[float, ...] = HOME


@dataclass(frozen=True)
class OperationalSpaceResult:
    """Reaching: NMSE of x and xd (mean over axes and tasks; None when unstable), RMS errors."""

    nmse_x: Optional[float]
    nmse_xd: Optional[float]
    rms_x: float          # [m]
    rms_xd: float         # [m/s]
    stable: bool
    goals: np.ndarray     # (tasks, 3) [m]


def end_effector_offset(client: int, body: int, link: int) -> list[float]:
    """The end-effector point (the last link's centre of mass) in that link's frame, the
    ``localPosition`` of ``p.calculateJacobian`` (checked against finite differences)."""
    import pybullet as p

    return list(p.getDynamicsInfo(body, link, physicsClientId=client)[3])


def end_effector_position(client: int, body: int, link: int) -> np.ndarray:
    """World position (3,) of the end-effector point (the last link's centre of mass)."""
    import pybullet as p

    return np.array(p.getLinkState(body, link, computeForwardKinematics=1,
                                   physicsClientId=client)[0])


def reaching_goals(seed: int, config: OperationalSpaceConfig = OperationalSpaceConfig(),
                   urdf_path: Optional[str] = None) -> np.ndarray:
    """The seed's goal positions (tasks, 3) of the end-effector point, world frame."""
    import pybullet as p

    client = p.connect(p.DIRECT)
    try:
        body, joints = load_pybullet_robot(client, urdf_path or kuka_urdf_path())
        for k, j in enumerate(joints):
            p.resetJointState(body, j, config.home[k], 0.0, physicsClientId=client)
        home = end_effector_position(client, body, joints[-1])
    finally:
        p.disconnect(client)
    rng = np.random.default_rng(seed)
    return home + rng.uniform(-config.goal_range, config.goal_range, size=(config.tasks, 3))


def minimum_jerk(start: np.ndarray, goal: np.ndarray, t: np.ndarray,
                 duration: float) -> tuple[np.ndarray, np.ndarray]:
    """Position and velocity (N, 3) of a minimum-jerk line, held at the goal after ``duration``."""
    s = np.clip(t / duration, 0.0, 1.0)[:, None]
    shape = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
    rate = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / duration
    return start + shape * (goal - start), rate * (goal - start)


def track_operational_space(model: InverseDynamics, goals: np.ndarray,
                            config: OperationalSpaceConfig = OperationalSpaceConfig(),
                            urdf_path: Optional[str] = None) -> OperationalSpaceResult:
    """Reach every goal with the velocity-based OSC and ``model`` (module docstring, (b))."""
    import pybullet as p

    urdf_path = urdf_path or kuka_urdf_path()
    truth = RigidBodyModel(load_robot(urdf_path))
    home = np.asarray(config.home, dtype=float)
    with torch.no_grad():   # Kd = 2 ζ ω H(home): the same velocity-loop bandwidth in every
        inertia = mass_matrix(truth, torch.as_tensor(home)[None])[0].numpy()   # direction
    kd = 2.0 * config.damping_ratio * 2.0 * np.pi * config.bandwidth_hz * inertia
    every = int(round(config.physics_rate / config.control_rate))
    dt = every / config.physics_rate
    t = np.arange(int(round((config.move_seconds + config.hold_seconds) / dt))) * dt
    nmse_x, nmse_xd, err_x, err_xd = [], [], [], []
    stable = True
    client = p.connect(p.DIRECT)
    try:
        p.setGravity(*GRAVITY, physicsClientId=client)
        p.setTimeStep(1.0 / config.physics_rate, physicsClientId=client)
        body, joints = load_pybullet_robot(client, urdf_path)
        ee = joints[-1]
        point = end_effector_offset(client, body, ee)
        zeros = [0.0] * len(joints)
        for goal in goals:
            for k, j in enumerate(joints):
                p.resetJointState(body, j, home[k], 0.0, physicsClientId=client)
            start = end_effector_position(client, body, ee)
            x_des, xd_des = minimum_jerk(start, goal, t, config.move_seconds)
            x, xd = np.zeros_like(x_des), np.zeros_like(xd_des)
            qd_r_last = None
            for step in range(len(t)):
                states = p.getJointStates(body, joints, physicsClientId=client)
                q = np.array([s[0] for s in states])
                qd = np.array([s[1] for s in states])
                x[step] = end_effector_position(client, body, ee)
                jac = np.array(p.calculateJacobian(body, ee, point, q.tolist(), zeros, zeros,
                                                   physicsClientId=client)[0])
                xd[step] = jac @ qd
                if not (np.all(np.isfinite(qd)) and np.all(np.isfinite(x[step]))) \
                        or np.max(np.abs(x[step] - x_des[step])) > UNSTABLE_X:
                    stable = False
                    break
                pinv = jac.T @ np.linalg.inv(jac @ jac.T + config.pinv_damping ** 2 * np.eye(3))
                qd_r = (pinv @ (xd_des[step] + config.position_gain * (x_des[step] - x[step]))
                        + (np.eye(len(q)) - pinv @ jac) @ (config.nullspace_gain * (home - q)))
                qdd_r = np.zeros_like(qd_r) if qd_r_last is None else (qd_r - qd_r_last) / dt
                qd_r_last = qd_r
                tau = _torques(model, q[None], qd[None], qdd_r[None])[0] + kd @ (qd_r - qd)
                if not np.all(np.isfinite(tau)):
                    stable = False
                    break
                for _ in range(every):   # PyBullet applies a torque for one step only
                    p.setJointMotorControlArray(body, joints, p.TORQUE_CONTROL,
                                                forces=tau.tolist(), physicsClientId=client)
                    p.stepSimulation(physicsClientId=client)
            if not stable:
                break
            nmse_x.append(_nmse(x_des, x))
            nmse_xd.append(_nmse(xd_des, xd))
            err_x.append(x_des - x)
            err_xd.append(xd_des - xd)
    finally:
        p.disconnect(client)
    if not stable:
        return OperationalSpaceResult(None, None, float("nan"), float("nan"), False,
                                      np.asarray(goals))
    return OperationalSpaceResult(
        nmse_x=float(np.mean(nmse_x)), nmse_xd=float(np.mean(nmse_xd)),
        rms_x=float(np.sqrt(np.mean(np.concatenate(err_x) ** 2))),
        rms_xd=float(np.sqrt(np.mean(np.concatenate(err_xd) ** 2))), stable=True,
        goals=np.asarray(goals))
