"""The sensors of a real Panda beyond constant offsets and white noise (issue 38).

Torque: the joint torque tau_J passes a play operator of width h (hysteresis: the reading lags a
reversal by up to h / 2), then the gain error g and the quadratic nonlinearity n,

    p_k = clip(p_{k-1}, tau_J - h/2, tau_J + h/2)             (each physics step)
    tau_read = (1 + g) p + n p |p| / full_scale + d(t) + c(t)  (each reading)

with d a slowly drifting offset and c time-correlated noise, both first-order Gauss-Markov
processes x' = -x / T + w, sampled exactly between readings:
x_{k+1} = x_k e^{-dt/T} + std sqrt(1 - e^{-2 dt/T}) xi. The robot adds its constant offset and
white noise after these (robot.py). Positions are quantised to the encoder resolution after the
encoder noise; stamps are off by up to +- the jitter (uniform).

Draws come from their own generator (seeded from the robot's seed), so switching these effects
on or off leaves the robot's other draws unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panda_sim2real.unmodelled_config import GaussMarkovParams, SensorErrorParams, UnmodelledEffects

STREAM = 38   # the generator's key beside the robot's seed


def play(width: np.ndarray, played: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """The play (backlash) operator's output after input ``tau``."""
    return np.clip(played, tau - 0.5 * width, tau + 0.5 * width)


def sensed(p: SensorErrorParams, played: np.ndarray) -> np.ndarray:
    """The reading of the play operator's output with gain error and nonlinearity [N m]."""
    return (1.0 + p.gain_error) * played + p.nonlinearity * played * np.abs(played) / p.full_scale


def gauss_markov_step(p: GaussMarkovParams, x: np.ndarray, dt: float,
                      rng: np.random.Generator) -> np.ndarray:
    """The process ``dt`` seconds after ``x`` (exact discretisation)."""
    decay = np.exp(-dt / p.time_constant)
    return x * decay + p.std * np.sqrt(1.0 - decay * decay) * rng.standard_normal(x.shape)


def quantise(q: np.ndarray, resolution: float) -> np.ndarray:
    return np.round(q / resolution) * resolution


@dataclass
class SensorState:
    """The sensors' memory: the play operator's output, both processes, the last reading's time."""

    played: np.ndarray
    drift: np.ndarray
    noise: np.ndarray
    last: float


class SensorEffects:
    """The reading of one robot's sensors (see the module docstring)."""

    def __init__(self, effects: UnmodelledEffects, seed: int, dof: int) -> None:
        self.effects = effects
        self._rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, STREAM])
        self.state = SensorState(np.zeros(dof), np.zeros(dof), np.zeros(dof), 0.0)

    def reset(self, tau_j: np.ndarray, t: float) -> None:
        """At rest under ``tau_j`` at time ``t``: the processes start from their stationary law."""
        e = self.effects
        drift = (e.offset_drift.std * self._rng.standard_normal(tau_j.shape)
                 if e.offset_drift is not None else np.zeros_like(tau_j))
        noise = (e.correlated_noise.std * self._rng.standard_normal(tau_j.shape)
                 if e.correlated_noise is not None else np.zeros_like(tau_j))
        self.state = SensorState(np.array(tau_j, dtype=float), drift, noise, float(t))

    def track(self, tau_j: np.ndarray) -> None:
        """One physics step of the torque sensor's hysteresis."""
        errors = self.effects.sensor_errors
        if errors is not None:
            self.state.played = play(errors.hysteresis, self.state.played, tau_j)

    def torque(self, tau_j: np.ndarray, t: float) -> np.ndarray:
        """The reading at time ``t`` before the constant offset and white noise [N m]."""
        e, s = self.effects, self.state
        dt = max(t - s.last, 0.0)
        s.last = max(t, s.last)
        tau = sensed(e.sensor_errors, s.played) if e.sensor_errors is not None else tau_j
        if e.offset_drift is not None:
            s.drift = gauss_markov_step(e.offset_drift, s.drift, dt, self._rng)
            tau = tau + s.drift
        if e.correlated_noise is not None:
            s.noise = gauss_markov_step(e.correlated_noise, s.noise, dt, self._rng)
            tau = tau + s.noise
        return tau

    def position(self, q: np.ndarray) -> np.ndarray:
        r = self.effects.encoder_resolution
        return quantise(q, r) if r > 0.0 else q

    def stamp(self, t: float) -> float:
        j = self.effects.stamp_jitter
        return t + float(self._rng.uniform(-j, j)) if j > 0.0 else t
