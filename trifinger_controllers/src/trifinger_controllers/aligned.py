"""A policy preceded by the cube alignment primitives (paper 004 §IV-D: slide to the centre,
90 degree flip to change the upward face, yaw rotation; then grasp and move to the goal).

:func:`plan` decides from the (filtered) cube pose and the goal which primitives of
:mod:`alignment` are needed (flips for the goal's up face, slides where a flip would roll the
cube far out, yaw turns above the policy's "far off" threshold :data:`YAW_THRESHOLDS_DEG`), with
their predicted outcomes. :class:`AlignedController` runs each until done or its timeout (a
:class:`Release` lets go after a slide or a yaw turn), re-plans, and hands over to the policy;
every child is called on its own period within the chain's common ``rate_hz``.

The planning rules, the thresholds and why, and the rates: README.md, "How the controllers
work", "Alignment (`aligned.py`)".
"""
from __future__ import annotations

import dataclasses
import enum
import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

from trifinger_controllers import cube
from trifinger_controllers.alignment import CENTRE, Flip, SlideToCentre, YawRotation
from trifinger_controllers.controllers.base import Controller
from trifinger_controllers.evaluation import control_period
from trifinger_controllers.controllers.cic_terms import impedance_torques
from trifinger_controllers.controllers.saturation import fit_to_limit
from trifinger_controllers.grasps import GraspError
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.types import CUBE_WIDTH, N_FINGERS, N_JOINTS, PHYSICS_RATE, CubePose, Observation
from trifinger_controllers.errors import TrifingerError

#: The primitives' rate [Hz] (all three are 100 Hz controllers).
PRIMITIVE_RATE_HZ = 100.0
#: "Far off" per policy [deg]: the yaw above which the chain turns the cube before the policy
#: (README, "Alignment"). Chosen on pure yaw errors of 30-90 deg in simulation: CPC-TG turns such
#: a cube itself, and MP-PG did with the ideal camera (with the tracker model not always), so
#: only a yaw beyond 90 deg is turned first; CIC-CG keeps more of a large yaw, so it is turned
#: first above 60 deg (a turn at smaller errors left Table II trials worse). The runs per policy
#: and angle: results/yaw_errors/ (RESULTS.md). Other policies: the default, 15 deg.
YAW_THRESHOLDS_DEG = {"cpc": 90.0, "cic": 60.0, "mp": 90.0}
_Z = np.array([0.0, 0.0, 1.0])


class Primitive(enum.Enum):
    SLIDE = "slide"
    FLIP = "flip"
    YAW = "yaw"
    #: Not planned: the chain lets go of the cube this way after a slide or a yaw (:class:`Release`).
    RELEASE = "release"


@dataclasses.dataclass(frozen=True)
class Step:
    """One planned primitive: ``face`` is the side face a flip pushes to the top (cube frame,
    cube.FACE_NORMALS order), ``angle`` [rad] a yaw turn about the vertical, ``target`` [m] the
    horizontal position a slide goes to (the centre by default)."""

    primitive: Primitive
    face: Optional[int] = None
    angle: float = 0.0
    target: Tuple[float, float] = (0.0, 0.0)


