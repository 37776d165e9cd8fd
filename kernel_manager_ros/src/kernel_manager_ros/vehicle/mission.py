"""The delivery mission program and its performance monitor (paper 001 §4, §5.1).

Program (10 Hz): drives store -> site 1 -> site 2 -> store. Speed from a saturated spring toward
the current waypoint, v = min(v_max, k * distance); steering from bicycle (pure) pursuit of the
waypoint, delta = atan(2 L sin(alpha) / max(distance, l_min)); a small uniformly distributed
zero-mean noise on both ("to simulate moving on bumpy grass", §5.1). Position and heading come
from the GPS: heading from the GPS velocity (§4); between fixes the program dead-reckons with its
own commands through Ackermann kinematics, but only ``dead_reckoning_horizon`` seconds past a fix
("conservatively", §5.1): a program designed for a 20 Hz GPS then lags behind a 1 Hz one and
overshoots its turns (§6.2). ``pitch_speed_gain`` > 0 issues faster speeds when the pitch is not
zero: what the paper's SARSA redesign learned (§4), the parameter a redesign searches.

Monitor (§4): for goal g_i with accuracy epsilon_i and deadline d_i,

    perf(t) =  1  if |p(t) - g_i| <  epsilon_i and d(t) <= d_i
               0  if |p(t) - g_i| >= epsilon_i and d(t) <= d_i
              -1  if d(t) > d_i

with p(t) the GPS position and d(t) the time since the last goal (the mission start for the
first). It is evaluated at every control step; the total reward of a mission is the sum of perf
over its steps, and the Average Total Reward (ATR) after n missions is the sum of their totals
divided by n.

Deadlines (config/mission.yaml, DEFAULT_GOALS) were set from 100 design missions (20 Hz GPS, no
ramp; leg times max 11.2 / 7.8 / 11.3 s) with >= 0.8 s of margin: 12.5 / 8.6 / 12.5 s. The ramp
adds about 1.9 s to leg 2 (site 1 -> site 2: 9.2-9.8 s over 100 deployment missions), so every
deployment mission is late there by >= 0.6 s (>= 6 control steps of perf = -1): design ATR 3.0,
deployment ATR about -7 (test_vehicle_mission.py checks both margins).
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.state_spec import config_section, named, read_yaml
from kernel_manager_ros.vehicle.model import wrap_angle


@dataclass(frozen=True)
class Goal:
    """A waypoint g_i with its accuracy epsilon_i (m) and deadline d_i (s since the last goal)."""

    name: str
    x: float
    y: float
    epsilon: float
    deadline: float

    def __post_init__(self) -> None:
        for key in ("x", "y", "epsilon", "deadline"):
            value = getattr(self, key)
            if not math.isfinite(value):
                raise KernelError(f"goal {self.name}: {key} must be finite, got {value}")
        if self.epsilon <= 0 or self.deadline <= 0:
            raise KernelError(f"goal {self.name}: epsilon and deadline must be > 0")

    def distance(self, x: float, y: float) -> float:
        return math.hypot(self.x - x, self.y - y)


DEFAULT_GOALS = (Goal("site_1", 5.0, 15.0, 0.75, 12.5),
                 Goal("site_2", -5.0, 15.0, 0.75, 8.6),
                 Goal("store", 0.0, 0.0, 0.75, 12.5))


@dataclass(frozen=True)
class ProgramParams:
    """The robot program's design parameters (what a redesign may change)."""

    max_speed: float = 1.5               # m/s, saturation of the spring
    spring_gain: float = 0.8             # 1/s, v = k * distance below saturation
    min_lookahead: float = 1.0           # m, pursuit look-ahead = distance, clipped to
    max_lookahead: float = 3.0           # m    [min_lookahead, max_lookahead]
    wheelbase: float = 0.33              # m, the program's Ackermann model of the vehicle
    max_steering: float = 0.5            # rad
    speed_noise: float = 0.05            # m/s, half-width of the uniform noise on the speed
    steering_noise: float = 0.05         # rad, half-width of the uniform noise on the steering
    dead_reckoning_horizon: float = 0.15  # s past a GPS fix the program extrapolates
    min_course_speed: float = 0.3        # m/s, GPS heading is used only above this ground speed
    pitch_speed_gain: float = 0.0        # speed x (1 + gain * (|pitch| - deadband)+) (redesign)
    pitch_deadband: float = 0.05         # rad, pitch below this counts as zero
    speed_limit: float = 3.0             # m/s, never command more than this

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise KernelError(f"program.{f.name} must be a finite number >= 0, got {value!r}")
        for name in ("max_speed", "spring_gain", "min_lookahead", "wheelbase", "max_steering",
                     "speed_limit"):
            if getattr(self, name) <= 0:
                raise KernelError(f"program.{name} must be > 0")
        if self.max_lookahead < self.min_lookahead:
            raise KernelError("program.max_lookahead must be >= program.min_lookahead")


