"""The 5-DoF qbMove arm pushing a 2 kg box under closed-loop inverse kinematics (paper 003 §4.2.3,
Fig. 14) in the embedded simulation.

The end effector (the tip of link_5 of urdf/five_dof_qbmove.urdf.xacro) follows a straight
minimum-jerk path along +x at the height of the box's centre, through the face of a 2 kg box of
0.265 m edges lying on the ground (box-ground friction 0.23, the paper's wood-cardboard mu). A
first-order CLIK (Siciliano et al. 2010, eq. 3.70 with the damped pseudo-inverse and a null-space
pull to a rest posture) turns the path into desired link positions q_d,

    q_d' = J^+(q_d) (x_d' + K (x_d - k(q_d))) + (I - J^+ J) k_0 (q_rest - q_d),

and, as in the paper, the spring deflection that holds gravity at q_d is added: theta_eq solves
tau_spring(q_d, theta_eq, preset) = g(q_d) per joint (the actuator's own spring map). theta_eq
goes to every joint in mode 6 with the soft (0.2 rad) or stiff (0.6 rad) preset. The kinematics,
Jacobian and gravity come from a second, kinematic PyBullet instance of the same URDF.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from compliant_actuator_gazebo.description import RobotDescription, load_description
from compliant_actuator_gazebo.embedded import EmbeddedSimulation, physics_urdf
from compliant_actuator_gazebo.experiments.ilc import minimum_jerk
from compliant_actuator_gazebo.resources import package_file
from compliant_actuator_gazebo.errors import CompliantError

PRESETS = {"soft": 0.2, "stiff": 0.6}                  # §4.2
BOX_MASS, BOX_EDGE, BOX_FRICTION = 2.0, 0.265, 0.23    # §4.2.3 and its footnote
EE_LINK, EE_POINT = "link_5", (0.0, 0.0, 0.04)          # the tip of the last link
Q_REST = (0.0, 0.5, 1.3, 1.2, 0.0)                      # rad: leaning forward, wrist down


@dataclass(frozen=True)
class PushConfig:
    """The task: the path of the end effector and where the box lies (x along the push)."""

    start_x: float = 0.30        # m, path start, clear of the box
    push: float = 0.05           # m, how far the path enters the box's initial face
    box_face_x: float = 0.40     # m, the box's near face
    height: float = 0.2          # m, path height: on the box face, below its top (0.265 m)
    duration: float = 4.0        # s, minimum-jerk time of the path
    hold: float = 2.0            # s, held at the end
    settle: float = 1.0          # s, at the start before the path
    clik_gain: float = 20.0      # 1/s, K
    null_gain: float = 2.0       # 1/s, k_0
    damping: float = 0.02        # damped pseudo-inverse lambda
    sample_rate: float = 100.0   # Hz, CLIK and equilibrium commands (a topic's rate)
    physics_rate: float = 4000.0  # Hz (the 2.4e-5 kg m^2 roll link: c dt / I < 1)

    def path(self, times: np.ndarray) -> np.ndarray:
        """(T, 3) desired end-effector positions (minimum jerk along +x)."""
        start = np.array([self.start_x, 0.0, self.height])
        goal = start + np.array([self.box_face_x - self.start_x + self.push, 0.0, 0.0])
        return minimum_jerk(start, goal, self.duration, times)


class Kinematics:
    """Forward kinematics, position Jacobian and gravity torques of a robot description (a
    kinematic PyBullet instance, no contacts)."""

    def __init__(self, description: RobotDescription, link: str = EE_LINK, point=EE_POINT,
                 gravity: float = 9.81) -> None:
        import os
        import tempfile

        import pybullet
        self._p = pybullet
        self._cid = pybullet.connect(pybullet.DIRECT)
        pybullet.setGravity(0.0, 0.0, -gravity, physicsClientId=self._cid)
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
            f.write(physics_urdf(description.urdf))
            path = f.name
        try:
            self._body = pybullet.loadURDF(path, useFixedBase=True, flags=pybullet.URDF_USE_INERTIA_FROM_FILE,
                                           physicsClientId=self._cid)
        finally:
            os.unlink(path)
        self._idx, self._link = [], None
        for j in range(pybullet.getNumJoints(self._body, physicsClientId=self._cid)):
            info = pybullet.getJointInfo(self._body, j, physicsClientId=self._cid)
            if info[2] != pybullet.JOINT_FIXED:
                self._idx.append(j)
            if info[12].decode() == link:
                self._link = j
        if self._link is None:
            raise CompliantError(f"{description.name} has no link {link!r}")
        self.point = tuple(point)

    def _set(self, q: Sequence[float]) -> None:
        for j, value in zip(self._idx, q):
            self._p.resetJointState(self._body, j, float(value), 0.0, physicsClientId=self._cid)

    def position(self, q: Sequence[float]) -> np.ndarray:
        """k(q): world position of the end-effector point."""
        self._set(q)
        s = self._p.getLinkState(self._body, self._link, computeForwardKinematics=True, physicsClientId=self._cid)
        pos, _ = self._p.multiplyTransforms(s[4], s[5], self.point, (0, 0, 0, 1), physicsClientId=self._cid)
        return np.array(pos)

    def jacobian(self, q: Sequence[float]) -> np.ndarray:
        """(3, n) position Jacobian of the end-effector point."""
        self._set(q)
        s = self._p.getLinkState(self._body, self._link, computeForwardKinematics=True, physicsClientId=self._cid)
        # calculateJacobian wants the point in the link's centre-of-mass frame
        inv_pos, inv_orn = self._p.invertTransform(s[0], s[1])
        world, _ = self._p.multiplyTransforms(s[4], s[5], self.point, (0, 0, 0, 1), physicsClientId=self._cid)
        local, _ = self._p.multiplyTransforms(inv_pos, inv_orn, world, (0, 0, 0, 1), physicsClientId=self._cid)
        zero = [0.0] * len(self._idx)
        linear, _ = self._p.calculateJacobian(self._body, self._link, list(local), [float(v) for v in q], zero, zero,
                                              physicsClientId=self._cid)
        return np.array(linear)

    def gravity(self, q: Sequence[float]) -> np.ndarray:
        """g(q): the joint torques that hold the arm at rest at q."""
        zero = [0.0] * len(self._idx)
        return np.array(self._p.calculateInverseDynamics(self._body, [float(v) for v in q], zero, zero,
                                                         physicsClientId=self._cid))

    def close(self) -> None:
        if self._p.isConnected(self._cid):
            self._p.disconnect(self._cid)


def clik_step(kin: Kinematics, q: np.ndarray, x_d: np.ndarray, xdot_d: np.ndarray, dt: float,
              config: PushConfig, q_rest: np.ndarray) -> np.ndarray:
    """One explicit Euler step of the first-order CLIK (module docstring)."""
    jac = kin.jacobian(q)
    pinv = jac.T @ np.linalg.inv(jac @ jac.T + config.damping ** 2 * np.eye(3))
    error = x_d - kin.position(q)
    qdot = pinv @ (xdot_d + config.clik_gain * error) + (np.eye(len(q)) - pinv @ jac) @ (
        config.null_gain * (q_rest - q))
    return q + dt * qdot


def equilibrium_for(actuator, q: float, preset: float, torque: float) -> float:
    """theta_eq with spring torque ``torque`` on the link at ``q`` (gravity compensation, §4.2.3);
    the torque saturates beyond the deflection limit, then the nearest attainable theta_eq."""
    def spring(eq: float) -> float:
        r = actuator.references(eq, preset)
        return actuator.torques(q, r.theta1, r.theta2).link()

    reach = 2.0 * actuator.max_deflection() + 2.0 * abs(preset)
    lo, hi = q - reach, q + reach            # the spring torque grows with theta_eq
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if spring(mid) < torque else (lo, mid)
    return 0.5 * (lo + hi)


@dataclass
class PushRun:
    """One push with one preset: (T,) time from the path's start, (T, 3) positions, (T, 5) joints."""

    behaviour: str
    preset: float
    time: np.ndarray
    desired: np.ndarray          # m, x_d
    end_effector: np.ndarray     # m, measured
    box: np.ndarray              # m, box centre
    q_desired: np.ndarray        # rad, CLIK output
    command: np.ndarray          # rad, theta_eq sent (gravity-compensated)
    equilibrium: np.ndarray      # rad, realised (theta_1 + theta_2) / 2
    position: np.ndarray         # rad, link
    stiffness: np.ndarray        # N m/rad
    torque: np.ndarray           # N m, spring torque on the link
    saturated: np.ndarray        # bool, a spring of the joint at its deflection limit
    joints: tuple[str, ...]