@dataclasses.dataclass(frozen=True)
class AlignmentConfig:
    """When the chain aligns and how long it may try (module docstring)."""

    yaw_threshold_deg: float = 15.0
    max_turn_deg: float = 45.0
    slide_distance: float = 0.08
    slide_timeout: float = 10.0
    flip_timeout: float = 8.0
    yaw_timeout: float = 7.0
    max_primitives: int = 8
    max_seconds: float = 20.0

    def __post_init__(self) -> None:
        for key in ("yaw_threshold_deg", "max_turn_deg", "slide_distance", "slide_timeout",
                    "flip_timeout", "yaw_timeout", "max_seconds"):
            value = getattr(self, key)
            if not (math.isfinite(value) and value > 0):
                raise TrifingerError(f"alignment: {key} must be positive and finite, got {value!r}")
        if self.max_turn_deg > 90.0:
            raise TrifingerError(f"alignment: max_turn_deg must be at most 90, got {self.max_turn_deg!r}")
        if int(self.max_primitives) < 0:
            raise TrifingerError(f"alignment: max_primitives must be >= 0, got {self.max_primitives!r}")

    @classmethod
    def for_policy(cls, name: str, **overrides: float) -> "AlignmentConfig":
        """The configuration with policy ``name``'s yaw threshold (:data:`YAW_THRESHOLDS_DEG`; a
        residual ``"cpc+rpl"`` counts as its base) and ``overrides``."""
        threshold = YAW_THRESHOLDS_DEG.get(name.split("+")[0], cls.yaw_threshold_deg)
        return dataclasses.replace(cls(yaw_threshold_deg=threshold), **overrides)

    def timeout(self, primitive: Primitive) -> float:
        """Longest run [s] of ``primitive`` before the chain re-plans."""
        return {Primitive.SLIDE: self.slide_timeout, Primitive.FLIP: self.flip_timeout,
                Primitive.YAW: self.yaw_timeout, Primitive.RELEASE: 2 * Release.SECONDS}[primitive]


# ------------------------------------------------------------------------------ planning
def side_faces(orientation: np.ndarray) -> List[int]:
    """The four faces of a resting cube whose normals are horizontal (cube frame indices)."""
    normals = cube.rotate(orientation, cube.FACE_NORMALS)
    return [f for f in range(6) if abs(normals[f][2]) < 0.5]


def flipped(orientation: np.ndarray, face: int) -> np.ndarray:
    """The resting orientation after the ideal :class:`alignment.Flip` of side ``face``: a
    90 deg roll about the bottom edge opposite the face, which brings the face on top."""
    n = cube.rotate(orientation, cube.FACE_NORMALS[face])
    n = np.array([n[0], n[1], 0.0])
    axis = np.cross(_Z, -n / np.linalg.norm(n))
    return cube.nearest_resting_orientation(
        cube.multiply(cube.from_axis_angle(axis, np.pi / 2), orientation))


def yaw_error(orientation: np.ndarray, goal_orientation: np.ndarray) -> float:
    """Signed turn [rad, -pi..pi] about the vertical from the resting orientation nearest to
    ``orientation`` to the one nearest to ``goal_orientation`` (both with the same up face)."""
    relative = cube.relative(cube.nearest_resting_orientation(orientation),
                             cube.nearest_resting_orientation(goal_orientation))
    angle = 2.0 * math.atan2(float(relative[2]), float(relative[3]))
    return float(np.angle(np.exp(1j * angle)))


def _horizontal_normal(orientation: np.ndarray, face: int) -> np.ndarray:
    n = cube.rotate(orientation, cube.FACE_NORMALS[face])[:2]
    return n / np.linalg.norm(n)


def _flips(position: np.ndarray, orientation: np.ndarray, faces: Sequence[int],
           config: AlignmentConfig) -> Tuple[List[Step], np.ndarray, np.ndarray]:
    """The steps that push ``faces`` up in turn from ``position`` (horizontal, from the centre)
    and ``orientation``, and the predicted position and orientation after them. A flip rolls the
    cube one width away from the pushed face; when it would start or land more than
    ``slide_distance`` from the centre, a slide first moves the cube towards the pushed face so
    that the flips rolling the same way from there end as far beyond the centre as they start
    before it (one flip: half a width either side; two: a width)."""
    rolls, turned = [], orientation
    for face in faces:
        rolls.append(-_horizontal_normal(turned, face))
        turned = flipped(turned, face)
    steps: List[Step] = []
    for i, face in enumerate(faces):
        if i == 0 or rolls[i] @ rolls[i - 1] < 0.99:    # a run of flips rolling the same way
            run = 1
            while i + run < len(rolls) and rolls[i + run] @ rolls[i] > 0.99:
                run += 1
            stops = position + CUBE_WIDTH * np.arange(run + 1)[:, None] * rolls[i]
            if np.linalg.norm(stops, axis=1).max() > config.slide_distance:
                position = -0.5 * run * CUBE_WIDTH * rolls[i]
                steps.append(Step(Primitive.SLIDE, target=(float(position[0]), float(position[1]))))
        steps.append(Step(Primitive.FLIP, face=face))
        orientation, position = flipped(orientation, face), position + CUBE_WIDTH * rolls[i]
    return steps, position, orientation


