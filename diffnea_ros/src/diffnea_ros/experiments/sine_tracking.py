"""Sine-tracking data of a simulated KUKA iiwa and perturbed initial models (paper 002 §4.1).

Paper 002 §4.1 collects its identification data in PyBullet: the KUKA iiwa tracks one sine wave
per joint with periods [23, 19, 17, 13, 11, 7, 5] s and amplitudes [0.7, 0.5, 0.5, 0.5, 0.65,
0.65, 0.7] "times the maximum absolute movement in each joint", under the ground-truth inverse
dynamics model. This module reproduces that:

- Trajectory. q_des_j(t) = c_j + A_j r_j sin(2π t / T_j), with c_j the centre of the URDF limits
  and r_j = max(|lower_j|, |upper_j|) — our reading of "maximum absolute movement": the largest
  absolute position the joint may reach. The iiwa's limits are symmetric, so c = 0 and r is half
  the range; for other robots a wave that would leave the limits is an error.
- Simulation. PyBullet in DIRECT mode at ``physics_rate`` (1 kHz), fixed base, torque control
  (the default velocity motors disabled by VELOCITY_CONTROL with force 0). The controller is
  feed-forward plus PD, tau = rnea_true(q_des, qd_des, qdd_des) + Kp (q_des − q) + Kd (qd_des − qd),
  with per-joint gains Kp_j = ω² H_jj, Kd_j = 2ζω H_jj (H at the centre configuration, ω = 2π·10
  Hz, ζ = 1): a 10 Hz critically damped loop on every joint whatever its inertia, stable with
  the 1 ms explicit step.
- What PyBullet and our RNEA must agree on (checked in the tests): (1) links are loaded with
  URDF_USE_INERTIA_FROM_FILE — without it PyBullet replaces the URDF inertia by one computed from
  the collision meshes (link 1: diag 0.045/0.041/0.025 instead of 0.1/0.09/0.02 kg m²); (2) the
  multibody's default linear/angular damping (0.04) is set to 0; (3) PyBullet applies the URDF's
  ``<dynamics damping>`` (0.5 N m s/rad on every iiwa joint) as an explicit torque −d·qd at every
  step, so the ground truth is :func:`rnea` *with* the URDF damping (the model's
  ``nominal_damping``), while ``p.calculateInverseDynamics`` omits damping (it equals
  ``rnea(..., damping=0)``); (4) the root link is the fixed base: its inertia (zero mass here)
  enters neither. PyBullet integrates semi-implicitly, qd' = qd + dt·FD(q, qd, tau),
  q' = q + dt·qd', so (qd' − qd)/dt is the exact forward-dynamics acceleration of the sample.
- Recording at ``record_rate`` (250 Hz, the paper's real-robot rate): every sample is the
  measured (q, qd) before a physics step and the torque applied during it. Accelerations are
  given both ways: ``qdd_exact`` (the simulator's, exact to round-off) and ``qdd_savgol``
  (zero-phase Savitzky-Golay of the recorded q, :mod:`diffnea_ros.acceleration`, as on a real
  robot). The reproduction uses Savitzky-Golay by default so that it runs the same pipeline as
  real data; on these smooth waves the ground truth's NMSE on either is far below the 0.1
  threshold of Table 1 (see :meth:`TrackingData.samples`).

:func:`perturb_inertials` makes the perturbed, physically consistent initial models the seeds
of Table 1 start from.
"""
from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch

from diffnea_ros.acceleration import DEFAULT_WINDOW_SECONDS, savgol_derivatives
from diffnea_ros.crba import mass_matrix
from diffnea_ros.errors import DataError, DiffneaError, UrdfError
from diffnea_ros.identification import Samples
from diffnea_ros.inverse_dynamics import rnea
from diffnea_ros.model import GRAVITY, RigidBodyModel
from diffnea_ros.urdf import RobotDescription, load_robot, with_inertials

KUKA_URDF = "kuka_iiwa/model.urdf"                      # in pybullet_data
PERIODS = (23.0, 19.0, 17.0, 13.0, 11.0, 7.0, 5.0)        # [s], paper 002 §4.1
AMPLITUDES = (0.7, 0.5, 0.5, 0.5, 0.65, 0.65, 0.7)        # fraction of max |position|
PHYSICS_RATE = 1000.0   # [Hz]
RECORD_RATE = 250.0     # [Hz], the paper's real-robot rate (§4.2)
BANDWIDTH_HZ = 10.0     # PD loop natural frequency
DAMPING_RATIO = 1.0
ACCELERATIONS = ("savgol", "exact")