@dataclass(frozen=True)
class PushMetrics:
    """End-effector tracking and the box's displacement (paper Fig. 14's observables)."""

    ee_rms_error: float          # m, |x_d - x| over the path and hold
    ee_max_error: float          # m
    ee_final_error_x: float      # m, x_d - x at the end (> 0: held back)
    box_displacement_x: float    # m, along the push (+x)
    box_displacement_y: float    # m, sideways
    max_link_torque: float       # N m, largest |spring torque| of any joint
    saturated_fraction: float    # of samples with a spring of some joint at its limit

    def as_dict(self) -> dict:
        return asdict(self)


def run_push(behaviour: str, config: PushConfig = PushConfig()) -> PushRun:
    """Run the §4.2.3 push with the ``soft`` or ``stiff`` preset."""
    if behaviour not in PRESETS:
        raise CompliantError(f"unknown behaviour {behaviour!r} (soft, stiff)")
    preset = PRESETS[behaviour]
    description = load_description(package_file("urdf", "five_dof_qbmove.urdf.xacro"), {"mode": 6})
    joints = description.compliant_names
    actuators = [description.spec(j).make_joint().actuator() for j in joints]
    limits = np.array([a.max_deflection() for a in actuators])
    dt = 1.0 / config.sample_rate
    every = int(round(config.physics_rate / config.sample_rate))
    times = np.arange(-config.settle, config.duration + config.hold + 0.5 * dt, dt)
    x_d = config.path(np.clip(times, 0.0, None))
    xdot_d = np.gradient(x_d, dt, axis=0) * (times >= 0.0)[:, None]
    kin = Kinematics(description)
    try:
        q_rest = np.array(Q_REST)
        q = q_rest.copy()
        for _ in range(3000):                     # the start posture: CLIK to x_d(0) at rest
            q = clik_step(kin, q, x_d[0], np.zeros(3), dt, config, q_rest)
        if np.linalg.norm(kin.position(q) - x_d[0]) > 1e-4:
            raise CompliantError(f"the path start {x_d[0]} is out of the arm's reach")

        def command(q_now: np.ndarray) -> list[float]:
            g = kin.gravity(q_now)
            return [equilibrium_for(a, qi, preset, gi) for a, qi, gi in zip(actuators, q_now, g)]

        first = command(q)
        inputs = {j: {"stiffness_preset": preset, "equilibrium_position": e} for j, e in zip(joints, first)}
        rows = []
        with EmbeddedSimulation(description, physics_rate=config.physics_rate, initial_inputs=inputs) as sim:
            sim.reset(dict(zip(joints, q)))
            sim.add_ground(0.0, BOX_FRICTION)
            box = sim.add_box((BOX_EDGE,) * 3, BOX_MASS, (config.box_face_x + BOX_EDGE / 2, 0.0, BOX_EDGE / 2 + 1e-4),
                              lateral_friction=1.0)
            for k, t in enumerate(times):
                if k > 0:
                    q = clik_step(kin, q, x_d[k], xdot_d[k], dt, config, q_rest)
                eq = command(q)
                for j, e in zip(joints, eq):
                    sim.set_input(j, "equilibrium_position", e)
                states = [sim.state(j) for j in joints]
                theta = np.array([(s.output.motor1.position, s.output.motor2.position) for s in states])
                link = np.array([s.q for s in states])
                deflection = np.abs(link[:, None] - theta)
                rows.append((t, x_d[k], np.array(sim.link_point(EE_LINK, EE_POINT)),
                             np.array(sim.body_position(box)), q.copy(), np.array(eq), theta.mean(axis=1), link,
                             np.array([s.output.stiffness for s in states]),
                             np.array([s.output.link_torque for s in states]),
                             np.any(deflection >= limits[:, None] - 1e-9, axis=1)))
                sim.step(every)
            unstable = sim.stability_report()
    finally:
        kin.close()
    if unstable:
        raise RuntimeError(f"push/{behaviour}: {'; '.join(unstable)}")
    cols = [np.array(c) for c in zip(*rows)]
    return PushRun(behaviour, preset, *cols, joints=joints)


