"""The cube pose estimate every controller acts on: the object tracker's noisy 10 Hz stream (see
:mod:`perception`) filtered, with missed detections, outliers and wrong-face flips rejected
(paper 004 §IV-C zeroes CIC's damping against the vision noise; here the estimate itself is
made robust, once, for all controllers).

:class:`CubePoseFilter` (settings :class:`PoseFilterConfig`): low-confidence reports skipped, a
constant-velocity Kalman filter with maneuver detection and an outlier gate on the position, a
rate-dependent gate and slerp on the orientation, re-lock after consistent rejections, and a
snap of a cube near the floor to its resting pose (:func:`height_band` gives the height band a
snapped estimate stands for). :class:`ObservationFilter` applies it to a controller's
:class:`Observation` stream, in-process and in the ROS nodes.

Each rule, its parameters and why: README.md, "How the controllers work", "Cube pose filter
(`pose_filter.py`)".
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from trifinger_controllers import cube
from trifinger_controllers.types import CUBE_WIDTH, CubePose, Observation
from trifinger_controllers.errors import TrifingerError


@dataclass(frozen=True)
class PoseFilterConfig:
    """Tuning of :class:`CubePoseFilter` (module docstring)."""

    position_noise_m: float = 0.002
    acceleration_noise: float = 0.3
    maneuver_acceleration: float = 3.0
    #: Normalised innovation squared (3 axes) above which an image counts as a maneuver
    #: (chi-square, 3 degrees of freedom: 11.3 is its 99 % quantile).
    maneuver_nis: float = 11.3
    gate_sigma: float = 5.0
    orientation_gain: float = 0.5
    orientation_gate_deg: float = 30.0
    max_turn_rate_deg_s: float = 180.0
    #: Cap of the orientation gate [deg]: below the smallest wrong-face error (90 deg), however
    #: long the tracker was silent.
    max_orientation_gate_deg: float = 60.0
    relock_images: int = 3
    #: Rejected reports agree with each other (for a re-lock) within this distance [m].
    relock_tolerance_m: float = 0.02
    min_confidence: float = 1e-6
    #: Snap to the resting pose when the lowest corner is below this height [m] ...
    floor_snap_height: float = 0.006
    #: ... and the orientation within this angle [deg] of face-down (0: never snap).
    floor_snap_tilt_deg: float = 8.0
    #: Initial velocity standard deviation [m/s].
    initial_velocity_std: float = 0.05

    def __post_init__(self) -> None:
        positive = ("position_noise_m", "acceleration_noise", "maneuver_acceleration", "maneuver_nis",
                    "gate_sigma", "orientation_gate_deg",
                    "max_turn_rate_deg_s", "max_orientation_gate_deg", "relock_tolerance_m",
                    "initial_velocity_std")
        for key in positive:
            value = getattr(self, key)
            if not (np.isfinite(value) and value > 0):
                raise TrifingerError(f"pose filter: {key} must be positive and finite, got {value!r}")
        if not 0.0 < self.orientation_gain <= 1.0:
            raise TrifingerError(f"pose filter: orientation_gain must be in (0, 1], got {self.orientation_gain!r}")
        if int(self.relock_images) < 1:
            raise TrifingerError(f"pose filter: relock_images must be >= 1, got {self.relock_images!r}")


@dataclass
class FilterCounts:
    """What the filter did so far."""

    reports: int = 0
    accepted: int = 0
    missed: int = 0
    position_outliers: int = 0
    orientation_outliers: int = 0
    relocks: int = 0


def slerp(q0: np.ndarray, q1: np.ndarray, fraction: float) -> np.ndarray:
    """The orientation ``fraction`` of the way from ``q0`` to ``q1`` (shortest path)."""
    delta = cube.relative_rotation_vector(q0, q1)
    return cube.normalize(cube.multiply(cube.from_rotation_vector(fraction * delta), q0))


class CubePoseFilter:
    """Robust filter of the tracker's cube poses (module docstring)."""

    def __init__(self, config: Optional[PoseFilterConfig] = None) -> None:
        self.config = config or PoseFilterConfig()
        self.counts = FilterCounts()
        self._estimate: Optional[CubePose] = None
        self._x = np.zeros((3, 2))                      # per axis: position, velocity
        self._p = np.zeros((2, 2))                      # covariance, the same for every axis
        self._rejected: list[CubePose] = []
        #: Whether the last position update was treated as a maneuver.
        self.maneuver = False

    @property
    def estimate(self) -> Optional[CubePose]:
        """The current estimate (None before the first report), on the floor if resting there."""
        if self._estimate is None:
            return None
        return on_the_floor(self._estimate, self.config)

    def reset(self, report: Optional[CubePose] = None) -> None:
        """Forget everything; start from ``report`` if given."""
        self.counts = FilterCounts()
        self._estimate = None
        self._rejected = []
        if report is not None:
            self.update(report)

    def _start(self, report: CubePose) -> CubePose:
        c = self.config
        self._x[:, 0] = report.position
        self._x[:, 1] = 0.0
        self._p = np.diag([c.position_noise_m ** 2, c.initial_velocity_std ** 2])
        self._rejected = []
        self._estimate = CubePose(np.asarray(report.position, float).copy(),
                                  cube.normalize(np.asarray(report.orientation, float)),
                                  float(report.stamp), float(report.confidence))
        return self._estimate

    def update(self, report: CubePose) -> CubePose:
        """Take one tracker report; returns the (possibly unchanged) estimate."""
        self._update(report)
        estimate = self.estimate
        assert estimate is not None
        return estimate

    def _update(self, report: CubePose) -> CubePose:
        c = self.config
        self.counts.reports += 1
        if self._estimate is None:
            self.counts.accepted += 1
            return self._start(report)
        if not report.confidence >= c.min_confidence:
            self.counts.missed += 1
            return self._estimate
        dt = float(report.stamp) - self._estimate.stamp
        if not dt > 0:        # an old or repeated image
            return self._estimate
        # --- prediction (constant velocity, white acceleration noise; more of it for a maneuver)
        f = np.array([[1.0, dt], [0.0, 1.0]])
        shape = np.array([[dt ** 4 / 4, dt ** 3 / 2], [dt ** 3 / 2, dt ** 2]])
        x = self._x @ f.T
        innovation = np.asarray(report.position, float) - x[:, 0]
        p = f @ self._p @ f.T + c.acceleration_noise ** 2 * shape
        s = p[0, 0] + c.position_noise_m ** 2
        self.maneuver = float(innovation @ innovation) / s > c.maneuver_nis
        if self.maneuver:
            p = p + c.maneuver_acceleration ** 2 * shape
            s = p[0, 0] + c.position_noise_m ** 2
        position_ok = bool(np.all(np.abs(innovation) <= c.gate_sigma * np.sqrt(s)))
        angle = float(np.rad2deg(cube.angle_between(self._estimate.orientation, report.orientation)))
        orientation_ok = angle <= min(c.orientation_gate_deg + c.max_turn_rate_deg_s * dt,
                                      c.max_orientation_gate_deg)
        if not (position_ok and orientation_ok):
            self.counts.position_outliers += not position_ok
            self.counts.orientation_outliers += not orientation_ok
            return self._reject(report)
        # --- correction
        self._rejected = []
        gain = p[:, 0] / s
        self._x = x + innovation[:, None] * gain[None, :]
        self._p = p - np.outer(gain, p[0, :])
        orientation = slerp(self._estimate.orientation, np.asarray(report.orientation, float), c.orientation_gain)
        self.counts.accepted += 1
        self._estimate = CubePose(self._x[:, 0].copy(), orientation, float(report.stamp), float(report.confidence))
        return self._estimate

    def _reject(self, report: CubePose) -> CubePose:
        c = self.config
        agree = all(
            np.linalg.norm(np.asarray(report.position) - np.asarray(r.position)) <= c.relock_tolerance_m
            and np.rad2deg(cube.angle_between(report.orientation, r.orientation)) <= c.orientation_gate_deg
            for r in self._rejected)
        self._rejected = (self._rejected if agree else []) + [report]
        if len(self._rejected) >= c.relock_images:
            self.counts.relocks += 1
            self.counts.accepted += 1
            return self._start(report)
        assert self._estimate is not None
        return self._estimate