COM_SHIFT = 0.1                 # [m] com shift at scale 1 (per axis, uniform in ±scale·COM_SHIFT)
MAX_ROTATION = math.pi / 2      # [rad] principal-axes rotation at scale 1


def kuka_urdf_path() -> str:
    """Path of pybullet_data's KUKA iiwa URDF."""
    import pybullet_data

    return os.path.join(pybullet_data.getDataPath(), KUKA_URDF)


def joint_limits(description: RobotDescription) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper position limits (dof,) of the movable joints, from the URDF text."""
    root = ET.fromstring(description.urdf_text)
    limits = {}
    for joint in root.findall("joint"):
        limit = joint.find("limit")
        if limit is not None and limit.get("lower") is not None and limit.get("upper") is not None:
            limits[joint.get("name")] = (float(limit.get("lower")), float(limit.get("upper")))
    missing = [n for n in description.joint_names if n not in limits]
    if missing:
        raise UrdfError(f"joints {missing} have no <limit lower upper>: a sine wave needs the "
                        f"joint range")
    lower, upper = (np.array([limits[n][k] for n in description.joint_names]) for k in (0, 1))
    return lower, upper


@dataclass(frozen=True)
class SineTrajectory:
    """q_des_j(t) = centre_j + amplitude_j sin(2π t / period_j) for every joint."""

    centre: np.ndarray      # (dof,) [rad]
    amplitude: np.ndarray   # (dof,) [rad]
    period: np.ndarray      # (dof,) [s]

    @classmethod
    def from_limits(cls, lower: np.ndarray, upper: np.ndarray,
                    amplitudes: Sequence[float] = AMPLITUDES,
                    periods: Sequence[float] = PERIODS) -> "SineTrajectory":
        """The paper's waves: amplitude A_j · max(|lower_j|, |upper_j|), centred in the range."""
        lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        fractions, periods_ = np.asarray(amplitudes, dtype=float), np.asarray(periods, dtype=float)
        if not (lower.shape == upper.shape == fractions.shape == periods_.shape):
            raise DataError(f"{lower.shape[0]} joints but {fractions.shape[0]} amplitudes and "
                            f"{periods_.shape[0]} periods")
        centre = 0.5 * (lower + upper)
        amplitude = fractions * np.maximum(np.abs(lower), np.abs(upper))
        if np.any(centre - amplitude < lower) or np.any(centre + amplitude > upper):
            raise DataError("a sine wave leaves the joint limits (asymmetric range); lower the "
                            "amplitudes")
        return cls(centre, amplitude, periods_)

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Desired q, qd, qdd (N, dof) at times t (N,)."""
        w = 2.0 * np.pi / self.period
        phase = np.asarray(t, dtype=float)[:, None] * w
        q = self.centre + self.amplitude * np.sin(phase)
        qd = self.amplitude * w * np.cos(phase)
        qdd = -self.amplitude * w ** 2 * np.sin(phase)
        return q, qd, qdd


@dataclass(frozen=True)
class TrackingConfig:
    duration: float = 30.0                  # [s]
    physics_rate: float = PHYSICS_RATE      # [Hz]
    record_rate: float = RECORD_RATE        # [Hz]; must divide physics_rate
    bandwidth_hz: float = BANDWIDTH_HZ
    damping_ratio: float = DAMPING_RATIO
    window_seconds: float = DEFAULT_WINDOW_SECONDS   # Savitzky-Golay window


@dataclass(frozen=True, eq=False)
class TrackingData:
    """Recorded sine tracking: stamps t (N,); measured q, qd; applied tau; desired q, qd, qdd;
    accelerations qdd_exact (simulator) and qdd_savgol (Savitzky-Golay of q); all (N, dof)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    qdd_exact: np.ndarray
    qdd_savgol: np.ndarray
    q_des: np.ndarray
    qd_des: np.ndarray
    qdd_des: np.ndarray
    joint_names: tuple[str, ...]
    config: TrackingConfig

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def qdd(self, acceleration: str = "savgol") -> np.ndarray:
        if acceleration not in ACCELERATIONS:
            raise DataError(f"acceleration must be one of {ACCELERATIONS}, got {acceleration!r}")
        return self.qdd_savgol if acceleration == "savgol" else self.qdd_exact

    def samples(self, acceleration: str = "savgol", dtype: torch.dtype = torch.float64) -> Samples:
        """Identification samples (q, qd, qdd, tau) with the chosen accelerations."""
        return Samples.from_arrays(self.q, self.qd, self.qdd(acceleration), self.tau, dtype=dtype)

    def tracking_rms(self) -> np.ndarray:
        """RMS position tracking error per joint [rad]."""
        return np.sqrt(np.mean((self.q_des - self.q) ** 2, axis=0))