@dataclass(frozen=True)
class MissionConfig:
    """The mission (§4): goals in order from the store, control rate, start distribution."""

    goals: tuple[Goal, ...] = DEFAULT_GOALS
    store: tuple[float, float] = (0.0, 0.0)
    start_half_width: float = 1.0     # m, start position ~ U(store +- half-width)^2 (§4)
    start_yaw_spread: float = 0.3     # rad, start yaw ~ bearing to the first goal + U(+-spread)
    control_rate: float = 10.0        # Hz (§5.1)
    mission_timeout: float = 90.0     # s, a mission that has not ended by then is abandoned
    program: ProgramParams = field(default_factory=ProgramParams)

    def __post_init__(self) -> None:
        if not self.goals:
            raise KernelError("mission: at least one goal is needed")
        for name in ("start_half_width", "start_yaw_spread", "control_rate", "mission_timeout"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise KernelError(f"mission.{name} must be a finite number >= 0, got {value}")
        if self.control_rate <= 0 or self.mission_timeout <= 0:
            raise KernelError("mission.control_rate and mission.mission_timeout must be > 0")

    @property
    def period(self) -> float:
        return 1.0 / self.control_rate

    def with_program(self, **changes: float) -> "MissionConfig":
        """A copy whose program parameters are changed (e.g. ``pitch_speed_gain=4.0``)."""
        try:
            return replace(self, program=replace(self.program, **changes))
        except TypeError as exc:
            raise KernelError(f"unknown program parameter: {exc}") from exc

    @classmethod
    def from_dict(cls, data: Any, what: str = "mission config") -> "MissionConfig":
        """The mission from a mapping (a YAML file's content or the mapping the launch file
        loaded onto the parameter server); KernelError naming ``what`` (the file, the parameter)
        otherwise."""
        data = config_section(data, [f.name for f in fields(cls)], what)
        values: dict[str, Any] = {}
        try:
            if "goals" in data:
                goals = data["goals"]
                if not isinstance(goals, list) or not all(isinstance(g, Mapping) for g in goals):
                    raise KernelError(f"{what}: goals must be a list of mappings with name, x, "
                                      f"y, epsilon, deadline")
                values["goals"] = tuple(
                    Goal(str(g["name"]), float(g["x"]), float(g["y"]), float(g["epsilon"]),
                         float(g["deadline"])) for g in goals)
            if "store" in data:
                store = data["store"]
                if not isinstance(store, list) or len(store) != 2:
                    raise KernelError(f"{what}: store must be [x, y]")
                values["store"] = (float(store[0]), float(store[1]))
            for key in ("start_half_width", "start_yaw_spread", "control_rate",
                        "mission_timeout"):
                if key in data:
                    values[key] = float(data[key])
            if "program" in data:
                program = data["program"]
                if not isinstance(program, Mapping):
                    raise KernelError(f"{what}: program must be a mapping")
                names = {f.name for f in fields(ProgramParams)}
                bad = set(program) - names
                if bad:
                    raise KernelError(f"{what}: unknown program parameters {sorted(bad)}")
                values["program"] = ProgramParams(**{k: float(v) for k, v in program.items()})
            return cls(**values)
        except KeyError as exc:
            raise KernelError(f"{what}: a goal lacks key {exc}") from exc
        except KernelError as exc:
            raise named(what, exc) from None
        except (TypeError, ValueError) as exc:
            raise KernelError(f"{what}: {exc}") from exc

    @classmethod
    def from_yaml(cls, path: Union[str, os.PathLike]) -> "MissionConfig":
        return cls.from_dict(read_yaml(path, "mission config"), f"mission config {os.fspath(path)}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["goals"] = [asdict(g) for g in self.goals]
        data["store"] = list(self.store)
        return data


@dataclass(frozen=True)
class Observation:
    """What the program reads from its sensors at a control step."""

    gps_x: float
    gps_y: float
    gps_vx: float
    gps_vy: float
    gps_stamp: float
    pitch: float
    pitch_stamp: float

    def is_finite(self) -> bool:
        return all(math.isfinite(v) for v in (self.gps_x, self.gps_y, self.gps_vx, self.gps_vy,
                                              self.gps_stamp, self.pitch, self.pitch_stamp))


@dataclass(frozen=True)
class Command:
    speed: float
    steering: float


class PerfMonitor:
    """perf(t) of §4 for the current goal; ``start`` re-arms it (time since last goal = 0)."""

    def __init__(self) -> None:
        self.goal: Optional[Goal] = None
        self.since = 0.0

    def start(self, goal: Goal, t: float) -> None:
        self.goal, self.since = goal, float(t)

    def value(self, x: float, y: float, t: float) -> int:
        if self.goal is None:
            raise KernelError("perf monitor: no goal (call start first)")
        if t - self.since > self.goal.deadline:
            return -1
        return 1 if self.goal.distance(x, y) < self.goal.epsilon else 0


@dataclass(frozen=True)
class TickResult:
    """One control step: the command (None once the mission is over), the monitor's perf(t),
    the goal index the step worked on, and whether the mission ended at this step."""

    command: Optional[Command]
    perf: int
    goal_index: int
    done: bool


class MissionProgram:
    """The robot program of §4 plus its performance monitor, one mission at a time."""

    def __init__(self, config: MissionConfig, rng: np.random.Generator) -> None:
        self.config = config
        self.params = config.program
        self.rng = rng
        self.monitor = PerfMonitor()
        self.goal_index = 0
        self.done = True
        self._t_start = 0.0
        # optional learned speed rule (vehicle/sarsa.py): ``factor(pitch, perf)`` at each control
        # step multiplies the commanded speed, ``end(perf)`` at the mission's last step
        self.speed_policy: Optional[Any] = None

    def start(self, t: float) -> None:
        """Begin a mission at time t: the vehicle stands at the store facing roughly site 1, so
        the program's heading estimate starts as the bearing to the first goal."""
        first = self.config.goals[0]
        sx, sy = self.config.store
        self.goal_index, self.done, self._t_start = 0, False, float(t)
        self.monitor.start(first, t)
        self._x, self._y = sx, sy
        self._heading = math.atan2(first.y - sy, first.x - sx)
        self._fix_stamp = -math.inf
        self._estimate_t = float(t)
        self._command = Command(0.0, 0.0)

    @property
    def position_estimate(self) -> tuple[float, float, float]:
        return self._x, self._y, self._heading

    def _extrapolate(self, until: float) -> None:
        """Ackermann dead reckoning with the last command, up to the horizon past the fix."""
        p = self.params
        end = min(until, self._fix_stamp + p.dead_reckoning_horizon)
        dt = end - self._estimate_t
        if dt > 0:
            v, delta = self._command.speed, self._command.steering
            self._heading = wrap_angle(self._heading + v * math.tan(delta) / p.wheelbase * dt)
            self._x += v * math.cos(self._heading) * dt
            self._y += v * math.sin(self._heading) * dt
        self._estimate_t = max(self._estimate_t, until)

    def _update_estimate(self, obs: Observation, t: float) -> None:
        if obs.gps_stamp > self._fix_stamp:     # a new fix
            self._fix_stamp = obs.gps_stamp
            self._x, self._y = obs.gps_x, obs.gps_y
            if math.hypot(obs.gps_vx, obs.gps_vy) >= self.params.min_course_speed:
                self._heading = math.atan2(obs.gps_vy, obs.gps_vx)
            self._estimate_t = obs.gps_stamp
        self._extrapolate(t)

    def speed_and_steering(self, goal: Goal, pitch: float, factor: float = 1.0) -> Command:
        """Saturated spring speed and bicycle pursuit steering toward ``goal`` from the
        program's position estimate, with the pitch speed-up, a speed ``factor`` (a learned
        rule's) and the zero-mean noise."""
        p = self.params
        dx, dy = goal.x - self._x, goal.y - self._y
        distance = math.hypot(dx, dy)
        speed = min(p.max_speed, p.spring_gain * distance)
        excess = max(0.0, abs(pitch) - p.pitch_deadband)
        speed *= (1.0 + p.pitch_speed_gain * excess) * factor
        alpha = wrap_angle(math.atan2(dy, dx) - self._heading)
        lookahead = min(max(distance, p.min_lookahead), p.max_lookahead)
        steering = math.atan2(2.0 * p.wheelbase * math.sin(alpha), lookahead)
        speed += self.rng.uniform(-p.speed_noise, p.speed_noise)
        steering += self.rng.uniform(-p.steering_noise, p.steering_noise)
        return Command(float(np.clip(speed, 0.0, p.speed_limit)),
                       float(np.clip(steering, -p.max_steering, p.max_steering)))

    def tick(self, obs: Observation, t: float) -> TickResult:
        """One control step at time t: monitor, waypoint switching, command."""
        if self.done:
            raise KernelError("mission program: tick after the mission ended (call start)")
        if not obs.is_finite():
            raise KernelError(f"mission program: observation with NaN/Inf: {obs}")
        self._update_estimate(obs, t)
        index = self.goal_index
        goal = self.config.goals[index]
        perf = self.monitor.value(obs.gps_x, obs.gps_y, t)
        if goal.distance(obs.gps_x, obs.gps_y) < goal.epsilon:     # reached (late or not)
            self.goal_index += 1
            if self.goal_index == len(self.config.goals):
                self.done = True
            else:
                self.monitor.start(self.config.goals[self.goal_index], t)
        if not self.done and t - self._t_start >= self.config.mission_timeout:
            self.done = True
        if self.done:
            if self.speed_policy is not None:
                self.speed_policy.end(perf)
            self._command = Command(0.0, 0.0)
            return TickResult(None, perf, index, True)
        factor = 1.0 if self.speed_policy is None else self.speed_policy.factor(obs.pitch, perf)
        self._command = self.speed_and_steering(self.config.goals[self.goal_index], obs.pitch,
                                                factor)
        return TickResult(self._command, perf, index, False)

    def start_pose(self) -> tuple[float, float, float]:
        """A start pose drawn as in §4: uniform around the store, facing roughly site 1."""
        c = self.config
        first = c.goals[0]
        x = c.store[0] + self.rng.uniform(-c.start_half_width, c.start_half_width)
        y = c.store[1] + self.rng.uniform(-c.start_half_width, c.start_half_width)
        yaw = math.atan2(first.y - y, first.x - x) + self.rng.uniform(-c.start_yaw_spread,
                                                                      c.start_yaw_spread)
        return x, y, yaw


def average_total_reward(totals: Sequence[float]) -> np.ndarray:
    """ATR after each mission: cumulative sum of the total rewards / number of missions (§4)."""
    totals = np.asarray(totals, dtype=float)
    if totals.ndim != 1:
        raise KernelError("average_total_reward: expected a 1-D sequence of mission totals")
    return np.cumsum(totals) / np.arange(1, totals.size + 1)