def on_the_floor(pose: CubePose, config: PoseFilterConfig) -> CubePose:
    """``pose`` as the resting pose it is within the floor tolerances of (module docstring), or
    ``pose`` itself."""
    if config.floor_snap_tilt_deg <= 0 or cube.lowest_point(pose) > config.floor_snap_height:
        return pose
    resting = cube.nearest_resting_orientation(pose.orientation)
    if np.rad2deg(cube.angle_between(resting, pose.orientation)) > config.floor_snap_tilt_deg:
        return pose
    position = np.asarray(pose.position, dtype=float).copy()
    position[2] = CUBE_WIDTH / 2
    return CubePose(position, resting, pose.stamp, pose.confidence)


def height_band(pose: CubePose, config: Optional[PoseFilterConfig] = None) -> Optional[tuple[float, float]]:
    """The centre heights [m] a snapped estimate ``pose`` allows (lowest, highest), or None
    if ``pose`` was not snapped to the floor (:func:`on_the_floor`; ``config`` as the filter's)."""
    config = config or PoseFilterConfig()
    rest = CUBE_WIDTH / 2
    if config.floor_snap_tilt_deg <= 0 or float(pose.position[2]) != rest:
        return None
    if cube.angle_between(cube.nearest_resting_orientation(pose.orientation), pose.orientation) > 1e-6:
        return None
    return rest, rest + config.floor_snap_height


class ObservationFilter:
    """Replaces each observation's cube pose by the :class:`CubePoseFilter` estimate, feeding the
    filter each image (by stamp) once."""

    def __init__(self, config: Optional[PoseFilterConfig] = None) -> None:
        self.filter = CubePoseFilter(config)
        self._last_stamp: Optional[float] = None

    def reset(self) -> None:
        self.filter.reset()
        self._last_stamp = None

    def __call__(self, observation: Observation) -> Observation:
        report = observation.cube
        if self._last_stamp is None or report.stamp != self._last_stamp:
            self._last_stamp = report.stamp
            self.filter.update(report)
        estimate = self.filter.estimate
        return observation if estimate is None else replace(observation, cube=estimate)
