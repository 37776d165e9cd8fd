"""A small Ackermann delivery vehicle on an open field: our stand-in for Gazebo's ackermann_vehicle
model in paper 001 §4-5 (the simulator the kernel manager treats as a black box, §3.2).

Vehicle: a kinematic bicycle (rear-axle reference point) with the wheelbase and steering limit of a
1/10 Traxxas-class truck; speed and steering follow their commands through first-order lags
(motor/ESC and servo). Terrain: flat field, optionally with a ramp (a trapezoidal hump) between
two waypoints. On a grade the drive train cannot hold the commanded speed: the attainable speed is
scaled by ``1 - grade_speed_loss * |sin(pitch)|`` (motor load going up, drag brake and wheel slip
on the ramp surface going down; a model choice, see ``VehicleParams``), so the ramp slows the
vehicle both ways, and the body pitch follows the terrain slope through the suspension's lag.

Sensors (paper 001 §4: "GPS ... model position information at a rate of 20 Hz and vehicle
orientation was calculated from GPS velocity. Vehicle pitch sensing was also simulated"):
  * GPS at ``gps_rate`` (20 Hz §4, 1 Hz §5): position with small zero-mean noise and the velocity
    from consecutive fixes; between fixes it holds its last fix (value and time stamp);
  * pitch (and roll) of the body at ``attitude_rate`` with small zero-mean noise.

Configuration interface (the parameters phi of §3.2 that the kernel manager uses for motor
kernels): :meth:`VehicleModel.get_state` / :meth:`VehicleModel.set_state`.

Time is an integer count of physics steps, so sensor rates stay exact; everything is seeded.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Optional, Union

import numpy as np

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.state_spec import config_section, named, read_yaml

#: |x|, |y| a set_state may ask for [m]: the missions stay within tens of metres of the origin; a
#: position beyond this is a broken request (e.g. 1e308), not a place the vehicle can be.
WORLD_HALF_SIZE = 1000.0


def _check_positive(owner: str, **values: float) -> None:
    for name, value in values.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise KernelError(f"{owner}.{name} must be a finite number > 0, got {value!r}")


def _check_non_negative(owner: str, **values: float) -> None:
    for name, value in values.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise KernelError(f"{owner}.{name} must be a finite number >= 0, got {value!r}")


def wrap_angle(angle: float) -> float:
    """``angle`` in [-pi, pi)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


@dataclass(frozen=True)
class VehicleParams:
    """Drive train and geometry of a 1/10 Traxxas-class Ackermann truck (Stampede 4x4-like)."""

    wheelbase: float = 0.33            # m
    max_steering: float = 0.50         # rad at the front wheels (turning radius L/tan = 0.6 m)
    max_speed: float = 3.0             # m/s, what the motor can reach on flat ground
    speed_time_constant: float = 0.30  # s, first-order response of speed to its command
    steering_time_constant: float = 0.08  # s, servo
    # Fraction of the attainable speed lost per unit |sin(pitch)|: the motor's torque limit going
    # up, the ESC's drag brake and the slip of the tyres on the ramp surface coming down. 2.0
    # makes a 15 deg ramp cost about half the speed, as an RC truck on a plywood ramp does.
    grade_speed_loss: float = 2.0
    min_speed_fraction: float = 0.15   # the vehicle never stalls completely on a grade
    pitch_time_constant: float = 0.20  # s, the body pitch follows the terrain through the suspension

    def __post_init__(self) -> None:
        _check_positive("vehicle", wheelbase=self.wheelbase, max_speed=self.max_speed,
                        speed_time_constant=self.speed_time_constant,
                        steering_time_constant=self.steering_time_constant,
                        pitch_time_constant=self.pitch_time_constant,
                        min_speed_fraction=self.min_speed_fraction)
        _check_non_negative("vehicle", grade_speed_loss=self.grade_speed_loss)
        if not 0.0 < self.max_steering < math.pi / 2:
            raise KernelError(f"vehicle.max_steering must be in (0, pi/2), got {self.max_steering}")
        if self.min_speed_fraction > 1.0:
            raise KernelError("vehicle.min_speed_fraction must be <= 1")

    @property
    def min_turning_radius(self) -> float:
        return self.wheelbase / math.tan(self.max_steering)

    def grade_factor(self, pitch: float) -> float:
        """Fraction of the commanded speed the drive train holds at body pitch ``pitch``."""
        return max(self.min_speed_fraction, 1.0 - self.grade_speed_loss * abs(math.sin(pitch)))


