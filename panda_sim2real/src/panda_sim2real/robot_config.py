"""Schema of a robot configuration: the simulator and the reality stand-in share it.

A configuration names the physics engine, the rates, the URDF and inertial overrides, the joint
controller, each real-robot effect of the identifier's model family (friction, elasticity, torque
sensor, encoders, latency) and the effects beyond it (``unmodelled``, unmodelled_config.py).
An effect set to ``null`` is absent. Files are read with ``yaml.safe_load``; every error names
the file and the entry.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
from panda_sim2real.config_reader import ConfigReader
from panda_sim2real.errors import ConfigError
from panda_sim2real.limits import CONFIG_DIR
from panda_sim2real.unmodelled_config import UnmodelledEffects, read_unmodelled
from sim2real_checks import read_yaml

SIM_CONFIG_FILE = os.path.join(CONFIG_DIR, "sim", "panda_sim.yaml")
REALITY_CONFIG_FILE = os.path.join(CONFIG_DIR, "reality", "default.yaml")
ENGINES = ("pybullet", "mujoco")


@dataclass(frozen=True)
class Inertial:
    """Mass [kg], centre of mass in the link frame [m], inertia about the com
    (ixx, iyy, izz, ixy, ixz, iyz) [kg m^2]."""

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[float, float, float, float, float, float]


@dataclass(frozen=True)
class PIDGains:
    p: np.ndarray
    i: np.ndarray
    d: np.ndarray
    i_clamp: np.ndarray


@dataclass(frozen=True)
class ImpedanceGains:
    stiffness: np.ndarray
    damping: np.ndarray
    gravity_compensation: bool


@dataclass(frozen=True)
class FrictionParams:
    """Sigmoid joint friction of Gaz et al. (RA-L 2019), one value per joint."""

    phi1: np.ndarray
    phi2: np.ndarray
    phi3: np.ndarray


@dataclass(frozen=True)
class ElasticityParams:
    stiffness: np.ndarray
    damping: np.ndarray
    rotor_inertia: np.ndarray


@dataclass(frozen=True)
class TorqueSensorParams:
    offset: np.ndarray
    noise_std: np.ndarray


@dataclass(frozen=True)
class EncoderParams:
    position_noise_std: float
    velocity_noise_std: float


@dataclass(frozen=True)
class RobotConfig:
    """One robot: engine, rates, model, controller and effects (see module docstring)."""

    label: str
    engine: str
    physics_rate: float
    publish_rate: float
    urdf: Optional[str]
    inertials: dict[str, Inertial]
    controller: PIDGains | ImpedanceGains
    friction: Optional[FrictionParams] = None
    elasticity: Optional[ElasticityParams] = None
    torque_sensor: Optional[TorqueSensorParams] = None
    encoders: Optional[EncoderParams] = None
    latency: float = 0.0
    seed: int = 0
    unmodelled: Optional[UnmodelledEffects] = None
    source: str = field(default="<memory>", compare=False)

    @property
    def dt(self) -> float:
        return 1.0 / self.physics_rate

    @property
    def steps_per_publish(self) -> int:
        return int(round(self.physics_rate / self.publish_rate))

    @classmethod
    def from_yaml(cls, path: str) -> "RobotConfig":
        return cls.from_dict(read_yaml(path, "robot config", ConfigError), source=path)

    @classmethod
    def from_dict(cls, raw: Any, source: str = "<memory>") -> "RobotConfig":
        reader = _Reader(raw, source)
        return reader.config()

    def with_overrides(self, publish_rate: Optional[float] = None, seed: Optional[int] = None,
                       urdf: Optional[str] = None) -> "RobotConfig":
        """A copy with run-time overrides (node parameters, tool options), checked like a file's."""
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        if publish_rate is not None:
            check_rates(self.physics_rate, float(publish_rate), self.source)
            check_jitter(self.unmodelled, float(publish_rate), self.source)
            values["publish_rate"] = float(publish_rate)
        if seed is not None:
            values["seed"] = int(seed)
        if urdf:
            values["urdf"] = urdf
        return RobotConfig(**values)


def check_rates(physics_rate: float, publish_rate: float, source: str) -> None:
    """The publish rate must be positive and divide the physics rate."""
    ratio = physics_rate / publish_rate if publish_rate > 0 else 0.0
    if publish_rate <= 0 or publish_rate > physics_rate or abs(ratio - round(ratio)) > 1e-9:
        raise ConfigError(f"robot config {source}: publish rate {publish_rate} Hz must divide "
                          f"the physics rate {physics_rate} Hz")