def plan(pose: CubePose, goal: CubePose, config: Optional[AlignmentConfig] = None) -> List[Step]:
    """The primitives that bring the cube at ``pose`` to ``goal``'s up face and yaw, in order
    (empty: hand over to the policy), predicted with each primitive's ideal outcome; of the ways
    to turn the cube upside down, the one with the fewest steps, then the least yaw left. See
    the module docstring."""
    config = config or AlignmentConfig()
    position = np.asarray(pose.position[:2], float) - CENTRE[:2]
    orientation = cube.nearest_resting_orientation(pose.orientation)
    target = cube.nearest_resting_orientation(goal.orientation)
    up, wanted = cube.up_face(orientation), cube.up_face(target)
    if wanted == up:
        choices: List[List[int]] = [[]]
    elif wanted == cube.OPPOSITE_FACE[up]:
        choices = [[first, wanted] for first in side_faces(orientation)]
    else:
        choices = [[wanted]]
    best: Optional[Tuple[Tuple[int, float], List[Step]]] = None
    for faces in choices:
        steps, end, turned = _flips(position, orientation, faces, config)
        if not faces and np.linalg.norm(end) > config.slide_distance:
            steps.append(Step(Primitive.SLIDE))
        turn = yaw_error(turned, target)
        if abs(turn) > math.radians(config.yaw_threshold_deg):
            count = math.ceil(abs(turn) / math.radians(config.max_turn_deg))
            steps.extend(Step(Primitive.YAW, angle=turn / count) for _ in range(count))
        if best is None or (len(steps), abs(turn)) < best[0]:
            best = ((len(steps), abs(turn)), steps)
    assert best is not None
    return best[1]


# ------------------------------------------------------------------------------ the chain
class Release(Controller):
    """Let go of a resting cube that a slide or a yaw turn still grasps: the fingertips back off
    horizontally, ``DISTANCE`` [m] away from the cube's centre, then rise ``RISE`` [m]; ``done``
    after ``SECONDS``. Without it the next controller's approach lifted the contacts off the cube
    and dragged it onto an edge (measured: a CIC-CG episode at 35 deg, tipped at the handover)."""

    name = "release"
    rate_hz = PRIMITIVE_RATE_HZ
    DISTANCE = 0.03
    RISE = 0.03
    SECONDS = 0.6

    def __init__(self, kinematics: FingerKinematics) -> None:
        self.kin = kinematics
        self.done = False

    def reset(self, observation: Observation) -> None:
        tips = self.kin.tip_positions(observation.robot.position)
        away = tips - np.asarray(observation.cube.position, float)
        away[:, 2] = 0.0
        self._away = away / np.maximum(np.linalg.norm(away, axis=1, keepdims=True), 1e-9)
        self._tips = tips
        self._t0 = observation.robot.time
        self.done = False

    def _torque(self, observation: Observation) -> np.ndarray:
        q = observation.robot.position
        s = (observation.robot.time - self._t0) / self.SECONDS
        self.done = s >= 1.0
        target = (self._tips + min(1.0, 2.0 * s) * self.DISTANCE * self._away
                  + float(np.clip(2.0 * s - 1.0, 0.0, 1.0)) * self.RISE * _Z)
        jac = self.kin.tip_jacobians(q)
        velocity = np.einsum("fij,fj->fi", jac, observation.robot.velocity.reshape(N_FINGERS, 3))
        tau = impedance_torques(None, jac, target - self.kin.tip_positions(q), velocity,
                                np.full(3, Flip.STIFFNESS), Flip.DAMPING, isotropic=True)
        return fit_to_limit(tau, self.kin.gravity(q).reshape(N_FINGERS, 3)).reshape(-1)


@dataclasses.dataclass
class StepRecord:
    """One primitive the chain ran: ``done`` if it finished before its timeout; ``error`` if it
    could not start (e.g. no reachable grasp: the chain then hands over)."""

    step: Step
    start: float
    end: Optional[float] = None
    done: bool = False
    error: Optional[str] = None