def pd_gains(model: RigidBodyModel, q: np.ndarray, bandwidth_hz: float = BANDWIDTH_HZ,
             damping_ratio: float = DAMPING_RATIO) -> tuple[np.ndarray, np.ndarray]:
    """Kp = ω² diag H(q), Kd = 2ζω diag H(q): the same loop bandwidth on every joint."""
    with torch.no_grad():
        h = mass_matrix(model, torch.as_tensor(q, dtype=model.dtype))[0].diagonal().cpu().numpy()
    w = 2.0 * np.pi * bandwidth_hz
    return w ** 2 * h, 2.0 * damping_ratio * w * h


def load_pybullet_robot(client: int, urdf_path: str) -> tuple[int, list[int]]:
    """Load ``urdf_path`` for torque control in the PyBullet ``client``: fixed base, URDF
    inertia, no multibody damping (the URDF joint damping stays, PyBullet applies it), velocity
    motors off. Returns the body id and the movable joint indices (URDF order)."""
    import pybullet as p

    body = p.loadURDF(urdf_path, useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE,
                      physicsClientId=client)
    p.changeDynamics(body, -1, linearDamping=0.0, angularDamping=0.0, physicsClientId=client)
    joints = [j for j in range(p.getNumJoints(body, physicsClientId=client))
              if p.getJointInfo(body, j, physicsClientId=client)[2] in (p.JOINT_REVOLUTE,
                                                                        p.JOINT_PRISMATIC)]
    for j in joints:
        p.setJointMotorControl2(body, j, p.VELOCITY_CONTROL, force=0.0, physicsClientId=client)
    return body, joints


def simulate_sine_tracking(config: TrackingConfig = TrackingConfig(),
                           urdf_path: Optional[str] = None) -> TrackingData:
    """Run the iiwa (or ``urdf_path``) through the paper's sine waves in PyBullet and record
    (q, qd, tau) at ``config.record_rate`` (see the module docstring)."""
    import pybullet as p

    urdf_path = urdf_path or kuka_urdf_path()
    description = load_robot(urdf_path)
    model = RigidBodyModel(description)
    steps_per_record = config.physics_rate / config.record_rate
    if config.duration <= 0 or abs(steps_per_record - round(steps_per_record)) > 1e-9 \
            or steps_per_record < 1:
        raise DataError(f"need duration > 0 and a record rate dividing the physics rate, got "
                        f"{config.duration} s, {config.record_rate} Hz / {config.physics_rate} Hz")
    every = int(round(steps_per_record))
    dt = 1.0 / config.physics_rate
    n_steps = int(round(config.duration * config.physics_rate))
    lower, upper = joint_limits(description)
    trajectory = SineTrajectory.from_limits(lower, upper)
    if trajectory.centre.shape[0] != model.dof:
        raise DataError(f"the sine waves are defined for 7 joints, '{description.name}' has "
                        f"{model.dof}")
    t = np.arange(n_steps) * dt
    q_des, qd_des, qdd_des = trajectory(t)
    with torch.no_grad():   # feed-forward of the whole trajectory in one batch
        feedforward = rnea(model, *(torch.as_tensor(x) for x in (q_des, qd_des, qdd_des))).numpy()
    kp, kd = pd_gains(model, trajectory.centre, config.bandwidth_hz, config.damping_ratio)

    client = p.connect(p.DIRECT)
    try:
        p.setGravity(*GRAVITY, physicsClientId=client)
        p.setTimeStep(dt, physicsClientId=client)
        body, joints = load_pybullet_robot(client, urdf_path)
        names = [p.getJointInfo(body, j, physicsClientId=client)[1].decode() for j in joints]
        if tuple(names) != model.joint_names:
            raise UrdfError(f"PyBullet's joints {names} differ from the URDF's {model.joint_names}")
        for k, j in enumerate(joints):
            p.resetJointState(body, j, q_des[0, k], qd_des[0, k], physicsClientId=client)
        q, qd, tau = (np.empty((n_steps + 1, model.dof)) for _ in range(3))

        def read(step: int) -> None:
            states = p.getJointStates(body, joints, physicsClientId=client)
            q[step] = [s[0] for s in states]
            qd[step] = [s[1] for s in states]

        read(0)
        for step in range(n_steps):
            tau[step] = feedforward[step] + kp * (q_des[step] - q[step]) + kd * (qd_des[step] - qd[step])
            p.setJointMotorControlArray(body, joints, p.TORQUE_CONTROL, forces=tau[step].tolist(),
                                        physicsClientId=client)
            p.stepSimulation(physicsClientId=client)
            read(step + 1)
    finally:
        p.disconnect(client)

    qdd_exact = (qd[1:] - qd[:-1]) / dt
    keep = np.arange(0, n_steps, every)
    derivatives = savgol_derivatives(t[keep], q[keep], window_seconds=config.window_seconds)
    return TrackingData(t=t[keep], q=q[keep], qd=qd[keep], tau=tau[keep], qdd_exact=qdd_exact[keep],
                        qdd_savgol=derivatives.qdd, q_des=q_des[keep], qd_des=qd_des[keep],
                        qdd_des=qdd_des[keep], joint_names=model.joint_names, config=config)