def check_jitter(unmodelled: Optional[UnmodelledEffects], publish_rate: float, source: str) -> None:
    """Stamps jittered by less than half the publish period stay in order."""
    if unmodelled is not None and unmodelled.stamp_jitter >= 0.5 / publish_rate:
        raise ConfigError(f"robot config {source}: unmodelled.stamp_jitter "
                          f"{unmodelled.stamp_jitter} s must be below half the publish period "
                          f"({0.5 / publish_rate} s at {publish_rate} Hz)")


class _Reader(ConfigReader):
    """Validates the raw YAML tree of a robot config, naming the offending entry on error."""

    def config(self) -> RobotConfig:
        raw = self.raw
        engine = str(self.get(raw, "engine"))
        if engine not in ENGINES:
            raise self.fail("engine", f"must be one of {ENGINES}, got {engine!r}")
        physics_rate = self.number(raw, "physics_rate", minimum=1.0)
        publish_rate = self.number(raw, "publish_rate", minimum=1.0)
        check_rates(physics_rate, publish_rate, self.source)
        unmodelled = read_unmodelled(self)
        check_jitter(unmodelled, publish_rate, self.source)
        urdf = raw.get("urdf")
        if urdf is not None and not isinstance(urdf, str):
            raise self.fail("urdf", "must be a path or null")
        return RobotConfig(
            label=str(raw.get("label", "simulation")),
            engine=engine,
            physics_rate=physics_rate,
            publish_rate=publish_rate,
            urdf=urdf,
            inertials=self.inertials(),
            controller=self.controller(),
            friction=self.friction(),
            elasticity=self.elasticity(),
            torque_sensor=self.torque_sensor(),
            encoders=self.encoders(),
            latency=self.number(raw, "latency") if "latency" in raw else 0.0,
            seed=int(raw.get("seed", 0)),
            unmodelled=unmodelled,
            source=self.source,
        )

    def inertials(self) -> dict[str, Inertial]:
        tree = self.section("inertials") or {}
        out = {}
        for link, spec in tree.items():
            prefix = f"inertials.{link}."
            if not isinstance(spec, dict):
                raise self.fail(f"inertials.{link}", "must be a mapping with mass, com, inertia")
            mass = self.number(spec, "mass", prefix)
            if mass <= 0:
                raise self.fail(prefix + "mass", "must be positive")
            com = self.vector(spec, "com", prefix, size=3)
            inertia = self.vector(spec, "inertia", prefix, size=6)
            out[str(link)] = Inertial(mass, tuple(com), tuple(inertia))
        return out

    def controller(self) -> PIDGains | ImpedanceGains:
        tree = self.section("controller")
        if tree is None:
            raise self.fail("controller", "is missing")
        kind = tree.get("type")
        p = "controller."
        if kind == "pid":
            return PIDGains(self.vector(tree, "p", p, True), self.vector(tree, "i", p, True),
                            self.vector(tree, "d", p, True), self.vector(tree, "i_clamp", p, True))
        if kind == "joint_impedance":
            return ImpedanceGains(self.vector(tree, "stiffness", p, True),
                                  self.vector(tree, "damping", p, True),
                                  bool(tree.get("gravity_compensation", True)))
        raise self.fail("controller.type", f"must be 'pid' or 'joint_impedance', got {kind!r}")

    def friction(self) -> Optional[FrictionParams]:
        tree = self.section("friction")
        if tree is None:
            return None
        p = "friction."
        return FrictionParams(self.vector(tree, "phi1", p), self.vector(tree, "phi2", p, True),
                              self.vector(tree, "phi3", p))

    def elasticity(self) -> Optional[ElasticityParams]:
        tree = self.section("elasticity")
        if tree is None:
            return None
        p = "elasticity."
        params = ElasticityParams(self.vector(tree, "stiffness", p, True),
                                  self.vector(tree, "damping", p, True),
                                  self.vector(tree, "rotor_inertia", p, True))
        if np.any(params.stiffness <= 0) or np.any(params.rotor_inertia <= 0):
            raise self.fail("elasticity", "stiffness and rotor_inertia must be positive")
        return params

    def torque_sensor(self) -> Optional[TorqueSensorParams]:
        tree = self.section("torque_sensor")
        if tree is None:
            return None
        p = "torque_sensor."
        return TorqueSensorParams(self.vector(tree, "offset", p), self.vector(tree, "noise_std", p, True))

    def encoders(self) -> Optional[EncoderParams]:
        tree = self.section("encoders")
        if tree is None:
            return None
        p = "encoders."
        return EncoderParams(self.number(tree, "position_noise_std", p),
                             self.number(tree, "velocity_noise_std", p))
