"""Embedded simulation: PyBullet for the rigid bodies, the core for the compliant actuators.

Paper 003 §3 splits an articulated soft robot into the rigid-body dynamics (eq. 1, done by
Gazebo's physics engine there, by PyBullet here) and the actuator (spring torques eq. 3-6, motor
dynamics eq. 7-10, PID eq. 11), done by the plugin (by :class:`compliant_actuator_gazebo.
CompliantJoint` here, the same core the Gazebo plugin calls). Each physics step of ``dt``:

1. read q, qd of every movable joint (one ``getJointStates`` call);
2. ``CompliantJoint.update(t, q, qd)`` for each compliant joint -> link torque held during
   [t, t + dt] (the core integrates its motors over the previous step with internal sub-steps);
3. subtract the URDF viscous damping ``c * qd`` (all movable joints);
4. apply the torques with TORQUE_CONTROL (one ``setJointMotorControlArray`` call) and step.

Joint <dynamics>, checked on PyBullet 3.2.7: PyBullet applies a URDF joint's ``damping`` itself
(explicitly) but ignores its ``friction``. This module strips <dynamics> from the URDF it loads
and applies both itself, so the behaviour does not depend on the PyBullet version: viscous
damping explicitly as above (stable for c dt / I < 2, see :meth:`stability_report`), Coulomb
friction as the joint's velocity motor with target velocity 0 and maximum force = friction (an
implicit constraint: it holds a joint at rest below the friction torque and dissipates exactly
friction x path, test_embedded checks it). PyBullet's default link damping (0.04) is set to 0.

Joints without a plugin block are passive, as in Gazebo: free, subject only to their URDF damping
and friction (and limits). Fixed base; geometry must not need ``package://`` meshes.

Benchmark: the 5-DoF arm at 1 kHz must run >= 5x real time (``make bench``); keep the step loop
lean (two PyBullet calls per step besides stepSimulation, no NumPy for a handful of joints).
"""
from __future__ import annotations

import math
import os
import tempfile
import time as _time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Mapping, Optional, Union

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo.description import (DescriptionError, RobotDescription,
                                                   parse_description)
from compliant_actuator_gazebo.errors import CompliantError

INPUTS: dict[str, "cag.Input"] = {cag.input_name(i): i for i in cag.Input.__members__.values()}
InputKey = Union[str, "cag.Input"]
MAX_JOINT_VELOCITY = 1e5
"""[rad/s] PyBullet's per-joint velocity clamp, set far beyond any motion here: a clamp is an
unmodelled loss (at 1000 rad/s, its old value, it took half the overshoot of Fig. 8's stiff
AwAS-II step, which reaches ~2000 rad/s; Gazebo has no such clamp)."""
_REFERENCE_MODES = {int(cag.Mode.MotorPositions), int(cag.Mode.EquilibriumPreset),
                    int(cag.Mode.MotorPid), int(cag.Mode.MotorPidEquilibrium)}


@dataclass(frozen=True)
class JointSnapshot:
    """State of one compliant joint at ``time``: link position/velocity and the core's output."""

    joint: str
    time: float
    q: float
    qd: float
    output: "cag.JointOutput"