@dataclass(frozen=True)
class Ramp:
    """A trapezoidal hump across the field: it rises over ``up_length`` along ``direction``
    (unit vector, the way a vehicle from ``start`` climbs it), stays at ``height`` for
    ``top_length`` and falls over ``down_length``; ``width`` across. Paper 001 Fig. 3(d): the
    unexpected ramp between waypoints (5, 15) and (-5, 15)."""

    start: tuple[float, float] = (2.5, 15.0)   # m, foot of the up slope (centre line)
    direction: tuple[float, float] = (-1.0, 0.0)
    up_length: float = 1.8                     # m
    top_length: float = 1.4                    # m
    down_length: float = 1.8                   # m
    height: float = 0.45                       # m (about 14 deg slopes)
    width: float = 8.0                         # m

    def __post_init__(self) -> None:
        _check_positive("ramp", up_length=self.up_length, down_length=self.down_length,
                        height=self.height, width=self.width)
        _check_non_negative("ramp", top_length=self.top_length)
        norm = math.hypot(*self.direction)
        if not math.isfinite(norm) or norm == 0.0:
            raise KernelError(f"ramp.direction must be a non-zero 2-vector, got {self.direction}")
        object.__setattr__(self, "direction", (self.direction[0] / norm, self.direction[1] / norm))
        object.__setattr__(self, "start", (float(self.start[0]), float(self.start[1])))

    @property
    def length(self) -> float:
        return self.up_length + self.top_length + self.down_length

    def height_and_gradient(self, x: float, y: float) -> tuple[float, float, float]:
        """Height h(x, y) and its gradient (dh/dx, dh/dy); 0 off the ramp."""
        ux, uy = self.direction
        dx, dy = x - self.start[0], y - self.start[1]
        along = dx * ux + dy * uy
        across = -dx * uy + dy * ux
        if abs(across) > 0.5 * self.width or along <= 0.0 or along >= self.length:
            return 0.0, 0.0, 0.0
        if along < self.up_length:
            slope = self.height / self.up_length
            return slope * along, slope * ux, slope * uy
        if along <= self.up_length + self.top_length:
            return self.height, 0.0, 0.0
        slope = self.height / self.down_length
        return slope * (self.length - along), -slope * ux, -slope * uy


@dataclass(frozen=True)
class SensorParams:
    """GPS and attitude (pitch) sensing. Rates must divide the physics rate."""

    gps_rate: float = 20.0         # Hz (§4: 20 Hz; §5: 1 Hz)
    gps_noise: float = 0.004       # m, std of each position coordinate
    attitude_rate: float = 20.0    # Hz
    attitude_noise: float = 0.004  # rad, std of pitch and roll

    def __post_init__(self) -> None:
        _check_positive("sensors", gps_rate=self.gps_rate, attitude_rate=self.attitude_rate)
        _check_non_negative("sensors", gps_noise=self.gps_noise,
                            attitude_noise=self.attitude_noise)


