"""URDF to a kinematic tree of rigid bodies (NumPy, float64), the constants DiffNEA runs on.

Supported joints: revolute, continuous, prismatic (any axis) and fixed; inertial origins with
rpy. Every link but the root becomes a body, in topological order, so that a parent always comes
before its children (the order the recursive Newton-Euler passes need, paper 002 §2). Geometry,
limits and transmissions are ignored: dynamics need only the tree and the inertials.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from diffnea_ros.errors import UrdfError

SUPPORTED_JOINTS = ("revolute", "continuous", "prismatic", "fixed")
MOVABLE_JOINTS = ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class Body:
    """One link and the joint that attaches it to its parent.

    ``origin`` is the 4x4 pose of the joint frame (= this link's frame) in the parent link's
    frame at zero joint position; ``axis`` is a unit vector in this link's frame (zero for a
    fixed joint). ``com`` [m] is in the link frame, ``inertia`` [kg m²] is about the com with the
    link frame's axes (the URDF inertial rpy applied).
    """

    name: str
    parent: int          # index into RobotDescription.bodies, -1 for the root link
    joint_name: str
    joint_type: str
    origin: np.ndarray   # (4, 4)
    axis: np.ndarray     # (3,)
    mass: float
    com: np.ndarray      # (3,)
    inertia: np.ndarray  # (3, 3)
    damping: float = 0.0
    friction: float = 0.0

    @property
    def movable(self) -> bool:
        return self.joint_type in MOVABLE_JOINTS


@dataclass(frozen=True)
class RobotDescription:
    """The tree of a URDF: bodies in topological order and the movable joints."""

    name: str
    root_link: str
    bodies: tuple[Body, ...]
    joint_names: tuple[str, ...]   # movable joints, in body (topological) order
    joint_body: tuple[int, ...]    # body index of each movable joint
    urdf_text: str

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def body_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.bodies)

    def body_index(self, link: str) -> int:
        try:
            return self.body_names.index(link)
        except ValueError:
            raise UrdfError(f"link '{link}' is not a moving link of robot '{self.name}' "
                            f"(links: {', '.join(self.body_names)})") from None


def rpy_matrix(rpy: np.ndarray) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _vector(element: Optional[ET.Element], attribute: str, default: tuple[float, ...],
            where: str) -> np.ndarray:
    text = element.get(attribute) if element is not None else None
    if text is None:
        return np.array(default, dtype=float)
    try:
        values = np.array([float(v) for v in text.split()], dtype=float)
    except ValueError:
        raise UrdfError(f"{where}: {attribute}=\"{text}\" is not a list of numbers") from None
    if values.shape != (len(default),) or not np.all(np.isfinite(values)):
        raise UrdfError(f"{where}: {attribute}=\"{text}\" needs {len(default)} finite numbers")
    return values


def _number(element: Optional[ET.Element], attribute: str, default: float, where: str) -> float:
    return float(_vector(element, attribute, (default,), where)[0])


def _pose(origin: Optional[ET.Element], where: str) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = rpy_matrix(_vector(origin, "rpy", (0.0, 0.0, 0.0), where))
    pose[:3, 3] = _vector(origin, "xyz", (0.0, 0.0, 0.0), where)
    return pose


def _inertial(link: ET.Element) -> tuple[float, np.ndarray, np.ndarray]:
    where = f"link '{link.get('name')}' inertial"
    inertial = link.find("inertial")
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    mass_element = inertial.find("mass")
    mass = _number(mass_element, "value", 0.0, where)
    pose = _pose(inertial.find("origin"), where)
    element = inertial.find("inertia")
    names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    ixx, ixy, ixz, iyy, iyz, izz = (_number(element, n, 0.0, where) for n in names)
    local = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    rotation = pose[:3, :3]
    return mass, pose[:3, 3].copy(), rotation @ local @ rotation.T


def _read_text(source: str) -> str:
    if source.lstrip().startswith("<"):
        return source
    if not os.path.isfile(source):
        raise UrdfError(f"URDF not found: {source} (give a path to a .urdf file or URDF XML text)")
    try:
        with open(source, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UrdfError(f"URDF {source} cannot be read: {exc}") from exc


def load_robot(source: str) -> RobotDescription:
    """Parse a URDF (a file path or the XML text) into a :class:`RobotDescription`.

    Raises :class:`UrdfError` with one line for a missing file, malformed XML, an unsupported
    joint type (floating, planar), a zero axis, or a tree that is not a single tree.
    """
    text = _read_text(source)
    label = source if not source.lstrip().startswith("<") else "URDF text"
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise UrdfError(f"{label} is not valid XML: {exc}") from None
    if root.tag != "robot":
        raise UrdfError(f"{label}: the root element is <{root.tag}>, expected <robot>")
    links = {link.get("name"): link for link in root.findall("link")}
    if not links:
        raise UrdfError(f"{label}: no <link> elements")
    children: dict[str, list[ET.Element]] = {}
    parent_of: dict[str, str] = {}
    for joint in root.findall("joint"):
        name, kind = joint.get("name"), joint.get("type")
        if kind not in SUPPORTED_JOINTS:
            raise UrdfError(f"{label}: joint '{name}' has type '{kind}'; supported are "
                            f"{', '.join(SUPPORTED_JOINTS)} (fix or remove that joint)")
        parent = (joint.find("parent") if joint.find("parent") is not None else ET.Element("x")).get("link")
        child = (joint.find("child") if joint.find("child") is not None else ET.Element("x")).get("link")
        if parent not in links or child not in links:
            raise UrdfError(f"{label}: joint '{name}' connects unknown links "
                            f"'{parent}' -> '{child}'")
        if child in parent_of:
            raise UrdfError(f"{label}: link '{child}' has two parent joints")
        parent_of[child] = parent
        children.setdefault(parent, []).append(joint)
    roots = [name for name in links if name not in parent_of]
    if len(roots) != 1:
        raise UrdfError(f"{label}: expected one root link, found {len(roots)} ({', '.join(roots)})")
    bodies: list[Body] = []
    index: dict[str, int] = {roots[0]: -1}
    stack = list(reversed(children.get(roots[0], [])))
    while stack:   # depth first, children in URDF order (Pinocchio's order)
        joint = stack.pop()
        name, kind = joint.get("name"), joint.get("type")
        where = f"joint '{name}'"
        child = joint.find("child").get("link")
        axis = np.zeros(3)
        if kind in MOVABLE_JOINTS:
            axis = _vector(joint.find("axis"), "xyz", (1.0, 0.0, 0.0), where)
            norm = np.linalg.norm(axis)
            if norm < 1e-12:
                raise UrdfError(f"{label}: {where} has a zero axis")
            axis = axis / norm
        dynamics = joint.find("dynamics")
        mass, com, inertia = _inertial(links[child])
        bodies.append(Body(
            name=child, parent=index[joint.find("parent").get("link")], joint_name=name,
            joint_type=kind, origin=_pose(joint.find("origin"), where), axis=axis, mass=mass,
            com=com, inertia=inertia, damping=_number(dynamics, "damping", 0.0, where),
            friction=_number(dynamics, "friction", 0.0, where)))
        index[child] = len(bodies) - 1
        stack.extend(reversed(children.get(child, [])))
    movable = [i for i, body in enumerate(bodies) if body.movable]
    if not movable:
        raise UrdfError(f"{label}: no movable joint (nothing to identify)")
    _inertial(links[roots[0]])   # checked like every link's, though a fixed root loads no joint
    return RobotDescription(
        name=root.get("name", "robot"), root_link=roots[0],
        bodies=tuple(bodies), joint_names=tuple(bodies[i].joint_name for i in movable),
        joint_body=tuple(movable), urdf_text=text)


def lock_joints(description: RobotDescription, locked: "tuple[str, ...] | list[str]") -> RobotDescription:
    """The same tree with the named movable joints fixed at zero position (like Pinocchio's
    buildReducedModel), e.g. the Panda's finger joints when the data carry the arm's seven."""
    unknown = [n for n in locked if n not in description.joint_names]
    if unknown:
        raise UrdfError(f"cannot lock {unknown}: not movable joints of '{description.name}'")
    bodies = tuple(replace(b, joint_type="fixed", axis=np.zeros(3)) if b.joint_name in locked else b
                   for b in description.bodies)
    movable = tuple(i for i, b in enumerate(bodies) if b.movable)
    if not movable:
        raise UrdfError("locking those joints leaves no movable joint")
    return replace(description, bodies=bodies, joint_names=tuple(bodies[i].joint_name for i in movable),
                   joint_body=movable)


def with_inertials(description: RobotDescription, mass: np.ndarray, com: np.ndarray,
                   inertia: np.ndarray) -> RobotDescription:
    """The same tree with every body's inertials replaced ((nb,), (nb, 3), (nb, 3, 3))."""
    bodies = tuple(replace(b, mass=float(m), com=np.array(c, dtype=float), inertia=np.array(i, dtype=float))
                   for b, m, c, i in zip(description.bodies, mass, com, inertia))
    return replace(description, bodies=bodies)
