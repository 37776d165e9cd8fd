"""Robot descriptions carrying compliant-actuator plugin blocks (paper 003 §3.1, Fig. 6 panel B).

One URDF serves the Gazebo ModelPlugin and the embedded simulation: every
``<gazebo><plugin filename="libcompliant_actuator_plugin.so">`` block names a revolute joint, its
actuator model (reference sheet: sea | qbmove | bavs | awas, or a user's type registered by the
library the block names in ``<actuatorLibrary>``), its operation mode 0..6, an optional
``<robotNamespace>`` (default: the robot's name) and any model or joint parameter by the names of
the core's factory. :func:`parse_description` turns the text into a :class:`RobotDescription`
whose :class:`JointSpec` entries hold the actuator and joint parameters already built by
``make_actuator`` / ``make_joint_params``. Each block goes through the core's
``parse_plugin_block`` (plugin_block.hpp), the parser the Gazebo plugin calls on the same block,
so both accept and refuse the same blocks with the same one-line messages; every bad
description raises a one-line :class:`DescriptionError`.
"""
from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Mapping, Optional

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo.errors import CompliantError

PLUGIN_FILENAME = "libcompliant_actuator_plugin.so"
ROTARY_TYPES = ("revolute", "continuous")   # a compliant actuator drives a rotation


class DescriptionError(CompliantError):
    """A robot description the simulation cannot run; the message is one line. A ValueError
    (through :class:`CompliantError`)."""


@dataclass(frozen=True)
class UrdfJoint:
    """A joint of the URDF with the <dynamics> both simulators apply at the link side and its
    <limit> (None where the URDF gives none; lower and upper only for a revolute joint)."""

    name: str
    type: str                  # revolute | continuous | prismatic | fixed | ...
    damping: float = 0.0       # viscous [N m s/rad]
    friction: float = 0.0      # Coulomb (static) friction [N m]
    lower: Optional[float] = None      # [rad]
    upper: Optional[float] = None      # [rad]
    effort: Optional[float] = None     # |torque| limit [N m]
    velocity: Optional[float] = None   # |velocity| limit [rad/s]


@dataclass(frozen=True)
class JointSpec:
    """One plugin block, parsed and validated by the core.

    ``actuator`` and ``params`` are the objects built by ``cag.make_actuator`` and
    ``cag.make_joint_params`` from ``actuator_params`` and ``joint_params`` (the block's
    parameter tags split with ``cag.actuator_parameter_names``).
    """

    plugin: str                          # the plugin's name attribute
    joint: str
    actuator_type: str
    mode: int
    namespace: str                       # robot namespace, without slashes at either end
    actuator_params: Mapping[str, float]
    joint_params: Mapping[str, float]
    actuator: "cag.Actuator" = field(repr=False, compare=False)
    params: "cag.JointParams" = field(repr=False, compare=False)

    @property
    def topic_namespace(self) -> str:
        """NS = /<robot>/<joint> of the per-joint topics (paper 003 §3.1)."""
        return f"/{self.namespace}/{self.joint}"

    def make_joint(self) -> "cag.CompliantJoint":
        """A fresh CompliantJoint for this block (the actuator model is stateless and shared)."""
        return cag.CompliantJoint(self.actuator, self.params)


@dataclass(frozen=True)
class RobotDescription:
    """A parsed robot description: the URDF text, its joints and its compliant joints."""

    name: str
    urdf: str
    joints: tuple[UrdfJoint, ...]        # every URDF joint, in document order
    compliant: tuple[JointSpec, ...]     # one per plugin block, in document order

    @property
    def compliant_names(self) -> tuple[str, ...]:
        return tuple(spec.joint for spec in self.compliant)

    def spec(self, joint: str) -> JointSpec:
        for spec in self.compliant:
            if spec.joint == joint:
                return spec
        raise KeyError(f"joint {joint!r} of robot {self.name!r} has no compliant actuator "
                       f"(compliant joints: {', '.join(self.compliant_names) or 'none'})")

    def urdf_joint(self, joint: str) -> UrdfJoint:
        for j in self.joints:
            if j.name == joint:
                return j
        raise KeyError(f"robot {self.name!r} has no joint {joint!r}")


