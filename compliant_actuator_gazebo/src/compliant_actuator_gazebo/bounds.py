"""The physical bounds of a compliant joint (issue 18): what each of its nine inputs accepts and
what its measured states may read, from the robot description (the URDF joint's <limit>, the
motors' torque and velocity limits and end stops, the spring's maximum deflection, the stiffness
preset's domain). Shared by compliant_sim (the per-joint inputs) and compliant_manager (the
whole-robot arrays and the per-joint states it aggregates)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from compliant_actuator_gazebo.description import JointSpec, RobotDescription, UrdfJoint

CONTINUOUS_RANGE = 1000.0
"""|q| [rad] of a joint without position limits (a continuous joint): 160 turns."""
POSITION_MARGIN = 0.2
"""[rad] a measured position may pass its limits by (a joint limit is a stiff spring in the
physics engine, not a wall)."""
RATE_FACTOR = 2.0
"""A measured velocity or torque may pass its limit by this factor (overshoot, impacts)."""
STATE_LIMIT = 1e5
"""Every float of a measured state, whatever it is (stiffness in N m/rad, the finite-difference
velocity of a kinematic motor after a reference step: 10^4 rad/s for a full-range step at 1 kHz)."""
HUGE = 1e300
"""Probe of the preset domain: the model clamps ±HUGE to its limits (a SEA has none)."""


@dataclass(frozen=True)
class Range:
    low: float
    high: float

    def widened(self, margin: float) -> "Range":
        return Range(self.low - margin, self.high + margin)

    def clipped(self, other: "Range") -> "Range":
        return Range(max(self.low, other.low), min(self.high, other.high))

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class JointBounds:
    """One compliant joint's bounds. ``inputs``: the values each input topic accepts (a stiffness
    preset within them but outside ``preset_domain`` is clamped by the core, with a warning).
    The rest bound measured states: link ``position``, ``velocity``, ``effort`` (the link torque),
    and per motor its ``motor_position`` range, ``motor_velocity`` (None: only STATE_LIMIT, for
    the kinematic motors of modes 2 and 3) and ``motor_torque``."""

    joint: str
    inputs: Mapping[str, Range]
    preset_domain: Range
    position: Range
    velocity: float
    effort: float
    motor_position: tuple[Range, Range]
    motor_velocity: tuple[Optional[float], Optional[float]]
    motor_torque: tuple[float, float]


def joint_bounds(spec: JointSpec, urdf: UrdfJoint) -> JointBounds:
    """The bounds of the joint of plugin block ``spec`` whose URDF joint is ``urdf``."""
    actuator, params = spec.actuator, spec.params
    motors = (params.motor1, params.motor2)
    link = Range(urdf.lower, urdf.upper) if urdf.lower is not None and urdf.upper is not None \
        else Range(-CONTINUOUS_RANGE, CONTINUOUS_RANGE)
    effort = urdf.effort or motors[0].torque_limit + motors[1].torque_limit
    deflection = actuator.max_deflection()
    preset = Range(actuator.check_preset(-HUGE), actuator.check_preset(HUGE))
    if preset.width > 2 * CONTINUOUS_RANGE:         # no preset in this model (a SEA)
        preset = Range(0.0, deflection)
    motor_range = [link.widened(deflection).clipped(Range(m.position_min, m.position_max))
                   for m in motors]
    if spec.actuator_type == "awas":                 # motor 2 moves the pivot: the preset
        motor_range[1] = preset
    torque = Range(-effort, effort)
    inputs = {
        "torque_command": torque,
        "external_torque": torque,
        "link_command": link,
        "equilibrium_position": link,
        "reference_1": motor_range[0],
        "reference_2": motor_range[1],
        "stiffness_preset": preset.widened(preset.width),
        "motor_1_command": Range(-motors[0].torque_limit, motors[0].torque_limit),
        "motor_2_command": Range(-motors[1].torque_limit, motors[1].torque_limit),
    }
    dynamic = spec.mode in (4, 5, 6)                 # motors with dynamics (else kinematic or 0)
    return JointBounds(
        joint=spec.joint, inputs=inputs, preset_domain=preset,
        position=link.widened(POSITION_MARGIN),
        velocity=RATE_FACTOR * urdf.velocity if urdf.velocity else STATE_LIMIT,
        effort=RATE_FACTOR * effort,
        motor_position=(motor_range[0].widened(POSITION_MARGIN),
                        motor_range[1].widened(POSITION_MARGIN)),
        motor_velocity=tuple(RATE_FACTOR * m.velocity_limit if dynamic else None
                             for m in motors),
        motor_torque=(RATE_FACTOR * motors[0].torque_limit, RATE_FACTOR * motors[1].torque_limit))


def robot_bounds(description: RobotDescription) -> dict[str, JointBounds]:
    """The bounds of every compliant joint of ``description``, by joint name."""
    return {spec.joint: joint_bounds(spec, description.urdf_joint(spec.joint))
            for spec in description.compliant}