class AlignedController(Controller):
    """``policy`` preceded by the alignment primitives that :func:`plan` asks for (module
    docstring; ``config`` defaults to :meth:`AlignmentConfig.for_policy`). Name
    ``"<policy>+align"``; :attr:`records` lists the primitives run (with a :class:`Release` after
    each slide and yaw turn), :attr:`handover` the simulated time [s] the policy took over (None
    before)."""

    def __init__(self, policy: Controller, config: Optional[AlignmentConfig] = None,
                 kinematics: Optional[FingerKinematics] = None) -> None:
        self.policy = policy
        self.config = config or AlignmentConfig.for_policy(policy.name)
        self.kin = kinematics or getattr(policy, "kin", None) or FingerKinematics()
        self.name = f"{policy.name}+align"
        self._policy_period = control_period(policy)
        self._primitive_period = max(1, int(round(PHYSICS_RATE / PRIMITIVE_RATE_HZ)))
        self.rate_hz = PHYSICS_RATE / math.gcd(self._policy_period, self._primitive_period)
        self.records: List[StepRecord] = []
        self.handover: Optional[float] = None
        self._active: Controller = policy
        self._active_period = self._policy_period
        self._next_step = 0
        self._torque_held = np.zeros(N_JOINTS)
        self._start = 0.0
        self._asynchronous = False

    def set_asynchronous_planning(self, enabled: bool) -> None:
        """Forwarded to the policy and to every primitive the chain starts."""
        self._asynchronous = bool(enabled)
        self.policy.set_asynchronous_planning(enabled)

    def reset(self, observation: Observation) -> None:
        self.records = []
        self.handover = None
        self._start = observation.robot.time
        self._torque_held = np.zeros(N_JOINTS)
        self._next(observation)

    def _primitive(self, step: Step) -> Controller:
        if step.primitive is Primitive.RELEASE:
            return Release(self.kin)
        if step.primitive is Primitive.SLIDE:
            return SlideToCentre(kinematics=self.kin, target=step.target)
        if step.primitive is Primitive.FLIP:
            return Flip(face=step.face, kinematics=self.kin)
        return YawRotation(step.angle, kinematics=self.kin)

    def _next(self, observation: Observation) -> None:
        """Start the next planned primitive (a release first after a slide or a yaw turn), or
        hand over to the policy."""
        t = observation.robot.time
        last = self.records[-1].step.primitive if self.records else None
        if last in (Primitive.SLIDE, Primitive.YAW):
            steps = [Step(Primitive.RELEASE)]
        else:
            planned = sum(r.step.primitive is not Primitive.RELEASE for r in self.records)
            out_of_budget = planned >= self.config.max_primitives or t - self._start >= self.config.max_seconds
            steps = [] if out_of_budget else plan(observation.cube, observation.goal, self.config)
        if steps:
            record = StepRecord(steps[0], start=t)
            self.records.append(record)
            primitive = self._primitive(steps[0])
            primitive.set_asynchronous_planning(self._asynchronous)
            try:
                primitive.reset(observation)
            except (GraspError, ValueError) as exc:   # no reachable grasp, no such side face
                record.end, record.error = t, f"{type(exc).__name__}: {exc}"
            else:
                self._activate(primitive, self._primitive_period, observation)
                return
        self.handover = t
        self.policy.reset(observation)
        self._activate(self.policy, self._policy_period, observation)

    def _activate(self, controller: Controller, period: int, observation: Observation) -> None:
        self._active = controller
        self._active_period = period
        self._next_step = observation.robot.step

    def _torque(self, observation: Observation) -> np.ndarray:
        if self.handover is None:
            record = self.records[-1]
            finished = bool(getattr(self._active, "done", False))
            if finished or observation.robot.time - record.start >= self.config.timeout(record.step.primitive):
                record.end, record.done = observation.robot.time, finished
                self._next(observation)
        if observation.robot.step >= self._next_step:
            self._torque_held = self._active.compute(observation)
            self._next_step = observation.robot.step + self._active_period
        return self._torque_held