def parse_description(text: str, source: str = "robot description") -> RobotDescription:
    """Parse URDF text with plugin blocks; DescriptionError (one line, prefixed by ``source``)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise DescriptionError(f"{source}: not well-formed XML ({exc})") from None
    if root.tag != "robot":
        raise DescriptionError(f"{source}: the root element is <{root.tag}>, expected <robot>")
    name = (root.get("name") or "").strip()
    if not name:
        raise DescriptionError(f"{source}: <robot> has no name attribute")
    joints = tuple(_urdf_joint(j, source) for j in root.findall("joint"))
    by_name = {j.name: j for j in joints}
    specs: list[JointSpec] = []
    for plugin in root.iter("plugin"):
        if (plugin.get("filename") or "").strip() != PLUGIN_FILENAME:
            continue
        spec = _joint_spec(plugin, name, by_name, f"{source}: plugin {plugin.get('name', '?')!r}")
        if any(s.joint == spec.joint for s in specs):
            raise DescriptionError(f"{source}: joint {spec.joint!r} has more than one "
                                   f"{PLUGIN_FILENAME} block")
        specs.append(spec)
    return RobotDescription(name=name, urdf=text, joints=joints, compliant=tuple(specs))


def expand_xacro(path: str, args: Optional[Mapping[str, object]] = None) -> str:
    """The URDF text of a .xacro file with ``args`` (name -> value) as its xacro arguments."""
    import xacro

    try:
        doc = xacro.process_file(path, mappings={k: str(v) for k, v in (args or {}).items()})
    except Exception as exc:  # xacro raises XacroException, OSError, ExpatError, NameError...
        raise DescriptionError(f"{path}: xacro failed: {' '.join(str(exc).split())}") from None
    return doc.toprettyxml(indent="  ")


def load_description(path: str, args: Optional[Mapping[str, object]] = None) -> RobotDescription:
    """Parse a .urdf file, or a .xacro file expanded with ``args``."""
    if path.endswith(".xacro"):
        text = expand_xacro(path, args)
    else:
        if args:
            raise DescriptionError(f"{path}: xacro arguments given for a plain URDF")
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise DescriptionError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_description(text, source=os.path.basename(path))


def _float_attr(element: Optional[ET.Element], attr: str, what: str) -> float:
    if element is None or element.get(attr) is None:
        return 0.0
    try:
        value = float(element.get(attr))
    except ValueError:
        raise DescriptionError(f"{what}: {attr}={element.get(attr)!r} is not a number") from None
    if not math.isfinite(value) or value < 0.0:
        raise DescriptionError(f"{what}: {attr} must be a finite number >= 0, got {value}")
    return value


def _urdf_joint(element: ET.Element, source: str) -> UrdfJoint:
    name = (element.get("name") or "").strip()
    if not name:
        raise DescriptionError(f"{source}: a <joint> has no name attribute")
    dynamics = element.find("dynamics")
    what = f"{source}: <dynamics> of joint {name!r}"
    joint_type = (element.get("type") or "").strip()
    limit = element.find("limit")
    what_limit = f"{source}: <limit> of joint {name!r}"
    lower = upper = None
    if joint_type == "revolute" and limit is not None:
        lower, upper = (_limit_attr(limit, key, what_limit, signed=True) for key in ("lower",
                                                                                     "upper"))
        if lower is not None and upper is not None and lower > upper:
            raise DescriptionError(f"{what_limit}: lower {lower:g} > upper {upper:g}")
    return UrdfJoint(name=name, type=joint_type,
                     damping=_float_attr(dynamics, "damping", what),
                     friction=_float_attr(dynamics, "friction", what),
                     lower=lower, upper=upper,
                     effort=_limit_attr(limit, "effort", what_limit),
                     velocity=_limit_attr(limit, "velocity", what_limit))


def _limit_attr(element: Optional[ET.Element], attr: str, what: str,
                signed: bool = False) -> Optional[float]:
    """A <limit> attribute; None when absent (or a magnitude limit of 0: URDF's "none")."""
    if element is None or element.get(attr) is None:
        return None
    try:
        value = float(element.get(attr))
    except ValueError:
        raise DescriptionError(f"{what}: {attr}={element.get(attr)!r} is not a number") from None
    if not math.isfinite(value) or (not signed and value < 0.0):
        raise DescriptionError(f"{what}: {attr} must be a finite number"
                               f"{'' if signed else ' >= 0'}, got {value}")
    return value if signed or value > 0.0 else None


def joint_problem(joints: Mapping[str, UrdfJoint], name: str) -> str:
    """Why the URDF joint ``name`` cannot carry a compliant actuator ("" if it can): the
    embedded simulation's joint check of ``cag.parse_plugin_block`` (the Gazebo plugin checks
    its model's joint)."""
    if name not in joints:
        return f"the URDF has no joint {name!r}"
    if joints[name].type not in ROTARY_TYPES:
        return (f"joint type is {joints[name].type!r}; a compliant actuator drives a revolute "
                f"or continuous joint")
    return ""


def _joint_spec(plugin: ET.Element, robot: str, joints: Mapping[str, UrdfJoint],
                where: str) -> JointSpec:
    """One plugin block through the core's parser, the Gazebo plugin's too
    (``cag.parse_plugin_block``, plugin_block.hpp); the joint is checked against the URDF."""
    tags = [cag.BlockTag(child.tag, child.text or "", len(child) > 0)
            for child in plugin if isinstance(child.tag, str)]   # not comments / PIs
    try:
        block = cag.parse_plugin_block(tags, robot, lambda name: joint_problem(joints, name), where)
    except ValueError as exc:
        raise DescriptionError(str(exc)) from None
    return JointSpec(plugin=plugin.get("name", ""), joint=block.joint,
                     actuator_type=block.actuator_type, mode=block.mode,
                     namespace=block.robot_namespace, actuator_params=block.actuator_params,
                     joint_params=block.joint_params, actuator=block.actuator,
                     params=block.params)