@dataclass(frozen=True)
class VehicleConfig:
    """Everything a vehicle simulation needs; ``from_yaml`` reads config/vehicle_*.yaml."""

    vehicle: VehicleParams = field(default_factory=VehicleParams)
    sensors: SensorParams = field(default_factory=SensorParams)
    ramp: Optional[Ramp] = None
    physics_rate: float = 100.0    # Hz
    seed: int = 0
    label: str = "design"

    def __post_init__(self) -> None:
        _check_positive("vehicle config", physics_rate=self.physics_rate)
        for name, rate in (("gps_rate", self.sensors.gps_rate),
                           ("attitude_rate", self.sensors.attitude_rate)):
            ratio = self.physics_rate / rate
            if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
                raise KernelError(f"sensors.{name} {rate} Hz must divide physics_rate "
                                  f"{self.physics_rate} Hz")

    @property
    def dt(self) -> float:
        return 1.0 / self.physics_rate

    def with_overrides(self, gps_rate: Optional[float] = None, seed: Optional[int] = None,
                       ramp: Union[bool, None] = None) -> "VehicleConfig":
        """A copy with the GPS rate, the seed or the ramp (False removes it; True keeps the
        configured one or adds the default) replaced; None leaves a value as it is."""
        config = self
        if gps_rate is not None:
            config = replace(config, sensors=replace(config.sensors, gps_rate=float(gps_rate)))
        if seed is not None:
            config = replace(config, seed=int(seed))
        if ramp is not None:
            config = replace(config, ramp=(config.ramp or Ramp()) if ramp else None)
        return config

    @classmethod
    def from_dict(cls, data: Any, what: str = "vehicle config") -> "VehicleConfig":
        """The configuration from a mapping (a YAML file's content or the mapping the launch
        file loaded onto the parameter server); KernelError naming ``what`` (the file, the
        parameter) otherwise."""
        data = config_section(data, ("vehicle", "sensors", "ramp", "physics_rate", "seed",
                                     "label"), what)
        try:
            ramp = data.get("ramp")
            return cls(
                vehicle=_dataclass_from(VehicleParams, data.get("vehicle"), f"{what}: vehicle"),
                sensors=_dataclass_from(SensorParams, data.get("sensors"), f"{what}: sensors"),
                ramp=None if ramp is None else _dataclass_from(Ramp, ramp, f"{what}: ramp"),
                physics_rate=float(data.get("physics_rate", 100.0)),
                seed=int(data.get("seed", 0)), label=str(data.get("label", "design")))
        except KernelError as exc:
            raise named(what, exc) from None
        except (TypeError, ValueError) as exc:
            raise KernelError(f"{what}: {exc}") from exc

    @classmethod
    def from_yaml(cls, path: Union[str, os.PathLike]) -> "VehicleConfig":
        return cls.from_dict(read_yaml(path, "vehicle config"), f"vehicle config {os.fspath(path)}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("start", "direction"):
            if data["ramp"] is not None:
                data["ramp"][key] = list(data["ramp"][key])
        return data


def _dataclass_from(cls: type, data: Any, what: str) -> Any:
    """``cls(**data)`` for a flat dataclass of numbers (and 2-vectors), with clear errors."""
    data = config_section(data, [f.name for f in fields(cls)], what)
    values: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, list):
            if len(value) != 2 or not all(_is_number(v) for v in value):
                raise KernelError(f"{what}.{key} must be a list of 2 numbers, got {value!r}")
            values[key] = (float(value[0]), float(value[1]))
        elif _is_number(value):
            values[key] = float(value)
        else:
            raise KernelError(f"{what}.{key} must be a number, got {value!r}")
    return cls(**values)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class VehicleState:
    """The simulation's internal state (what ``get_state`` returns, ``set_state`` writes)."""

    x: float
    y: float
    yaw: float
    speed: float
    pitch: float
    steering: float = 0.0
    t: float = 0.0


@dataclass(frozen=True)
class GpsFix:
    """One GPS fix: position (m, field frame; z = altitude above the field), velocity from the
    previous fix (m/s), and the fix's time stamp (s)."""

    x: float
    y: float
    z: float
    vx: float
    vy: float
    stamp: float

    @property
    def course(self) -> float:
        """Heading over ground from the GPS velocity (as the paper computes orientation)."""
        return math.atan2(self.vy, self.vx)

    @property
    def ground_speed(self) -> float:
        return math.hypot(self.vx, self.vy)


@dataclass(frozen=True)
class AttitudeReading:
    """Body pitch (rad, nose up positive) and roll (rad, left side up positive) with its stamp."""

    pitch: float
    roll: float
    stamp: float


@dataclass(frozen=True)
class SensorReadings:
    gps: GpsFix
    attitude: AttitudeReading


