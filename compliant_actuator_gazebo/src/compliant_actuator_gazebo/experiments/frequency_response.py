"""Frequency response of the 1-DoF structures (paper 003 §4.2.1, Fig. 11) against the analytic
transfer function of each actuator's linearised model, in the embedded simulation.

Configuration: urdf/one_dof.urdf.xacro (0.2 kg at 0.04 m, hanging, joint damping c = 0.065
N m s/rad, no static friction) on one actuator in operation mode 3 (compliance model: the
equilibrium position and the stiffness preset set the motor positions directly, no motor
dynamics), with the soft and stiff presets of §4.1. Input u: the equilibrium position, a tapered
logarithmic chirp about 0; output y: the link position q. Linearised at q = u = 0 (no spring
torque there for these parameters):

    G(s) = Y(s) / U(s) = sigma / (I s^2 + c s + sigma + m g l)

sigma: the spring's stiffness at zero deflection with the preset (closed forms below, from the
reference sheet), I: the link's inertia about the axis, m g l: the gravity stiffness of the
hanging link. The first (only) resonance is the natural frequency w_n = sqrt((sigma + m g l) / I),
where the phase of G crosses -90 deg whether or not |G| peaks.

Estimate: the empirical transfer function Y(f) / U(f) of the whole record (the H1 estimate with
one segment), exact for a linear system when the record starts at rest and ends after the
response has decayed, as here.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Optional

import numpy as np

from compliant_actuator_gazebo.description import RobotDescription, load_description
from compliant_actuator_gazebo.engines import make_simulation
from compliant_actuator_gazebo.resources import package_file
from compliant_actuator_gazebo.experiments.step_response import ACTUATORS, BEHAVIOURS, FIG8_PRESETS, Preset
from compliant_actuator_gazebo.errors import CompliantError

__all__ = ["ACTUATORS", "BEHAVIOURS", "LinearPlant", "ChirpResult", "spring_stiffness", "link_plant",
           "log_chirp", "empirical_transfer_function", "phase_crossing", "run_chirp"]

GRAVITY = 9.81
MAG_TOLERANCE_DB = 1.0          # issue 20's target below the first resonance
PHASE_TOLERANCE_DEG = 5.0


@dataclass(frozen=True)
class LinearPlant:
    """G(s) = sigma / (I s^2 + c s + sigma + m g l): equilibrium position -> link position."""

    inertia: float              # I [kg m^2]
    damping: float              # c [N m s/rad]
    sigma: float                # spring stiffness at the operating point [N m/rad]
    gravity_stiffness: float    # m g l [N m/rad]

    @property
    def omega_n(self) -> float:
        return math.sqrt((self.sigma + self.gravity_stiffness) / self.inertia)

    @property
    def natural_frequency(self) -> float:
        """The first resonance f_n [Hz] (phase -90 deg)."""
        return self.omega_n / (2.0 * math.pi)

    @property
    def damping_ratio(self) -> float:
        return self.damping / (2.0 * math.sqrt((self.sigma + self.gravity_stiffness) * self.inertia))

    @property
    def peak_frequency(self) -> Optional[float]:
        """Frequency of the magnitude peak [Hz], None when |G| does not peak (zeta >= 1/sqrt 2)."""
        z = self.damping_ratio
        return self.natural_frequency * math.sqrt(1.0 - 2.0 * z * z) if z < math.sqrt(0.5) else None

    @property
    def fastest_rate(self) -> float:
        """The largest rate of the dynamics [rad/s]: w_n or c / I (an overdamped fast pole)."""
        return max(self.omega_n, self.damping / self.inertia)

    @property
    def slowest_decay(self) -> float:
        """The smallest |Re(pole)| [1/s]: how slowly a transient dies."""
        a, b, k = self.inertia, self.damping, self.sigma + self.gravity_stiffness
        disc = b * b - 4.0 * a * k
        return (b - math.sqrt(disc)) / (2.0 * a) if disc > 0.0 else b / (2.0 * a)

    def response(self, frequency) -> np.ndarray:
        """G(j 2 pi f) at ``frequency`` [Hz] (array)."""
        s = 2j * np.pi * np.asarray(frequency, dtype=float)
        return self.sigma / (self.inertia * s * s + self.damping * s + self.sigma + self.gravity_stiffness)


def spring_stiffness(actuator_type: str, params, preset: float) -> float:
    """sigma at zero deflection (q = equilibrium) for ``preset``, closed forms of the reference
    sheet: SEA k; qbMove sum a_i k_i cosh(a_i p); BAVS k ke (b e^(ke p) + a e^(-ke p)) for each
    of the two springs (deflections p and -p); AwAS-II 2 Ks ((L / r_t) p / (L - p))^2."""
    if actuator_type == "sea":
        return params.k
    if actuator_type == "qbmove":
        return params.a1 * params.k1 * math.cosh(params.a1 * preset) + \
            params.a2 * params.k2 * math.cosh(params.a2 * preset)
    if actuator_type == "bavs":
        return 2.0 * params.k * params.ke * (params.b * math.exp(params.ke * preset)
                                             + params.a * math.exp(-params.ke * preset))
    if actuator_type == "awas":
        ratio = params.lever_length / params.r_t * preset / (params.lever_length - preset)
        return 2.0 * params.ks * ratio * ratio
    raise CompliantError(f"no closed-form stiffness for actuator type {actuator_type!r}")


def link_plant(description: RobotDescription, joint: str, sigma: float) -> LinearPlant:
    """The linearised link of ``joint`` at q = 0 from the URDF: I = I_yy + m r^2 about the axis
    (inertial without rotation), c = the joint damping, m g l = -d(gravity torque)/dq at q = 0
    (joint frame aligned with the world at q = 0, gravity along -z; true of one_dof.urdf.xacro)."""
    root = ET.fromstring(description.urdf)
    element = next(j for j in root.findall("joint") if j.get("name") == joint)
    axis = np.array([float(v) for v in (element.find("axis").get("xyz") or "1 0 0").split()])
    axis /= np.linalg.norm(axis)
    child = element.find("child").get("link")
    inertial = next(k for k in root.findall("link") if k.get("name") == child).find("inertial")
    mass = float(inertial.find("mass").get("value"))
    origin = inertial.find("origin")
    r = np.array([float(v) for v in (origin.get("xyz") if origin is not None else "0 0 0").split()])
    t = inertial.find("inertia")
    names = ("ixx", "ixy", "ixz", "ixy", "iyy", "iyz", "ixz", "iyz", "izz")
    tensor = np.array([float(t.get(n, 0.0)) for n in names]).reshape(3, 3)
    inertia = float(axis @ tensor @ axis + mass * np.dot(np.cross(axis, r), np.cross(axis, r)))

    def gravity_torque(q: float) -> float:      # Rodrigues: r rotated by q about the axis
        rq = r * math.cos(q) + np.cross(axis, r) * math.sin(q) + axis * np.dot(axis, r) * (1 - math.cos(q))
        return float(axis @ np.cross(rq, [0.0, 0.0, -mass * GRAVITY]))

    eps = 1e-6
    gravity_stiffness = -(gravity_torque(eps) - gravity_torque(-eps)) / (2 * eps)
    return LinearPlant(inertia, description.urdf_joint(joint).damping, sigma, gravity_stiffness)


def log_chirp(time: np.ndarray, f0: float, f1: float, duration: float, amplitude: float,
              taper: float = 0.1) -> np.ndarray:
    """A logarithmic sweep f0 -> f1 over ``duration`` s, sin(2 pi f0 T (k^(t/T) - 1) / ln k),
    k = f1 / f0, with cosine tapers over the first and last ``taper`` of it and 0 after it."""
    t = np.asarray(time, dtype=float)
    k = f1 / f0
    x = amplitude * np.sin(2.0 * np.pi * f0 * duration * (np.power(k, t / duration) - 1.0) / math.log(k))
    w = np.ones_like(t)
    edge = taper * duration
    if edge > 0.0:
        rise = t < edge
        w[rise] = 0.5 * (1.0 - np.cos(np.pi * t[rise] / edge))
        fall = t > duration - edge
        w[fall] = 0.5 * (1.0 - np.cos(np.pi * np.clip(duration - t[fall], 0.0, None) / edge))
    w[t >= duration] = 0.0
    return x * w


def empirical_transfer_function(u: np.ndarray, y: np.ndarray, dt: float, held: bool = False):
    """(f [Hz], H = Y / U) at the DFT frequencies of the records (deviations from the operating
    point, sampled every ``dt``); the H1 estimate with one segment. ``held``: u[k] was applied
    over [k dt, (k + 1) dt) and y[k] read at k dt (a zero-order hold, e.g. the Gazebo engine's
    lock-step): the hold's transfer function sinc(f dt) exp(-j pi f dt) is divided out."""
    u = np.asarray(u, dtype=float)
    y = np.asarray(y, dtype=float)
    if u.shape != y.shape or u.ndim != 1 or len(u) < 4:
        raise CompliantError(f"u and y must be 1-D records of the same length >= 4, got {u.shape}, {y.shape}")
    U, Y = np.fft.rfft(u), np.fft.rfft(y)
    f = np.fft.rfftfreq(len(u), dt)
    if held:
        U = U * np.sinc(f * dt) * np.exp(-1j * np.pi * f * dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        return f, Y / U


def phase_crossing(frequency: np.ndarray, response: np.ndarray, phase_deg: float = -90.0) -> Optional[float]:
    """The first frequency where the unwrapped phase of ``response`` crosses ``phase_deg``
    (linear interpolation in log f), None if it does not."""
    phase = np.degrees(np.unwrap(np.angle(response)))
    below = np.nonzero(phase <= phase_deg)[0]
    if len(below) == 0 or below[0] == 0:
        return None
    i = below[0]
    lf = np.log(frequency[i - 1:i + 1])
    x = (phase_deg - phase[i - 1]) / (phase[i] - phase[i - 1])
    return float(np.exp(lf[0] + x * (lf[1] - lf[0])))


@dataclass
class ChirpResult:
    actuator: str
    behaviour: str
    preset: Preset
    plant: LinearPlant
    physics_rate: float
    amplitude: float
    f0: float
    f1: float
    frequency: np.ndarray           # Hz, the DFT bins within [f0, f1]
    simulated: np.ndarray           # complex H(f), simulation
    analytic: np.ndarray            # complex G(j 2 pi f)
    natural_frequency_sim: Optional[float]
    peak_frequency_sim: Optional[float]
    max_deflection: float           # largest |q - u| seen [rad]

    @property
    def below_resonance(self) -> np.ndarray:
        return self.frequency <= self.plant.natural_frequency

    def errors(self, mask: Optional[np.ndarray] = None) -> tuple[float, float]:
        """(max |magnitude error| [dB], max |phase error| [deg]) over ``mask`` (default: the bins
        below the analytic first resonance)."""
        m = self.below_resonance if mask is None else mask
        ratio = self.simulated[m] / self.analytic[m]
        return float(np.max(np.abs(20.0 * np.log10(np.abs(ratio))))), \
            float(np.max(np.abs(np.degrees(np.angle(ratio)))))

    @property
    def passed(self) -> bool:
        db, deg = self.errors()
        return db <= MAG_TOLERANCE_DB and deg <= PHASE_TOLERANCE_DEG

    def as_dict(self, points: int = 100) -> dict:
        """The figures, with the Bode data thinned to about ``points`` log-spaced bins."""
        db, deg = self.errors()
        db_all, deg_all = self.errors(np.ones_like(self.below_resonance))
        p = self.plant
        keep = _thin(len(self.frequency), points)
        return {"actuator": self.actuator, "behaviour": self.behaviour, "preset": self.preset.preset,
                "preset_label": self.preset.label, "physics_rate_hz": self.physics_rate,
                "amplitude_rad": self.amplitude, "f0_hz": self.f0, "f1_hz": self.f1,
                "max_deflection_rad": self.max_deflection,
                "plant": {"inertia": p.inertia, "damping": p.damping, "sigma": p.sigma,
                          "gravity_stiffness": p.gravity_stiffness, "damping_ratio": p.damping_ratio},
                "natural_frequency_analytic_hz": p.natural_frequency,
                "natural_frequency_sim_hz": self.natural_frequency_sim,
                "peak_frequency_analytic_hz": p.peak_frequency, "peak_frequency_sim_hz": self.peak_frequency_sim,
                "max_mag_error_db_below_resonance": db, "max_phase_error_deg_below_resonance": deg,
                "max_mag_error_db_whole_band": db_all, "max_phase_error_deg_whole_band": deg_all,
                "passed": self.passed,
                "bode": {name: values[keep] for name, values in self.bode().items()}}

    def bode(self) -> dict[str, np.ndarray]:
        """Frequency [Hz], magnitude [dB] and unwrapped phase [deg] of both responses."""
        return {"frequency_hz": self.frequency, "sim_mag_db": 20 * np.log10(np.abs(self.simulated)),
                "sim_phase_deg": np.degrees(np.unwrap(np.angle(self.simulated))),
                "analytic_mag_db": 20 * np.log10(np.abs(self.analytic)),
                "analytic_phase_deg": np.degrees(np.unwrap(np.angle(self.analytic)))}


def _thin(n: int, points: int) -> np.ndarray:
    """About ``points`` indices of n bins, spread evenly in log (all of them when fewer)."""
    if n <= points:
        return np.arange(n)
    return np.unique(np.round(np.geomspace(1, n, points)).astype(int) - 1)


def run_chirp(actuator: str, behaviour: str, amplitude: Optional[float] = None, span: tuple[float, float] = (0.1, 3.0),
              cycles: float = 20.0, omega_dt: float = 0.02, deflection: float = 0.01,
              xacro_path: Optional[str] = None, engine: str = "embedded",
              samples_per_period: float = 20.0) -> ChirpResult:
    """Drive the 1-DoF structure's equilibrium with a log chirp from span[0] f_n to span[1] f_n
    (f_n: the analytic first resonance) lasting ``cycles`` periods of the lowest frequency, then
    0 until the transient has decayed (10 / slowest decay rate), and estimate Y / U.

    ``amplitude`` [rad] defaults to the small-signal value whose largest analytic deflection
    |1 - G| A is ``deflection`` (at most the paper's 0.15 rad). The physics rate is chosen so
    that (fastest rate of the dynamics) x dt = ``omega_dt``. In Gazebo (``engine``) the input is
    sent and the link read every ``samples_per_period``-th of the highest chirp period (lock-step
    over the plugin's topics; the input held in between, whose hold the estimate divides out);
    the embedded simulation sets it at every physics step.
    """
    if actuator not in FIG8_PRESETS or behaviour not in BEHAVIOURS:
        raise CompliantError(f"unknown actuator/behaviour {actuator}/{behaviour}")
    preset = FIG8_PRESETS[actuator][behaviour]
    args = {"actuator": actuator, "mode": 3, **dict(preset.description_args)}
    description = load_description(xacro_path or package_file("urdf", "one_dof.urdf.xacro"), args)
    spec = description.compliant[0]
    plant = link_plant(description, spec.joint,
                       spring_stiffness(actuator, spec.actuator.params, preset.preset))
    fn = plant.natural_frequency
    f0, f1 = span[0] * fn, span[1] * fn
    band = np.geomspace(f0, f1, 2000)
    if amplitude is None:
        amplitude = min(0.15, deflection / float(np.max(np.abs(1.0 - plant.response(band)))))
    physics_rate = math.ceil(plant.fastest_rate / omega_dt / 100.0) * 100.0
    dt = 1.0 / physics_rate
    duration = cycles / f0
    total = duration + 10.0 / plant.slowest_decay
    every = 1 if engine == "embedded" else max(1, int(physics_rate / (samples_per_period * f1)))
    hold = every * dt
    n = int(math.ceil(total / hold))
    t = np.arange(n) * hold
    u = log_chirp(t, f0, f1, duration, amplitude)
    q = np.empty(n)
    with make_simulation(engine, description, physics_rate, sample_rate=physics_rate / every) as sim:
        joint = spec.joint
        sim.set_input(joint, "stiffness_preset", preset.preset)
        sim.set_input(joint, "equilibrium_position", 0.0)
        q0 = sim.state(joint).q
        step, set_input, state = sim.step, sim.set_input, sim.state
        for i in range(n):
            q[i] = state(joint).q
            set_input(joint, "equilibrium_position", u[i])
            step(every)
        unstable = sim.stability_report()
    if unstable:
        raise RuntimeError(f"{actuator}/{behaviour}: {'; '.join(unstable)}")
    y = q - q0
    f, h = empirical_transfer_function(u, y, hold, held=every > 1)
    inside = (f >= f0) & (f <= f1)
    f, h = f[inside], h[inside]
    natural = phase_crossing(f, h)
    peak = float(f[np.argmax(np.abs(h))]) if plant.peak_frequency is not None else None
    return ChirpResult(actuator, behaviour, preset, plant, physics_rate, float(amplitude), f0, f1,
                       f, h, plant.response(f), natural, peak,
                       float(np.max(np.abs(y - u))))