def _random_rotation(rng: np.random.Generator, max_angle: float) -> np.ndarray:
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(0.0, max_angle)
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * k @ k


def perturb_inertials(description: RobotDescription, rng: np.random.Generator, scale: float = 0.5,
                      links: Optional[Sequence[str]] = None) -> RobotDescription:
    """A copy of ``description`` whose links (default: every body with mass) have perturbed,
    still physically consistent inertials — the random initial models of Table 1.

    Per link, with s = ``scale`` in [0, 1):
    - mass m·U(1−s, 1+s) (stays > 0);
    - com c + U(−s, s)·COM_SHIFT per axis (0.1 m at s = 1; the com is unconstrained);
    - rotational inertia through its covariance (paper eq. 13) Σ = ½ tr(I)·1 − I = V diag(σ) Vᵀ:
      every second moment σ_k scaled by U(1−s, 1+s), the principal axes V rotated by a random
      axis and an angle U(0, s·π/2), and I = tr(Σ)·1 − Σ (eq. 15). Σ ≻ 0 stays, so the result
      keeps positive principal moments that satisfy the triangle inequality (eq. 8) whenever the
      URDF's do. Joint damping is not perturbed.
    """
    if not 0.0 <= scale < 1.0:
        raise DiffneaError(f"perturbation scale must be in [0, 1), got {scale}")
    names = set(links) if links is not None else {b.name for b in description.bodies if b.mass > 0}
    unknown = names - set(description.body_names)
    if unknown:
        raise DiffneaError(f"cannot perturb {sorted(unknown)}: not links of '{description.name}'")
    mass = np.array([b.mass for b in description.bodies])
    com = np.stack([b.com for b in description.bodies])
    inertia = np.stack([b.inertia for b in description.bodies])
    for i, body in enumerate(description.bodies):
        if body.name not in names:
            continue
        mass[i] = body.mass * rng.uniform(1.0 - scale, 1.0 + scale)
        com[i] = body.com + rng.uniform(-scale, scale, size=3) * COM_SHIFT
        sigma = 0.5 * np.trace(body.inertia) * np.eye(3) - body.inertia
        moments, axes = np.linalg.eigh(sigma)
        moments = np.clip(moments, 0.0, None) * rng.uniform(1.0 - scale, 1.0 + scale, size=3)
        axes = _random_rotation(rng, scale * MAX_ROTATION) @ axes
        sigma = axes @ np.diag(moments) @ axes.T
        inertia[i] = np.trace(sigma) * np.eye(3) - sigma
    return with_inertials(description, mass, com, inertia)
