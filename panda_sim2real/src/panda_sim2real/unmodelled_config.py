"""Schema of the ``unmodelled`` block of a robot config: the effects a real harmonic-drive,
torque-sensing arm has and the identifier's model family (rigid bodies, Gaz et al.'s sigmoid
friction, constant torque offsets, white noise) lacks (issue 38).

Every sub-block is optional (absent or null: off); with the whole block absent the robot is the
stand-in of before, bit for bit. The equations are in drive_effects.py and sensor_effects.py;
the sources of the values are in config/reality/default.yaml.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from panda_sim2real.config_reader import DOF, ConfigReader


@dataclass(frozen=True)
class StribeckParams:
    """Low-speed friction beyond the sigmoid: the Stribeck excess (stiction [N m], Stribeck
    velocity [rad/s]) and presliding hysteresis (a Dahl bristle saturating at
    ``presliding_torque`` [N m] after ``presliding_displacement`` [rad])."""

    stiction: np.ndarray
    stribeck_velocity: np.ndarray
    presliding_torque: np.ndarray
    presliding_displacement: np.ndarray


@dataclass(frozen=True)
class LoadFrictionParams:
    """Friction that grows with the transmitted torque: ``coefficient`` N m per N m of |tau_J|,
    its sign smoothed over ``velocity_scale`` [rad/s]."""

    coefficient: np.ndarray
    velocity_scale: float


@dataclass(frozen=True)
class ThermalDriftParams:
    """The joints warm up over a session by ``temperature_rise`` [K] with ``time_constant`` [s];
    every friction term changes by ``friction_per_kelvin`` [1/K] of itself per kelvin."""

    temperature_rise: np.ndarray
    time_constant: float
    friction_per_kelvin: float


@dataclass(frozen=True)
class HarmonicDriveParams:
    """Per joint: the gear ratio N, the torque ripple [N m] at twice the wave generator's turn
    (2 N cycles per output turn), the relative friction modulation once per wave-generator turn
    (N cycles per output turn), and their phase [rad]."""

    gear_ratio: np.ndarray
    ripple: np.ndarray
    friction_modulation: np.ndarray
    phase: np.ndarray


@dataclass(frozen=True)
class CableParams:
    """The cable harness as a spring per joint: ``stiffness`` [N m/rad] about ``neutral`` [rad]."""

    stiffness: np.ndarray
    neutral: np.ndarray


@dataclass(frozen=True)
class SensorErrorParams:
    """The torque sensor's relative gain error, its quadratic nonlinearity (relative error at
    ``full_scale`` [N m]) and its hysteresis (loop width [N m])."""

    gain_error: np.ndarray
    nonlinearity: np.ndarray
    full_scale: np.ndarray
    hysteresis: np.ndarray


@dataclass(frozen=True)
class GaussMarkovParams:
    """A stationary first-order Gauss-Markov (Ornstein-Uhlenbeck) process per joint: standard
    deviation ``std`` [N m], correlation time ``time_constant`` [s]."""

    std: np.ndarray
    time_constant: float


@dataclass(frozen=True)
class UnmodelledEffects:
    """The ``unmodelled`` block. ``scale`` (per joint, from the calibration command) has already
    multiplied every amplitude below: stiction, presliding torque, load coefficient, ripple,
    cable stiffness, gain error, nonlinearity, hysteresis and both processes' std."""

    scale: np.ndarray
    stribeck: Optional[StribeckParams] = None
    load_friction: Optional[LoadFrictionParams] = None
    thermal_drift: Optional[ThermalDriftParams] = None
    harmonic_drive: Optional[HarmonicDriveParams] = None
    cables: Optional[CableParams] = None
    sensor_errors: Optional[SensorErrorParams] = None
    offset_drift: Optional[GaussMarkovParams] = None
    correlated_noise: Optional[GaussMarkovParams] = None
    encoder_resolution: float = 0.0     # rad, quantisation step of the positions (0: none)
    stamp_jitter: float = 0.0           # s, stamps off by up to +- this (uniform; 0: none)

    @property
    def acts_on_links(self) -> bool:
        return any(b is not None for b in (self.stribeck, self.load_friction, self.thermal_drift,
                                           self.harmonic_drive, self.cables))

    @property
    def acts_on_sensors(self) -> bool:
        return (any(b is not None for b in (self.sensor_errors, self.offset_drift,
                                            self.correlated_noise))
                or self.encoder_resolution > 0.0 or self.stamp_jitter > 0.0)


def read_unmodelled(reader: ConfigReader) -> Optional[UnmodelledEffects]:
    """The ``unmodelled`` block of ``reader``'s file, amplitudes scaled; None if absent."""
    tree = reader.section("unmodelled")
    if tree is None:
        return None
    p = "unmodelled."
    scale = reader.vector(tree, "scale", p, positive=True) if "scale" in tree else np.ones(DOF)

    def block(key: str) -> tuple[Optional[dict], str]:
        return reader.section(key, tree, p), f"{p}{key}."

    def amplitude(sub: dict, key: str, prefix: str, positive: bool = True) -> np.ndarray:
        return scale * reader.vector(sub, key, prefix, positive=positive)

    def positive(sub: dict, key: str, prefix: str) -> np.ndarray:
        values = reader.vector(sub, key, prefix, positive=True)
        if np.any(values <= 0):
            raise reader.fail(prefix + key, "must be positive")
        return values

    effects: dict = {}
    sub, q = block("stribeck")
    if sub is not None:
        effects["stribeck"] = StribeckParams(
            amplitude(sub, "stiction", q), positive(sub, "stribeck_velocity", q),
            amplitude(sub, "presliding_torque", q), positive(sub, "presliding_displacement", q))
    sub, q = block("load_friction")
    if sub is not None:
        effects["load_friction"] = LoadFrictionParams(
            amplitude(sub, "coefficient", q), reader.number(sub, "velocity_scale", q, above=True))
    sub, q = block("thermal_drift")
    if sub is not None:
        effects["thermal_drift"] = ThermalDriftParams(
            reader.vector(sub, "temperature_rise", q, positive=True),
            reader.number(sub, "time_constant", q, above=True),
            reader.number(sub, "friction_per_kelvin", q, minimum=-0.05))
    sub, q = block("harmonic_drive")
    if sub is not None:
        effects["harmonic_drive"] = HarmonicDriveParams(
            positive(sub, "gear_ratio", q), amplitude(sub, "ripple", q),
            reader.vector(sub, "friction_modulation", q, positive=True), reader.vector(sub, "phase", q))
        if np.any(effects["harmonic_drive"].friction_modulation >= 1.0):
            raise reader.fail(q + "friction_modulation", "must be below 1 (friction keeps its sign)")
    sub, q = block("cables")
    if sub is not None:
        effects["cables"] = CableParams(amplitude(sub, "stiffness", q), reader.vector(sub, "neutral", q))
    sub, q = block("sensor_errors")
    if sub is not None:
        effects["sensor_errors"] = SensorErrorParams(
            amplitude(sub, "gain_error", q, positive=False), amplitude(sub, "nonlinearity", q, positive=False),
            positive(sub, "full_scale", q), amplitude(sub, "hysteresis", q))
    for key in ("offset_drift", "correlated_noise"):
        sub, q = block(key)
        if sub is not None:
            effects[key] = GaussMarkovParams(amplitude(sub, "std", q),
                                             reader.number(sub, "time_constant", q, above=True))
    for key in ("encoder_resolution", "stamp_jitter"):
        if tree.get(key) is not None:
            effects[key] = reader.number(tree, key, p)
    return UnmodelledEffects(scale=scale, **effects)
