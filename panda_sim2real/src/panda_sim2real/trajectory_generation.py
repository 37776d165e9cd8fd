"""The random move generator of the Realeasy data set (paper 000, §IV-B and §V).

The training data contain "a significant amount of single joint movements"; "the remaining
data set contains all possible combinations of joints moving together", and "all movements are
at different speeds and fill the whole robot work space". A separate test set holds Cartesian
linear moves in the xy, xz and yz planes through waypoints. This module draws such moves:

* ``single``: one random joint to a uniform target inside the position limits shrunk by a
  margin (resampled until it moves at least MIN_DISPLACEMENT);
* ``multi``: k = 2..dof joints (k uniform), a random subset of that size, each to a uniform
  target inside the margins (same rule);
* ``cartesian``: the end effector along a straight line in a random direction of the xy, xz or
  yz plane from the pose of the start position, orientation held, solved by IK at every knot.

Every move has a speed factor c drawn uniform in ``velocity_scaling``; it scales both the
velocity and the acceleration limits. Joint moves follow a synchronised minimum-jerk profile
whose duration keeps the peak velocity and acceleration of every joint within c times its
limits; Cartesian moves are slowed down until their IK joint path does. Each trajectory starts
exactly at the given start position, rests there ``rest_before`` seconds, moves, and rests at
the end position ``rest_after`` seconds; callers chain moves by starting the next one at the
last position of the previous one.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from panda_sim2real.errors import ConfigError
from sim2real_checks import read_yaml
from panda_sim2real.limits import CONFIG_DIR, JointLimits
from panda_sim2real.trajectory import PlannedTrajectory

if TYPE_CHECKING:
    from panda_sim2real.kinematics import PandaKinematics

DEFAULT_SETTINGS_FILE = os.path.join(CONFIG_DIR, "trajectories.yaml")
FAST_MOVES_FILE = os.path.join(CONFIG_DIR, "fast_moves.yaml")   # short moves for tests, smoke runs
KINDS = ("single", "multi", "cartesian")
PLANES = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}
MIN_DISPLACEMENT = 0.05          # rad, smallest displacement of a moved joint
CARTESIAN_TRIES = 50             # directions tried before falling back to a multi move
IK_POSITION_TOLERANCE = 1e-3     # m, largest end-effector position error accepted on a line
IK_ORIENTATION_TOLERANCE = 1e-3  # rad, largest orientation error accepted on a line
IK_PATH_TOL = 1e-6               # tolerance of the IK at each knot (tight: keeps the path smooth)
IK_PATH_STEPS = 2                # IK steps taken at every knot even if within tolerance
MAX_SLOWDOWN = 4.0               # a line needing more than this factor on its Cartesian-speed
                                 # duration passes too close to a singularity: another direction
DURATION_ROUNDS = 8              # rounds of lengthening a Cartesian move
# Minimum-jerk s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5: peak of s' is 15/8, of |s''| is 10/sqrt(3).
PEAK_VELOCITY = 15.0 / 8.0
PEAK_ACCELERATION = 10.0 / math.sqrt(3.0)


@dataclass(frozen=True)
class GeneratorSettings:
    """Parameters of the move generator (config/trajectories.yaml)."""

    margin: float = 0.1                                   # rad kept from the position limits
    rest_before: float = 0.5                              # s at the start position
    rest_after: float = 1.0                               # s at the end position
    velocity_scaling: tuple[float, float] = (0.1, 1.0)    # range of c (velocity and acceleration)
    knot_rate: float = 100.0                              # Hz, knots of the trajectory
    single_fraction: float = 0.5                          # of the joint-space moves
    cartesian_fraction: float = 0.1                       # of all moves, if 'cartesian' allowed
    cartesian_distance: tuple[float, float] = (0.08, 0.25)  # m, length of a line
    cartesian_waypoints: int = 3                          # intermediate waypoints on a line
    cartesian_speed: float = 0.25                         # m/s peak speed at c = 1

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"trajectory generator setting '{name}' {why}")

        for name in ("margin", "rest_before", "rest_after"):
            if not getattr(self, name) >= 0.0:
                raise bad(name, "must be >= 0")
        for name in ("knot_rate", "cartesian_speed"):
            if not getattr(self, name) > 0.0:
                raise bad(name, "must be > 0")
        for name in ("single_fraction", "cartesian_fraction"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise bad(name, "must lie in [0, 1]")
        low, high = self.velocity_scaling
        if not 0.0 < low <= high <= 1.0:
            raise bad("velocity_scaling", "must be (min, max) with 0 < min <= max <= 1")
        low, high = self.cartesian_distance
        if not 0.0 < low <= high:
            raise bad("cartesian_distance", "must be (min, max) with 0 < min <= max")
        if self.cartesian_waypoints < 0:
            raise bad("cartesian_waypoints", "must be >= 0")

    @classmethod
    def from_yaml(cls, path: Optional[str] = None) -> "GeneratorSettings":
        """Read a mapping of (optional) settings from ``path`` (None: config/trajectories.yaml);
        unknown keys raise ConfigError."""
        path = path or DEFAULT_SETTINGS_FILE
        raw = read_yaml(path, "trajectory settings", ConfigError)
        return cls.from_dict({} if raw is None else raw, path)

    @classmethod
    def from_dict(cls, raw: Any, source: str = "<memory>") -> "GeneratorSettings":
        """The settings in a mapping of config/trajectories.yaml's schema (pair_runner's
        ``~generator_config``); every key optional, ConfigError naming ``source`` and the key."""
        if not isinstance(raw, dict):
            raise ConfigError(f"trajectory settings {source}: expected a mapping")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in raw if k not in known)
        if unknown:
            raise ConfigError(f"trajectory settings {source}: unknown key(s) {unknown}; "
                              f"expected some of {sorted(known)}")
        values: dict[str, Any] = {}
        try:
            for key, value in raw.items():
                if key in ("velocity_scaling", "cartesian_distance"):
                    pair = tuple(float(v) for v in value)
                    if len(pair) != 2:
                        raise ValueError("needs two numbers")
                    values[key] = pair
                elif key == "cartesian_waypoints":
                    if isinstance(value, bool) or int(value) != value:
                        raise ValueError("needs an integer")
                    values[key] = int(value)
                else:
                    values[key] = float(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"trajectory settings {source}: '{key}' is malformed ({exc})") from exc
        return cls(**values)


@dataclass(frozen=True)
class GeneratedMove:
    """One generated move: its kind, the joints it moves (indices), its speed factor c and the
    trajectory (start=None, times from 0, knots at knot_rate, rests included).

    ``waypoints`` are the Cartesian waypoints (positions [m], the last one the line's end) of a
    'cartesian' move, empty otherwise."""

    kind: str
    joints: tuple[int, ...]
    velocity_scaling: float
    trajectory: PlannedTrajectory
    waypoints: tuple[tuple[float, float, float], ...] = ()


def minimum_jerk(tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5 and ds/dtau on tau in [0, 1]."""
    tau = np.asarray(tau, dtype=float)
    s = tau ** 3 * (10.0 - 15.0 * tau + 6.0 * tau ** 2)
    ds = 30.0 * tau ** 2 * (1.0 - tau) ** 2
    return s, ds


def check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """Validate the allowed move kinds: at least one of KINDS, nothing else."""
    if isinstance(kinds, str):
        kinds = [kinds]
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ConfigError(f"move kinds must be a non-empty selection of {list(KINDS)}, "
                          f"got {list(kinds)}")
    return kinds


def minimum_jerk_duration(dist: np.ndarray, c: float, limits: JointLimits) -> float:
    """The shortest duration of a synchronised minimum-jerk move over ``dist`` [rad] whose peak
    velocity and acceleration stay within ``c`` times the limits:
    T = max_j max(15/8 |D_j| / (c v_j), sqrt(10/sqrt(3) |D_j| / (c a_j)))."""
    moving = np.abs(dist)
    return float(np.max(np.maximum(PEAK_VELOCITY * moving / (c * limits.velocity),
                                   np.sqrt(PEAK_ACCELERATION * moving / (c * limits.acceleration)))))


def checked_start(limits: JointLimits, start: np.ndarray) -> np.ndarray:
    """``start`` as a new float array; ValueError unless it holds one finite position per joint,
    inside the position limits."""
    start = np.asarray(start, dtype=float).copy()
    if start.shape != (limits.dof,) or not np.all(np.isfinite(start)):
        raise ValueError(f"start needs {limits.dof} finite joint positions, got {start}")
    if not np.all(limits.within_position(start)):
        raise ValueError(f"start {start} is outside the joint position limits")
    return start


class TrajectoryGenerator:
    """Draws random moves of the Realeasy data set (paper 000, §IV-B) from a seeded generator.

    The same limits, settings, seed, sequence of starts and kinds give identical moves. The IK
    model for Cartesian moves (a private PyBullet client) is built on the first Cartesian move;
    call :meth:`close` to release it.
    """

    def __init__(self, limits: JointLimits, settings: Optional[GeneratorSettings] = None,
                 seed: Optional[int] = None) -> None:
        self.limits = limits
        self.settings = settings or GeneratorSettings()
        self._rng = np.random.default_rng(seed)
        self._dt = 1.0 / self.settings.knot_rate
        self._low = limits.position_min + self.settings.margin
        self._high = limits.position_max - self.settings.margin
        if np.any(self._high - self._low < 2.0 * MIN_DISPLACEMENT):
            raise ConfigError(f"margin {self.settings.margin} rad leaves too little range "
                              f"for some joint of {list(limits.joint_names)}")
        self._kinematics: Optional["PandaKinematics"] = None  # built by the first Cartesian move

    def close(self) -> None:
        """Release the IK model, if one was built."""
        if self._kinematics is not None:
            self._kinematics.close()
            self._kinematics = None

    def next(self, start: np.ndarray, kinds: Sequence[str]) -> GeneratedMove:
        """Draw the next move from ``start`` (joint positions, inside the position limits).

        The kind is 'cartesian' with probability cartesian_fraction if allowed (always if it
        is the only kind); otherwise 'single' with probability single_fraction if both joint
        kinds are allowed, else the one allowed. A Cartesian move for which no feasible line is
        found in CARTESIAN_TRIES directions falls back to a 'multi' move.
        """
        kinds = check_kinds(kinds)
        start = checked_start(self.limits, start)
        s = self.settings
        joint_kinds = [k for k in ("single", "multi") if k in kinds]
        c = float(self._rng.uniform(*s.velocity_scaling))
        if "cartesian" in kinds and (not joint_kinds or self._rng.random() < s.cartesian_fraction):
            move = self._cartesian(start, c)
            if move is not None:
                return move
            kind = "multi"  # documented fallback: no feasible line from this start
        elif len(joint_kinds) == 2:
            kind = "single" if self._rng.random() < s.single_fraction else "multi"
        else:
            kind = joint_kinds[0]
        size = 1 if kind == "single" else int(self._rng.integers(2, self.limits.dof + 1))
        joints = np.sort(self._rng.choice(self.limits.dof, size=size, replace=False))
        return self._joint_move(kind, start, joints, c)

    # ----------------------------------------------------------------------------- joint space

    def _joint_move(self, kind: str, start: np.ndarray, joints: np.ndarray,
                    c: float) -> GeneratedMove:
        """Move ``joints`` to uniform targets inside the margins, synchronised minimum jerk."""
        target = start.copy()
        for j in joints:
            while abs(target[j] - start[j]) < MIN_DISPLACEMENT:
                target[j] = self._rng.uniform(self._low[j], self._high[j])
        positions, velocities = self._minimum_jerk_motion(start, target, c)
        return GeneratedMove(kind, tuple(int(j) for j in joints), c,
                             self._with_rest(positions, velocities))

    def _minimum_jerk_motion(self, start: np.ndarray, target: np.ndarray,
                             c: float) -> tuple[np.ndarray, np.ndarray]:
        """Knots (positions, velocities) of the synchronised minimum-jerk move start -> target.

        T = max_j max(15/8 |D_j| / (c v_j), sqrt(10/sqrt(3) |D_j| / (c a_j))), rounded up to a
        whole number of knot intervals, so peak velocity and acceleration stay within c times
        the limits."""
        dist = target - start
        n = self._knots(minimum_jerk_duration(dist, c, self.limits))
        s, ds = minimum_jerk(np.arange(n + 1) / n)
        positions = start + np.outer(s, dist)
        velocities = np.outer(ds, dist) / (n * self._dt)
        positions[0] = start
        return positions, velocities

    def _knots(self, duration: float) -> int:
        """Number of knot intervals covering ``duration`` (rounded up, at least one)."""
        return max(1, math.ceil(duration * self.settings.knot_rate - 1e-9))

    def _with_rest(self, positions: np.ndarray, velocities: np.ndarray) -> PlannedTrajectory:
        """Prepend rest_before at the first knot and append rest_after at the last one."""
        s = self.settings
        before = int(round(s.rest_before * s.knot_rate))
        after = int(round(s.rest_after * s.knot_rate))
        pos = np.vstack([np.repeat(positions[:1], before, axis=0), positions,
                         np.repeat(positions[-1:], after, axis=0)])
        vel = np.vstack([np.zeros((before, pos.shape[1])), velocities,
                         np.zeros((after, pos.shape[1]))])
        times = np.arange(len(pos)) * self._dt
        return PlannedTrajectory(times, pos, vel, None)

    # ------------------------------------------------------------------------------- Cartesian

    def _cartesian(self, start: np.ndarray, c: float) -> Optional[GeneratedMove]:
        """A straight line of the end effector in a random plane, or None if CARTESIAN_TRIES
        directions all fail (IK error, margins, or too slow near a singularity).

        The duration starts from the minimum-jerk peak speed c * cartesian_speed and grows by
        the factor the joint path exceeds c times the joint limits, re-solving the path each
        time, at most DURATION_ROUNDS times and up to MAX_SLOWDOWN times the start value."""
        if self._kinematics is None:
            from panda_sim2real.kinematics import PandaKinematics

            self._kinematics = PandaKinematics(self.limits)
        s = self.settings
        origin, quat = self._kinematics.forward(start)
        plane = list(PLANES)[int(self._rng.integers(len(PLANES)))]
        axes = PLANES[plane]
        for _ in range(CARTESIAN_TRIES):
            angle = self._rng.uniform(0.0, 2.0 * math.pi)
            direction = np.zeros(3)
            direction[axes[0]], direction[axes[1]] = math.cos(angle), math.sin(angle)
            length = self._rng.uniform(*s.cartesian_distance)
            waypoints = origin + np.outer(
                np.arange(1, s.cartesian_waypoints + 2) / (s.cartesian_waypoints + 1),
                length * direction)
            if not self._waypoints_reachable(start, waypoints, quat):
                continue
            nominal = PEAK_VELOCITY * length / (c * s.cartesian_speed)
            duration = nominal
            for _ in range(DURATION_ROUNDS):
                n = self._knots(duration)
                if n * self._dt > MAX_SLOWDOWN * nominal + self._dt:
                    break
                positions = self._line_path(start, origin, length * direction, quat, n)
                if positions is None:
                    break
                velocities = np.zeros_like(positions)
                velocities[1:-1] = (positions[2:] - positions[:-2]) / (2.0 * self._dt)
                excess = self._limit_excess(positions, velocities, c)
                if excess <= 1.0:
                    moved = np.flatnonzero(np.any(positions != start, axis=0))
                    return GeneratedMove("cartesian", tuple(int(j) for j in moved), c,
                                         self._with_rest(positions, velocities),
                                         tuple(tuple(float(v) for v in w) for w in waypoints))
                duration = n * self._dt * excess * 1.02
        return None

    def _waypoints_reachable(self, start: np.ndarray, waypoints: np.ndarray,
                             quat: np.ndarray) -> bool:
        """Quick check before the full path: IK of the waypoints in turn from ``start``."""
        q = start
        for point in waypoints:
            q, ok = self._solve(point, quat, q)
            if not ok:
                return False
        return True

    def _line_path(self, start: np.ndarray, origin: np.ndarray, offset: np.ndarray,
                   quat: np.ndarray, n: int) -> Optional[np.ndarray]:
        """IK at the n + 1 knots of a minimum-jerk line origin -> origin + offset, each seeded
        with the previous knot; None if a knot fails."""
        s, _ = minimum_jerk(np.arange(n + 1) / n)
        positions = np.empty((n + 1, self.limits.dof))
        positions[0] = q = start
        for k in range(1, n + 1):
            q, ok = self._solve(origin + s[k] * offset, quat, q)
            if not ok:
                return None
            positions[k] = q
        return positions

    def _solve(self, point: np.ndarray, quat: np.ndarray,
               seed: np.ndarray) -> tuple[np.ndarray, bool]:
        """IK of one pose; ok if within IK_POSITION/ORIENTATION_TOLERANCE and the margins."""
        from panda_sim2real.kinematics import orientation_error

        q, _ = self._kinematics.solve(point, quat, seed, tol=IK_PATH_TOL, min_iter=IK_PATH_STEPS)
        pos, got = self._kinematics.forward(q)
        ok = (np.linalg.norm(pos - point) <= IK_POSITION_TOLERANCE
              and np.linalg.norm(orientation_error(quat, got)) <= IK_ORIENTATION_TOLERANCE
              and bool(np.all((q >= self._low) & (q <= self._high))))
        return q, ok

    def _limit_excess(self, positions: np.ndarray, velocities: np.ndarray, c: float) -> float:
        """Factor by which the path must be slowed down to meet c times the velocity and
        acceleration limits (<= 1: it meets them). Accelerations are finite differences of the
        knot velocities and second differences of the knot positions."""
        rate = self.settings.knot_rate
        vel = np.max(np.abs(velocities), axis=0) / (c * self.limits.velocity)
        acc = np.maximum(np.max(np.abs(np.diff(velocities, axis=0)), axis=0) * rate,
                         np.max(np.abs(np.diff(positions, 2, axis=0)), axis=0) * rate ** 2)
        acc = acc / (c * self.limits.acceleration)
        return float(max(np.max(vel), math.sqrt(float(np.max(acc)))))