class VehicleModel:
    """The vehicle simulation: ``step``/``advance`` under a speed and steering command, sensor
    ``readings`` (held between sensor updates), and the configuration interface
    ``get_state``/``set_state`` (paper 001 §3.2)."""

    def __init__(self, config: VehicleConfig, start_time: float = 0.0) -> None:
        """``start_time`` (s) is the clock at physics step 0 (e.g. the ROS time a node starts)."""
        if not math.isfinite(start_time):
            raise KernelError(f"start_time must be finite, got {start_time}")
        self.config = config
        self.start_time = float(start_time)
        self.params = config.vehicle
        self._rng = np.random.default_rng(config.seed)
        self._gps_every = int(round(config.physics_rate / config.sensors.gps_rate))
        self._attitude_every = int(round(config.physics_rate / config.sensors.attitude_rate))
        self._n = 0
        self._x = self._y = self._yaw = self._speed = self._steering = 0.0
        self._pitch = 0.0
        self._speed_cmd = self._steering_cmd = 0.0
        self._gps: Optional[GpsFix] = None
        self.reset(0.0, 0.0, 0.0)

    # ----------------------------------------------------------------------------- time
    @property
    def t(self) -> float:
        return self.start_time + self._n / self.config.physics_rate

    @property
    def dt(self) -> float:
        return self.config.dt

    def steps_for(self, duration: float) -> int:
        """The number of physics steps in ``duration`` (must be a whole number of them)."""
        steps = duration * self.config.physics_rate
        if abs(steps - round(steps)) > 1e-6 or round(steps) < 0:
            raise KernelError(f"duration {duration} s is not a whole number of physics steps "
                              f"of {self.dt} s")
        return int(round(steps))

    # ---------------------------------------------------------------------------- terrain
    def terrain(self, x: float, y: float, yaw: float) -> tuple[float, float, float]:
        """Height, pitch (nose up) and roll (left up) of the ground under a body at (x, y, yaw)."""
        ramp = self.config.ramp
        if ramp is None:
            return 0.0, 0.0, 0.0
        h, gx, gy = ramp.height_and_gradient(x, y)
        c, s = math.cos(yaw), math.sin(yaw)
        return h, math.atan(gx * c + gy * s), math.atan(-gx * s + gy * c)

    # ------------------------------------------------------------------ configuration interface
    def get_state(self) -> VehicleState:
        return VehicleState(self._x, self._y, self._yaw, self._speed, self._pitch,
                            self._steering, self.t)

    def set_state(self, x: Optional[float] = None, y: Optional[float] = None,
                  yaw: Optional[float] = None, speed: Optional[float] = None,
                  pitch: Optional[float] = None) -> None:
        """Overwrite any subset of the state (None keeps a value; KernelError, state unchanged, for
        a non-finite value or a position beyond WORLD_HALF_SIZE): the simulation then continues
        from it (position and yaw directly; the speed lag and the suspension's pitch lag start
        from the given speed and pitch). Sensors report the change at their next update, as
        Gazebo's sensors do after a set-model-state; the GPS's last fix moves with the vehicle,
        so the velocity of the next fix comes from the motion since, not from the set-state's
        jump (which read as a spurious velocity right after every motor kernel)."""
        for name, value in (("x", x), ("y", y), ("yaw", yaw), ("speed", speed),
                            ("pitch", pitch)):
            if value is not None and not math.isfinite(value):
                raise KernelError(f"set_state: {name} must be finite, got {value}")
        for name, value in (("x", x), ("y", y)):
            if value is not None and abs(value) > WORLD_HALF_SIZE:
                raise KernelError(f"set_state: {name} = {value:.4g} m is beyond the world "
                                  f"(|{name}| <= {WORLD_HALF_SIZE:g} m)")
        x_before, y_before = self._x, self._y
        if x is not None:
            self._x = float(x)
        if y is not None:
            self._y = float(y)
        if self._gps is not None and (self._x, self._y) != (x_before, y_before):
            self._gps = replace(self._gps, x=self._gps.x + self._x - x_before,
                                y=self._gps.y + self._y - y_before)
        if yaw is not None:
            self._yaw = wrap_angle(float(yaw))
        if speed is not None:
            self._speed = float(np.clip(speed, -self.params.max_speed, self.params.max_speed))
        if pitch is not None:
            self._pitch = float(np.clip(pitch, -0.5 * math.pi, 0.5 * math.pi))

    def reset(self, x: float, y: float, yaw: float, t: Optional[float] = None) -> None:
        """Place the vehicle at rest (new mission), optionally after moving the clock forward to
        ``t``: state set, commands zeroed, and fresh sensor readings at that time whose GPS
        velocity is zero (no jump from the old fix)."""
        if t is not None and t < self.t - 1e-9:
            raise KernelError(f"reset: time cannot go back (t={t} < {self.t})")
        self.set_state(x=x, y=y, yaw=yaw, speed=0.0)      # refuses a bad pose before any change
        if t is not None:
            self._n = self.steps_for(t - self.start_time)
        self._steering = self._speed_cmd = self._steering_cmd = 0.0
        self._pitch = self.terrain(self._x, self._y, self._yaw)[1]
        self._gps = self._gps_fix(previous=None)
        self._attitude = self._attitude_reading()

    # --------------------------------------------------------------------------- dynamics
    def command(self, speed: float, steering: float) -> None:
        """Set the commanded speed (m/s) and steering angle (rad); KernelError if not finite."""
        if not (math.isfinite(speed) and math.isfinite(steering)):
            raise KernelError(f"command must be finite, got speed={speed}, steering={steering}")
        self._speed_cmd = float(np.clip(speed, -self.params.max_speed, self.params.max_speed))
        self._steering_cmd = float(np.clip(steering, -self.params.max_steering,
                                           self.params.max_steering))

    def step(self) -> None:
        """One physics step of the kinematic bicycle (semi-implicit Euler), then the sensors."""
        p, dt = self.params, self.dt
        _, terrain_pitch, _ = self.terrain(self._x, self._y, self._yaw)
        self._pitch += (terrain_pitch - self._pitch) * (1.0 - math.exp(-dt / p.pitch_time_constant))
        target = self._speed_cmd * p.grade_factor(self._pitch)
        self._speed += (target - self._speed) * (1.0 - math.exp(-dt / p.speed_time_constant))
        self._steering += (self._steering_cmd - self._steering) * (
            1.0 - math.exp(-dt / p.steering_time_constant))
        self._yaw = wrap_angle(self._yaw + self._speed * math.tan(self._steering) / p.wheelbase * dt)
        ground = self._speed * math.cos(self._pitch)   # horizontal component on a grade
        self._x += ground * math.cos(self._yaw) * dt
        self._y += ground * math.sin(self._yaw) * dt
        self._n += 1
        if self._n % self._gps_every == 0:
            self._gps = self._gps_fix(previous=self._gps)
        if self._n % self._attitude_every == 0:
            self._attitude = self._attitude_reading()

    def advance(self, duration: float, speed: float, steering: float) -> None:
        """Hold a command for ``duration`` seconds (a whole number of physics steps)."""
        self.command(speed, steering)
        if duration < 0:
            raise KernelError(f"advance: duration must be >= 0, got {duration}")
        for _ in range(self.steps_for(duration)):
            self.step()

    # ---------------------------------------------------------------------------- sensors
    def readings(self) -> SensorReadings:
        """The latest sensor values; each holds its last update (value and stamp)."""
        return SensorReadings(self._gps, self._attitude)

    def _gps_fix(self, previous: Optional[GpsFix]) -> GpsFix:
        sigma = self.config.sensors.gps_noise
        x = self._x + sigma * self._rng.standard_normal()
        y = self._y + sigma * self._rng.standard_normal()
        z = self.terrain(self._x, self._y, self._yaw)[0]
        t = self.t
        if previous is None or t <= previous.stamp:
            vx = vy = 0.0
        else:
            vx, vy = (x - previous.x) / (t - previous.stamp), (y - previous.y) / (t - previous.stamp)
        return GpsFix(x, y, z, vx, vy, t)

    def _attitude_reading(self) -> AttitudeReading:
        sigma = self.config.sensors.attitude_noise
        _, _, roll = self.terrain(self._x, self._y, self._yaw)
        return AttitudeReading(self._pitch + sigma * self._rng.standard_normal(),
                               roll + sigma * self._rng.standard_normal(), self.t)
