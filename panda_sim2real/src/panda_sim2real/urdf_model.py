"""URDF handling for the physics back-ends: load, check, override inertials, strip geometry.

The dynamics only need the kinematic tree and the inertials, so geometry is removed (no mesh
paths to resolve, no collisions) and the gripper's finger joints are fixed. The same text is
loaded by PyBullet and MuJoCo, so both engines see one model.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Iterable, Mapping, Optional

from panda_sim2real.errors import ConfigError
from panda_sim2real.robot_config import Inertial

FINGER_JOINTS = ("panda_finger_joint1", "panda_finger_joint2")


def nominal_urdf_path() -> str:
    """The Panda URDF shipped in pybullet_data: guessed masses, diag(0.1) inertias, no friction."""
    import pybullet_data

    return os.path.join(pybullet_data.getDataPath(), "franka_panda", "panda.urdf")


def load_urdf(path: Optional[str]) -> ET.Element:
    """Parse ``path`` (``None``: the nominal Panda URDF) into an element tree root."""
    path = path or nominal_urdf_path()
    if not os.path.isfile(path):
        raise ConfigError(f"URDF not found: {path}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ConfigError(f"URDF {path} is not valid XML: {exc}") from exc
    if root.tag != "robot":
        raise ConfigError(f"URDF {path}: the root element is <{root.tag}>, expected <robot>")
    return root


def movable_joints(root: ET.Element) -> list[str]:
    """Names of the revolute/prismatic/continuous joints, in document order."""
    return [j.get("name", "") for j in root.iter("joint")
            if j.get("type") in ("revolute", "prismatic", "continuous")]


def check_joints(root: ET.Element, joint_names: Iterable[str], source: str) -> None:
    """Raise ConfigError unless every name in ``joint_names`` is a movable joint of the URDF."""
    present = set(movable_joints(root))
    missing = [n for n in joint_names if n not in present]
    if missing:
        raise ConfigError(f"URDF {source} lacks the joints {missing}")


def prepare_dynamics_urdf(root: ET.Element, inertials: Mapping[str, Inertial],
                          fixed_joints: Iterable[str] = FINGER_JOINTS) -> str:
    """Return URDF text for simulation: geometry removed, ``fixed_joints`` fixed, and the
    inertial of every link named in ``inertials`` replaced."""
    root = _copy(root)
    links = {link.get("name"): link for link in root.iter("link")}
    unknown = [name for name in inertials if name not in links]
    if unknown:
        raise ConfigError(f"inertial overrides name links the URDF does not have: {unknown}")
    for link in links.values():
        for tag in ("visual", "collision"):
            for child in link.findall(tag):
                link.remove(child)
    for name, inertial in inertials.items():
        _set_inertial(links[name], inertial)
    fixed = set(fixed_joints)
    for joint in root.iter("joint"):
        if joint.get("name") in fixed:
            joint.set("type", "fixed")
            for tag in ("limit", "dynamics", "safety_controller"):
                for child in joint.findall(tag):
                    joint.remove(child)
    return ET.tostring(root, encoding="unicode")


def mujoco_urdf(urdf_text: str) -> str:
    """The same URDF with MuJoCo's compiler options: keep every body (no fusing of fixed links,
    so link frames stay those of the URDF) and take the inertials exactly as written."""
    root = ET.fromstring(urdf_text)
    for old in root.findall("mujoco"):
        root.remove(old)
    ext = ET.SubElement(root, "mujoco")
    ET.SubElement(ext, "compiler", {"discardvisual": "true", "fusestatic": "false",
                                    "balanceinertia": "false", "strippath": "false",
                                    "angle": "radian"})
    return ET.tostring(root, encoding="unicode")


def _set_inertial(link: ET.Element, inertial: Inertial) -> None:
    for old in link.findall("inertial"):
        link.remove(old)
    node = ET.SubElement(link, "inertial")
    ET.SubElement(node, "origin", {"xyz": " ".join(repr(float(c)) for c in inertial.com),
                                   "rpy": "0 0 0"})
    ET.SubElement(node, "mass", {"value": repr(float(inertial.mass))})
    ixx, iyy, izz, ixy, ixz, iyz = (repr(float(v)) for v in inertial.inertia)
    ET.SubElement(node, "inertia", {"ixx": ixx, "iyy": iyy, "izz": izz,
                                    "ixy": ixy, "ixz": ixz, "iyz": iyz})


def _copy(root: ET.Element) -> ET.Element:
    return ET.fromstring(ET.tostring(root, encoding="unicode"))