def push_metrics(run: PushRun) -> PushMetrics:
    """Figures of one push: tracking from the path's start, the box from its rest before it."""
    moving = run.time >= 0.0
    error = np.linalg.norm(run.desired - run.end_effector, axis=1)[moving]
    box0 = run.box[np.flatnonzero(moving)[0]]
    return PushMetrics(
        ee_rms_error=float(np.sqrt(np.mean(error ** 2))), ee_max_error=float(np.max(error)),
        ee_final_error_x=float(run.desired[-1, 0] - run.end_effector[-1, 0]),
        box_displacement_x=float(run.box[-1, 0] - box0[0]), box_displacement_y=float(run.box[-1, 1] - box0[1]),
        max_link_torque=float(np.max(np.abs(run.torque))),
        saturated_fraction=float(np.mean(np.any(run.saturated[moving], axis=1))))


def joint_summary(run: PushRun) -> dict[str, dict[str, float]]:
    """Per joint over the path: largest |q - theta_eq realised|, stiffness range, torque, saturation."""
    moving = run.time >= 0.0
    out = {}
    for k, joint in enumerate(run.joints):
        out[joint] = {"max_link_minus_equilibrium": float(np.max(np.abs(run.position[moving, k]
                                                                          - run.equilibrium[moving, k]))),
                      "max_command_minus_realised": float(np.max(np.abs(run.command[moving, k]
                                                                         - run.equilibrium[moving, k]))),
                      "min_stiffness": float(np.min(run.stiffness[moving, k])),
                      "max_stiffness": float(np.max(run.stiffness[moving, k])),
                      "max_abs_torque": float(np.max(np.abs(run.torque[moving, k]))),
                      "saturated_fraction": float(np.mean(run.saturated[moving, k]))}
    return out