class EmbeddedSimulation:
    """A robot description run in PyBullet (DIRECT) with its compliant joints in the core.

    ``physics_rate`` [Hz] sets dt; ``initial_positions`` (joint -> q, any movable joint,
    default 0) and ``initial_inputs`` (joint -> {input name -> value}) the start. Inputs are the
    topic basenames of paper 003 §3.1 (``cag.input_name``): torque_command, link_command,
    reference_1, reference_2, equilibrium_position, stiffness_preset, motor_1_command,
    motor_2_command, external_torque.
    """

    def __init__(self, description: Union[RobotDescription, str], physics_rate: float = 1000.0,
                 gravity: float = 9.81,
                 initial_positions: Optional[Mapping[str, float]] = None,
                 initial_inputs: Optional[Mapping[str, Mapping[str, float]]] = None) -> None:
        import pybullet

        if isinstance(description, str):
            description = parse_description(description)
        if not (math.isfinite(physics_rate) and physics_rate > 0.0):
            raise CompliantError(f"physics_rate must be a finite number > 0, got {physics_rate}")
        if not math.isfinite(gravity):
            raise CompliantError(f"gravity must be finite, got {gravity}")
        self.description = description
        self.dt = 1.0 / float(physics_rate)
        self._p = pybullet
        self._cid = pybullet.connect(pybullet.DIRECT)
        try:
            self._load(gravity)
            self._build_joints()
            for joint, inputs in (initial_inputs or {}).items():
                for name, value in inputs.items():
                    if not self.set_input(joint, name, value):
                        raise CompliantError(f"initial input {name} of joint {joint!r} must be "
                                         f"finite, got {value}")
            self.reset(initial_positions)   # after the inputs: motors start at rest at the preset
        except BaseException:
            self.close()
            raise

    # -- set-up ---------------------------------------------------------------------------
    def _load(self, gravity: float) -> None:
        p, cid = self._p, self._cid
        p.setGravity(0.0, 0.0, -float(gravity), physicsClientId=cid)
        p.setTimeStep(self.dt, physicsClientId=cid)
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
            f.write(physics_urdf(self.description.urdf))
            path = f.name
        try:
            self._body = p.loadURDF(path, useFixedBase=True,
                                    flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=cid)
        except p.error as exc:
            raise DescriptionError(f"{self.description.name}: PyBullet cannot load the URDF "
                                   f"({exc})") from None
        finally:
            os.unlink(path)

    def _build_joints(self) -> None:
        p, cid, body = self._p, self._cid, self._body
        index: dict[str, int] = {}
        for j in range(p.getNumJoints(body, physicsClientId=cid)):
            info = p.getJointInfo(body, j, physicsClientId=cid)
            p.changeDynamics(body, j, linearDamping=0.0, angularDamping=0.0, jointDamping=0.0,
                             maxJointVelocity=MAX_JOINT_VELOCITY, physicsClientId=cid)
            if info[2] != p.JOINT_FIXED:
                index[info[1].decode()] = j
        self.movable_joints: tuple[str, ...] = tuple(index)
        self._idx = [index[n] for n in self.movable_joints]
        position = {n: k for k, n in enumerate(self.movable_joints)}
        dynamics = {j.name: j for j in self.description.joints}
        self._damping = [dynamics[n].damping for n in self.movable_joints]
        self._friction = [dynamics[n].friction for n in self.movable_joints]
        self.joints: tuple[str, ...] = self.description.compliant_names
        self._core = {spec.joint: spec.make_joint() for spec in self.description.compliant}
        self._pairs = [(position[spec.joint], self._core[spec.joint])
                       for spec in self.description.compliant]
        self._position = position
        # Coulomb friction: the velocity motor, target 0, maximum force = friction (implicit).
        p.setJointMotorControlArray(body, self._idx, p.VELOCITY_CONTROL,
                                    targetVelocities=[0.0] * len(self._idx),
                                    forces=self._friction, physicsClientId=cid)

    # -- running --------------------------------------------------------------------------
    def reset(self, positions: Optional[Mapping[str, float]] = None) -> None:
        """Joints to ``positions`` (default 0) at rest, time 0; inputs keep their values."""
        positions = dict(positions or {})
        unknown = sorted(set(positions) - set(self.movable_joints))
        if unknown:
            raise KeyError(f"initial positions for unknown or fixed joints {unknown} "
                           f"(movable: {', '.join(self.movable_joints)})")
        for name, j in zip(self.movable_joints, self._idx):
            q0 = float(positions.get(name, 0.0))
            if not math.isfinite(q0):
                raise CompliantError(f"initial position of joint {name!r} must be finite, got {q0}")
            self._p.resetJointState(self._body, j, q0, 0.0, physicsClientId=self._cid)
        for name, joint in self._core.items():
            joint.reset(float(positions.get(name, 0.0)), 0.0)
        self._steps = 0
        self._synced = -1
        self._states: list = []
        self.reset_timing()

    def step(self, n: int = 1) -> None:
        """Advance ``n`` physics steps."""
        p, cid, body, idx = self._p, self._cid, self._body, self._idx
        pairs, damping, dt = self._pairs, self._damping, self.dt
        torque_control, perf = p.TORQUE_CONTROL, _time.perf_counter
        start = perf()
        core = 0.0
        for _ in range(n):
            t = self._steps * dt
            states = p.getJointStates(body, idx, physicsClientId=cid)
            forces = [-c * s[1] for c, s in zip(damping, states)]
            t0 = perf()
            for k, joint in pairs:
                s = states[k]
                forces[k] += joint.update(t, s[0], s[1])
            core += perf() - t0
            p.setJointMotorControlArray(body, idx, torque_control, forces=forces,
                                        physicsClientId=cid)
            p.stepSimulation(physicsClientId=cid)
            self._steps += 1
        self._core_seconds += core
        self._step_seconds += perf() - start

    def _sync(self) -> None:
        """Bring the cores to the current time (the next step's update then only computes)."""
        if self._synced == self._steps:
            return
        t = self._steps * self.dt
        self._states = self._p.getJointStates(self._body, self._idx, physicsClientId=self._cid)
        t0 = _time.perf_counter()
        for k, joint in self._pairs:
            s = self._states[k]
            joint.update(t, s[0], s[1])
        self._core_seconds += _time.perf_counter() - t0
        self._synced = self._steps

    # -- inputs and state -----------------------------------------------------------------
    def _joint(self, joint: str) -> "cag.CompliantJoint":
        try:
            return self._core[joint]
        except KeyError:
            raise KeyError(f"{joint!r} is not a compliant joint of {self.description.name!r} "
                           f"(compliant joints: {', '.join(self.joints) or 'none'})") from None

    @staticmethod
    def _input(name: InputKey) -> "cag.Input":
        if isinstance(name, cag.Input):
            return name
        try:
            return INPUTS[name]
        except KeyError:
            raise CompliantError(f"unknown input {name!r} (inputs: {', '.join(INPUTS)})") from None

    def set_input(self, joint: str, name: InputKey, value: float) -> bool:
        """Store an input of a joint; False (old value kept) for NaN/Inf. A stiffness preset
        outside the model's domain is clamped (then :meth:`clamped_preset` is True)."""
        return self._joint(joint).set_input(self._input(name), float(value))

    def input(self, joint: str, name: InputKey) -> float:
        return self._joint(joint).input(self._input(name))

    def clamped_preset(self, joint: str) -> bool:
        return self._joint(joint).clamped_preset()

    def state(self, joint: str) -> JointSnapshot:
        """Link q, qd and the core's output of a compliant joint, now."""
        core = self._joint(joint)
        self._sync()
        s = self._states[self._position[joint]]
        return JointSnapshot(joint=joint, time=self.time, q=s[0], qd=s[1], output=core.output())

    def joint_positions(self) -> dict[str, tuple[float, float]]:
        """(q, qd) of every movable joint, compliant or passive."""
        states = self._p.getJointStates(self._body, self._idx, physicsClientId=self._cid)
        return {n: (s[0], s[1]) for n, s in zip(self.movable_joints, states)}

    @property
    def time(self) -> float:
        return self._steps * self.dt

    @property
    def steps(self) -> int:
        return self._steps

    # -- environment (paper 003 §4.2.3: the box on the ground) -----------------------------
    def add_ground(self, height: float = 0.0, lateral_friction: float = 1.0) -> int:
        """A static plane z = ``height`` with ``lateral_friction``; returns its body id.

        PyBullet combines two bodies' Coulomb coefficients as their product, so a box of
        friction 1 on this plane slides with ``lateral_friction``."""
        p, cid = self._p, self._cid
        shape = p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid)
        body = p.createMultiBody(0.0, shape, basePosition=(0.0, 0.0, float(height)), physicsClientId=cid)
        p.changeDynamics(body, -1, lateralFriction=float(lateral_friction), physicsClientId=cid)
        return body

    def add_box(self, size: tuple[float, float, float], mass: float, position: tuple[float, float, float],
                lateral_friction: float = 1.0) -> int:
        """A free box of edge lengths ``size`` [m] and ``mass`` [kg] centred at ``position``;
        returns its body id. Bodies added stay where they are on :meth:`reset`."""
        if not (mass > 0.0 and all(s > 0.0 for s in size)):
            raise CompliantError(f"a box needs a mass > 0 and sizes > 0, got {mass}, {size}")
        p, cid = self._p, self._cid
        half = [0.5 * float(s) for s in size]
        shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=cid)
        body = p.createMultiBody(float(mass), shape, basePosition=[float(x) for x in position],
                                 physicsClientId=cid)
        p.changeDynamics(body, -1, lateralFriction=float(lateral_friction), linearDamping=0.0,
                         angularDamping=0.0, physicsClientId=cid)
        return body

    def body_position(self, body: int) -> tuple[float, float, float]:
        """World position of the base of a body added with :meth:`add_box` or :meth:`add_ground`."""
        return tuple(self._p.getBasePositionAndOrientation(body, physicsClientId=self._cid)[0])

    def link_point(self, link: str, point: tuple[float, float, float] = (0.0, 0.0, 0.0)
                   ) -> tuple[float, float, float]:
        """World position of ``point`` (in the URDF frame of the robot's ``link``), now."""
        p, cid = self._p, self._cid
        index = self._link_index(link)
        state = p.getLinkState(self._body, index, computeForwardKinematics=True, physicsClientId=cid)
        position, orientation = p.multiplyTransforms(state[4], state[5], point, (0.0, 0.0, 0.0, 1.0),
                                                     physicsClientId=cid)
        return tuple(position)

    def _link_index(self, link: str) -> int:
        p, cid = self._p, self._cid
        for j in range(p.getNumJoints(self._body, physicsClientId=cid)):
            if p.getJointInfo(self._body, j, physicsClientId=cid)[12].decode() == link:
                return j
        raise KeyError(f"{link!r} is not a moving link of {self.description.name!r}")

    # -- diagnostics ----------------------------------------------------------------------
    @property
    def core_seconds(self) -> float:
        """Wall time spent in CompliantJoint.update (the plugin's share) since reset_timing."""
        return self._core_seconds

    @property
    def step_seconds(self) -> float:
        """Wall time spent in :meth:`step` since reset_timing (core included)."""
        return self._step_seconds

    def reset_timing(self) -> None:
        self._core_seconds = 0.0
        self._step_seconds = 0.0

    def stability_report(self, limit: float = 1.0) -> list[str]:
        """Explicit couplings that the physics step resolves poorly, one line each.

        PyBullet integrates the link semi-implicitly with the torque held over the step, so a
        spring of stiffness sigma is stable for omega dt = sqrt(sigma / I) dt < 2 and a viscous
        damping c for c dt / I < 2 (I: the joint's diagonal mass-matrix entry now). Reports the
        joints whose figure exceeds ``limit``. The stiffness is the larger of the current one and
        the one at the current link position with the references now commanded (modes 2, 3, 5,
        6: where the motors are going), so calling this right after an input changes warns
        before the step that would go unstable.
        """
        self._synced = -1              # recompute with the current inputs (dt = 0: no integration)
        self._sync()
        q = [s[0] for s in self._states]
        mass = self._p.calculateMassMatrix(self._body, q, physicsClientId=self._cid)
        report = []
        for name, k in self._position.items():
            inertia = mass[k][k]
            if inertia <= 0.0:
                report.append(f"joint {name!r}: no inertia about its axis (check the URDF)")
                continue
            c = self._damping[k]
            if c * self.dt / inertia > limit:
                report.append(f"joint {name!r}: damping {c:g} N m s/rad with inertia "
                              f"{inertia:.3g} kg m^2 gives c dt / I = {c * self.dt / inertia:.2f}; "
                              f"raise the physics rate above {c / inertia / limit:.0f} Hz")
            if name not in self._core:
                continue
            joint, out = self._core[name], self._core[name].output()
            mode = int(joint.mode())
            stiffness = out.stiffness
            if mode in _REFERENCE_MODES:
                stiffness = max(stiffness, joint.actuator().stiffness(
                    q[k], out.reference_1, out.reference_2))
            elif mode == int(cag.Mode.LinkPid):
                stiffness = self.description.spec(name).params.link_pid.p
            if stiffness > 0.0 and math.sqrt(stiffness / inertia) * self.dt > limit:
                omega = math.sqrt(stiffness / inertia)
                report.append(f"joint {name!r}: stiffness {stiffness:.3g} N m/rad with inertia "
                              f"{inertia:.3g} kg m^2 gives omega dt = {omega * self.dt:.2f}; "
                              f"raise the physics rate above {omega / limit:.0f} Hz")
        return report

    def close(self) -> None:
        if getattr(self, "_cid", None) is not None and self._p.isConnected(self._cid):
            self._p.disconnect(self._cid)
        self._cid = None

    def __enter__(self) -> "EmbeddedSimulation":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def physics_urdf(text: str) -> str:
    """The URDF for PyBullet: without <gazebo> blocks and joint <dynamics> (applied here)."""
    root = ET.fromstring(text)
    for element in root.findall("gazebo"):
        root.remove(element)
    for joint in root.findall("joint"):
        for dynamics in joint.findall("dynamics"):
            joint.remove(dynamics)
    return ET.tostring(root, encoding="unicode")
