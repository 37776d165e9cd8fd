"""A simulated Panda: physics + joint controller + the effects a real robot has.

One class serves the nominal simulator and the reality stand-in; a :class:`RobotConfig` says
which effects are present. Each physics step (:meth:`SimulatedRobot.step`):

1. the reference comes from the trajectory executor at ``t - latency`` (command latency), or
   from an external command (:class:`JointReference`, as libfranka's joint motion generators
   feed the robot's controller; or :class:`JointTorque`, as libfranka's torque control);
2. the controller computes the motor torque tau_m on the motor side (a torque command is
   tau_m = tau_d + g(q): the robot compensates gravity with its own model), saturated at the
   effort limits (with rigid joints motor and link coincide);
3. the joint torque tau_J that the torque sensor sees is tau_m (rigid) or the spring torque
   K (theta - q) + D (theta_dot - q_dot) (elastic joints, Spong's model, with rotor inertia B:
   B theta_ddot = tau_m - tau_J, integrated semi-implicitly);
4. the link receives tau_J - tau_f(q_dot), so that tau_J = M qdd + C qd + g + tau_f, the model
   Gaz et al. identified from the Panda's measured torques; with the config's ``unmodelled``
   effects, tau_J less every link-side loss of drive_effects.py (Stribeck and presliding friction,
   load-dependent and position-dependent friction, thermal drift, ripple, cables);
5. the engine advances by dt.

A measurement (:meth:`measure`) adds encoder noise and the torque sensor's offset and noise, and
with ``unmodelled`` effects the sensor errors of sensor_effects.py (hysteresis, gain error,
nonlinearity, drifting offset, correlated noise, quantisation, stamp jitter).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from panda_sim2real.controllers import make_controller
from panda_sim2real.drive_effects import DriveEffects
from panda_sim2real.friction import sigmoid_friction
from panda_sim2real.limits import JointLimits
from panda_sim2real.physics import JointSpacePhysics, make_physics
from panda_sim2real.robot_config import RobotConfig
from panda_sim2real.sensor_effects import SensorEffects
from panda_sim2real.trajectory import LIMIT_TOLERANCE, PlannedTrajectory, TrajectoryExecutor
from panda_sim2real.urdf_model import check_joints, load_urdf, prepare_dynamics_urdf


@dataclass(frozen=True)
class JointMeasurement:
    """What the robot publishes: time [s], positions [rad], velocities [rad/s], efforts [N m]."""

    stamp: float
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray

    def is_finite(self) -> bool:
        return bool(np.all(np.isfinite(self.position)) and np.all(np.isfinite(self.velocity))
                    and np.all(np.isfinite(self.effort)))


@dataclass(frozen=True)
class JointReference:
    """An external reference for the robot's own joint controller: positions [rad], velocities
    [rad/s] (libfranka's joint position motion generator with the internal joint impedance)."""

    position: np.ndarray
    velocity: np.ndarray


@dataclass(frozen=True)
class JointTorque:
    """A desired joint torque without gravity [N m] (libfranka's torque control): the robot adds
    its own gravity compensation."""

    torque: np.ndarray


ExternalCommand = Union[JointReference, JointTorque]


class SimulatedRobot:
    """A Panda in a physics engine, configured as the simulator or as the reality stand-in."""

    def __init__(self, config: RobotConfig, limits: JointLimits,
                 physics: Optional[JointSpacePhysics] = None) -> None:
        self.config = config
        self.limits = limits
        if physics is None:
            root = load_urdf(config.urdf)
            check_joints(root, limits.joint_names, config.urdf or "pybullet_data panda.urdf")
            physics = make_physics(config.engine, prepare_dynamics_urdf(root, config.inertials),
                                   limits.joint_names, config.dt)
        self.physics = physics
        self.controller = make_controller(config.controller)
        self.executor = TrajectoryExecutor(limits.home)
        self._rng = np.random.default_rng(config.seed)
        extra = config.unmodelled
        self._drive = (DriveEffects(extra, config.friction, limits.dof)
                       if extra is not None and extra.acts_on_links else None)
        self._sensors = (SensorEffects(extra, config.seed, limits.dof)
                         if extra is not None and extra.acts_on_sensors else None)
        self._no_gravity = np.zeros(limits.dof)
        self.t = 0.0
        self._steps = 0
        self._tau_j = np.zeros(limits.dof)
        self._theta = limits.home.copy()
        self._theta_dot = np.zeros(limits.dof)
        self.reset(limits.home)

    @property
    def dt(self) -> float:
        return self.config.dt

    @property
    def label(self) -> str:
        return self.config.label

    @property
    def publish_due(self) -> bool:
        """True on the physics steps at which the robot publishes its joint state."""
        return self._steps % self.config.steps_per_publish == 0

    @property
    def joint_torque(self) -> np.ndarray:
        """The link-side joint torque tau_J now, as it is (no sensor offset or noise) [N m]."""
        return self._tau_j.copy()

    def reset(self, q: np.ndarray, t: float = 0.0) -> None:
        """Put the robot at rest at ``q`` (statically deflected if elastic), holding ``q``."""
        q = np.asarray(q, dtype=float)
        self.physics.reset(q, np.zeros_like(q))
        self.controller.reset()
        self.executor.hold(q)
        self.t = self._t0 = float(t)
        self._steps = 0
        gravity = self.gravity_torque(q)
        if self._drive is not None:
            self._drive.reset()
            gravity = gravity + self._drive.static_torque(q)    # the arm at rest holds these too
        self._tau_j = gravity.copy()
        el = self.config.elasticity
        self._theta = q + (gravity / el.stiffness if el is not None else 0.0)
        self._theta_dot = np.zeros_like(q)
        if self._sensors is not None:
            self._sensors.reset(gravity, self.t)

    def set_state(self, q: np.ndarray, qd: np.ndarray) -> None:
        """Set the joints to positions ``q`` [rad] and velocities ``qd`` [rad/s] now: the
        simulator's configuration interface (paper 001 §3.2, motor kernels set the simulation
        to f_k(s, a) through it). Only the physics state changes: time, the controller (the
        PID's integral) and the running trajectory go on from there. With elastic joints the
        motors move with the links, so the spring deflection theta - q is kept.

        Raises ValueError (one line) for the wrong number of values, NaN/Inf, positions outside
        the joint limits or velocities beyond the velocity limits (a state no Panda can be in,
        from which an engine may not recover); the state is then unchanged."""
        q = np.asarray(q, dtype=float).reshape(-1)
        qd = np.asarray(qd, dtype=float).reshape(-1)
        dof = self.limits.dof
        if q.size != dof or qd.size != dof:
            raise ValueError(f"set_state needs {dof} positions and {dof} velocities, got "
                             f"{q.size} and {qd.size}")
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            raise ValueError("set_state: NaN/Inf in the positions or velocities")
        outside = ~self.limits.within_position(q)
        if np.any(outside):
            j = int(np.flatnonzero(outside)[0])
            raise ValueError(f"set_state: {self.limits.joint_names[j]} = {q[j]:.4f} rad is outside "
                             f"[{self.limits.position_min[j]:.4f}, "
                             f"{self.limits.position_max[j]:.4f}]")
        too_fast = np.abs(qd) > self.limits.velocity * LIMIT_TOLERANCE
        if np.any(too_fast):
            j = int(np.flatnonzero(too_fast)[0])
            raise ValueError(f"set_state: {self.limits.joint_names[j]} velocity {qd[j]:.4g} rad/s "
                             f"is beyond the limit {self.limits.velocity[j]:.4f} rad/s")
        q_old, qd_old = self.physics.state()
        self.physics.reset(q, qd)
        if self.config.elasticity is not None:
            self._theta = self._theta + (q - q_old)
            self._theta_dot = self._theta_dot + (qd - qd_old)

    def reference(self) -> tuple[np.ndarray, np.ndarray]:
        """The reference position [rad] and velocity [rad/s] the controller follows now (the
        commanded trajectory at ``t - latency``)."""
        return self.executor.reference(self.t - self.config.latency)

    def command(self, trajectory: PlannedTrajectory) -> PlannedTrajectory:
        """Schedule a validated trajectory; returns it with its absolute start time."""
        return self.executor.command(trajectory, self.t)

    def stop(self) -> None:
        """Hold the current reference (after a rejected command)."""
        self.executor.stop(self.t - self.config.latency)

    def step(self, command: Optional[ExternalCommand] = None) -> None:
        """Advance one physics step (see the module docstring for the order of effects). Without
        ``command`` the controller follows the trajectory executor at ``t - latency``; with one,
        the command acts now (an external interface brings its own latency)."""
        cfg = self.config
        q, qd = self.physics.state()
        el = cfg.elasticity
        if isinstance(command, JointTorque):
            tau_m = np.clip(command.torque + self.gravity_torque(q), -self.limits.effort, self.limits.effort)
        else:
            if command is None:
                q_ref, qd_ref = self.executor.reference(self.t - cfg.latency)
            else:
                q_ref, qd_ref = command.position, command.velocity
            gravity = self.gravity_torque(q) if self.controller.needs_gravity else self._no_gravity
            if el is None:
                tau_m = self.controller.compute(q, qd, q_ref, qd_ref, gravity, cfg.dt)
            else:
                tau_m = self.controller.compute(self._theta, self._theta_dot,
                                                q_ref + gravity / el.stiffness, qd_ref, gravity, cfg.dt)
            tau_m = np.clip(tau_m, -self.limits.effort, self.limits.effort)
        if el is None:
            tau_j = tau_m
        else:
            tau_j = el.stiffness * (self._theta - q) + el.damping * (self._theta_dot - qd)
            self._theta_dot = self._theta_dot + (tau_m - tau_j) / el.rotor_inertia * cfg.dt
            self._theta = self._theta + self._theta_dot * cfg.dt
        if self._drive is not None:
            tau_link = tau_j - self._drive.losses(self.t, q, qd, tau_j, cfg.dt)
        elif cfg.friction is not None:
            tau_link = tau_j - sigmoid_friction(cfg.friction, qd)
        else:
            tau_link = tau_j
        self.physics.step(tau_link)
        self._tau_j = tau_j
        if self._sensors is not None:
            self._sensors.track(tau_j)
        self._steps += 1
        self.t = self._steps * cfg.dt + self._t0

    def measure(self) -> JointMeasurement:
        """The joint state as the robot's sensors report it now."""
        q, qd = self.physics.state()
        tau = self._tau_j.copy()
        extra, stamp = self._sensors, self.t
        if extra is not None:
            tau = extra.torque(tau, self.t)
        enc, sensor = self.config.encoders, self.config.torque_sensor
        if enc is not None:
            q = q + self._rng.normal(0.0, enc.position_noise_std, q.shape)
            qd = qd + self._rng.normal(0.0, enc.velocity_noise_std, qd.shape)
        if sensor is not None:
            tau = tau + sensor.offset + self._rng.normal(0.0, 1.0, tau.shape) * sensor.noise_std
        if extra is not None:
            q, stamp = extra.position(q), extra.stamp(self.t)
        return JointMeasurement(stamp, q, qd, tau)

    def run_until(self, t: float) -> None:
        """Step until the robot's time reaches ``t`` (to within half a step)."""
        while self.t < t - 0.5 * self.config.dt:
            self.step()

    def advance(self, until: float) -> list[JointMeasurement]:
        """Step as :meth:`run_until` and return the joint states published on the way (the
        lock-step interface GazeboRobot shares)."""
        out = []
        while self.t < until - 0.5 * self.config.dt:
            self.step()
            if self.publish_due:
                out.append(self.measure())
        return out

    def close(self) -> None:
        self.physics.close()

    def gravity_torque(self, q: np.ndarray) -> np.ndarray:
        """The torque that holds the arm at rest at ``q`` in this robot's model [N m]."""
        zero = np.zeros_like(q)
        return self.physics.inverse_dynamics(q, zero, zero)

