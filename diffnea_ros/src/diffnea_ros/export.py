"""Writing identified dynamics parameters back out: a copy of the URDF with new inertials and
joint dynamics (for the simulator, closing the loop of paper 002's system identification), and
a YAML summary; :func:`write_identified` writes both, for the ``identify`` tool and the node.

Numbers are written with ``repr`` precision, so parsing them back gives exactly the same
float64 values. Inertials are written about the centre of mass in link-frame axes (origin
``xyz`` = com, ``rpy`` = 0), the convention of :mod:`diffnea_ros.urdf`.
"""
from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import yaml
from sim2real_checks import atomic_path, plain

from diffnea_ros.errors import ConsistencyError, DiffneaError, UrdfError

# (mass [kg], com (3,) [m] in the link frame, inertia (3, 3) [kg m^2] about the com)
LinkInertial = tuple[float, Sequence[float], Sequence[Sequence[float]]]

INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
_INERTIA_INDEX = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
FRICTION_KEYS = ("phi1", "phi2", "phi3")   # tau_f = phi1 / (1 + exp(-phi2 (qd + phi3))) - ...
SYMMETRY_TOLERANCE = 1e-9                  # relative asymmetry accepted in an inertia matrix

ET.register_namespace("xacro", "http://www.ros.org/wiki/xacro")
_PROLOG_ITEM = re.compile(r"\s+|<!--.*?-->|<\?.*?\?>|<!DOCTYPE[^>]*>", re.S)
_DECLARATION = re.compile(r"\s*<\?xml[^>]*\?>\s*")


def _number(value: float, what: str) -> float:
    x = float(value)
    if not math.isfinite(x):
        raise ConsistencyError(f"{what} is {x}; only finite parameters can be exported")
    return x


def _fmt(*values: float) -> str:
    return " ".join(repr(float(v)) for v in values)


def _checked_inertial(name: str, inertial: LinkInertial) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, com (3,), symmetric inertia (3, 3)) as float64, finite and well shaped."""
    try:
        mass, com, inertia = inertial
    except (TypeError, ValueError):
        raise DiffneaError(f"link {name}: expected (mass, com, inertia), got "
                           f"{inertial!r}") from None
    mass = _number(mass, f"mass of link {name}")
    com = np.asarray(com, dtype=np.float64)
    inertia = np.asarray(inertia, dtype=np.float64)
    if com.shape != (3,) or inertia.shape != (3, 3):
        raise DiffneaError(f"link {name}: com must be (3,) and inertia (3, 3), got {com.shape} "
                           f"and {inertia.shape}")
    if not (np.all(np.isfinite(com)) and np.all(np.isfinite(inertia))):
        raise ConsistencyError(f"link {name} has a non-finite com or inertia; only finite "
                               f"parameters can be exported")
    scale = max(float(np.max(np.abs(inertia))), np.finfo(np.float64).tiny)
    if np.max(np.abs(inertia - inertia.T)) > SYMMETRY_TOLERANCE * scale:
        raise ConsistencyError(f"inertia of link {name} is not symmetric")
    return mass, com, inertia


def _parse(urdf_text: str) -> ET.Element:
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    try:
        root = ET.fromstring(urdf_text, parser=parser)
    except ET.ParseError as exc:
        raise UrdfError(f"URDF is not valid XML: {exc}") from None
    if root.tag != "robot":
        raise UrdfError(f"URDF root element is <{root.tag}>, expected <robot>")
    return root


def _prolog(urdf_text: str) -> str:
    """The comments etc. before the root element (ElementTree drops them), without the XML
    declaration."""
    position = 0
    while (match := _PROLOG_ITEM.match(urdf_text, position)) and match.end() > position:
        position = match.end()
    prolog = urdf_text[:position]
    declaration = _DECLARATION.match(prolog)
    return prolog[declaration.end():] if declaration else prolog.lstrip()


def _by_name(root: ET.Element, tag: str, names: Sequence[str]) -> dict[str, ET.Element]:
    elements = {e.get("name"): e for e in root.findall(tag)}
    unknown = [n for n in names if n not in elements]
    if unknown:
        raise UrdfError(f"no {tag} named {', '.join(unknown)} in URDF robot "
                        f"{root.get('name')!r} (it has {', '.join(filter(None, elements))})")
    return {name: elements[name] for name in names}


def _indent_before(parent: ET.Element, child: ET.Element) -> str:
    """The whitespace that precedes ``child`` inside ``parent`` (for tidy output)."""
    previous = None
    for element in parent:
        if element is child:
            break
        previous = element
    text = parent.text if previous is None else previous.tail
    return text.rsplit("\n", 1)[-1] if text and text.strip() == "" and "\n" in text else ""


def _inertial_element(mass: float, com: np.ndarray, inertia: np.ndarray,
                      indent: str) -> ET.Element:
    step = "  "
    inertial = ET.Element("inertial")
    inertial.text = "\n" + indent + step
    ET.SubElement(inertial, "origin", xyz=_fmt(*com), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=_fmt(mass))
    ET.SubElement(inertial, "inertia",
                  {key: _fmt(inertia[i, j]) for key, (i, j) in zip(INERTIA_KEYS, _INERTIA_INDEX)})
    for child in inertial:
        child.tail = "\n" + indent + step
    inertial[-1].tail = "\n" + indent
    return inertial


def _set_inertial(link: ET.Element, mass: float, com: np.ndarray, inertia: np.ndarray) -> None:
    old = link.find("inertial")
    if old is None:
        indent = _indent_before(link, link[0]) if len(link) else ""
        new = _inertial_element(mass, com, inertia, indent)
        new.tail = link.text if link.text and not link.text.strip() else None
        link.insert(0, new)
        return
    new = _inertial_element(mass, com, inertia, _indent_before(link, old))
    new.tail = old.tail
    link[list(link).index(old)] = new


def _set_dynamics(joint: ET.Element, attributes: Mapping[str, float]) -> None:
    dynamics = joint.find("dynamics")
    if dynamics is None:
        dynamics = ET.SubElement(joint, "dynamics")
        if len(joint) > 1:
            previous = joint[-2]
            dynamics.tail, previous.tail = previous.tail, (joint.text or previous.tail)
    for key, value in attributes.items():
        dynamics.set(key, _fmt(value))


def export_urdf(urdf_text: str, links: Mapping[str, LinkInertial],
                damping: Optional[Mapping[str, float]] = None,
                friction: Optional[Mapping[str, float]] = None) -> str:
    """A copy of ``urdf_text`` with the ``<inertial>`` of every link in ``links`` replaced by
    (mass, com, inertia about the com in link axes), and ``<dynamics damping=.. friction=..>``
    set on the joints in ``damping`` / ``friction`` (URDF's viscous damping [N m s/rad] and
    Coulomb friction [N m]; other attributes are kept). Everything else is left as it was
    (comments included, also those before <robot>). Unknown link or joint names raise
    :class:`UrdfError`; non-finite or asymmetric values :class:`ConsistencyError`. Physical
    consistency is not checked here.
    """
    damping, friction = dict(damping or {}), dict(friction or {})
    root = _parse(urdf_text)
    link_elements = _by_name(root, "link", list(links))
    joint_elements = _by_name(root, "joint", list(dict.fromkeys([*damping, *friction])))
    for name, inertial in links.items():
        _set_inertial(link_elements[name], *_checked_inertial(name, inertial))
    for name, joint in joint_elements.items():
        attributes = {}
        if name in damping:
            attributes["damping"] = _number(damping[name], f"damping of joint {name}")
        if name in friction:
            attributes["friction"] = _number(friction[name], f"friction of joint {name}")
        _set_dynamics(joint, attributes)
    return ('<?xml version="1.0" ?>\n' + _prolog(urdf_text) + ET.tostring(root, encoding="unicode")
            + "\n")


def export_yaml(links: Mapping[str, LinkInertial],
                damping: Optional[Mapping[str, float]] = None,
                friction: Optional[Mapping[str, Sequence[float]]] = None,
                metadata: Optional[Mapping[str, Any]] = None,
                torque_offset: Optional[Mapping[str, float]] = None) -> str:
    """The identified parameters as YAML::

        links:      {<link>: {mass, com: [x, y, z], inertia: {ixx, ixy, ixz, iyy, iyz, izz}}}
        joints:     [<joint>, ...]        # union of the damping and friction joints, in order
        damping:    [...]                 # per joint [N m s/rad], if given
        friction:   {phi1: [...], phi2: [...], phi3: [...]}   # per joint, if given
        torque_offset: [...]              # per joint [N m], the torque sensor's bias, if given
        metadata:   {...}                 # e.g. parametrisation, data source, NMSE, consistency

    ``friction`` maps joints to the (phi1, phi2, phi3) of the sigmoid friction
    tau_f = phi1 / (1 + exp(-phi2 (qd + phi3))) - phi1 / (1 + exp(-phi2 phi3)), the layout of
    reference/panda_dynamics.yaml. When both are given, damping and friction must name the same
    joints. Floats are written with repr precision (exact round trip).
    """
    damping, friction = dict(damping or {}), dict(friction or {})
    offset = dict(torque_offset or {})
    for other, what in ((friction, "friction"), (offset, "torque offset")):
        if damping and other and set(damping) != set(other):
            raise DiffneaError(f"damping and {what} name different joints: "
                               f"{sorted(set(damping) ^ set(other))}")
    out: dict[str, Any] = {"links": {}}
    for name, inertial in links.items():
        mass, com, inertia = _checked_inertial(name, inertial)
        out["links"][str(name)] = {
            "mass": mass, "com": [float(c) for c in com],
            "inertia": {k: float(inertia[i, j]) for k, (i, j) in zip(INERTIA_KEYS, _INERTIA_INDEX)}}
    joints = list(damping or friction)
    if joints:
        out["joints"] = [str(j) for j in joints]
    if damping:
        out["damping"] = [_number(damping[j], f"damping of joint {j}") for j in joints]
    if friction:
        values = {}
        for j in joints:
            phi = np.asarray(friction[j], dtype=np.float64)
            if phi.shape != (3,):
                raise DiffneaError(f"friction of joint {j} must be (phi1, phi2, phi3), got "
                                   f"{friction[j]!r}")
            values[j] = [_number(p, f"{k} of joint {j}") for k, p in zip(FRICTION_KEYS, phi)]
        out["friction"] = {k: [values[j][i] for j in joints] for i, k in enumerate(FRICTION_KEYS)}
    if offset:
        joints = joints or list(offset)
        out.setdefault("joints", [str(j) for j in joints])
        out["torque_offset"] = [_number(offset[j], f"torque offset of joint {j}") for j in joints]
    if metadata:
        out["metadata"] = plain(metadata)
    return yaml.safe_dump(out, sort_keys=False, default_flow_style=None, width=100)


def write_text_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (``sim2real_checks.outputs.atomic_path``): readers
    never see a half-written file. Its folder must exist; :class:`DiffneaError` on failure."""
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise DiffneaError(f"cannot write {path}: its folder does not exist")
    try:
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise DiffneaError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_identified(urdf_path: str, yaml_path: Optional[str], urdf_text: str,
                     links: Mapping[str, LinkInertial], damping: Mapping[str, float],
                     friction: Optional[Mapping[str, Sequence[float]]] = None,
                     metadata: Optional[Mapping[str, Any]] = None,
                     make_folders: bool = False,
                     torque_offset: Optional[Mapping[str, float]] = None) -> tuple[str, str]:
    """An identified model: ``urdf_text`` with the learnt ``links`` and ``damping``
    (:func:`export_urdf`) at ``urdf_path`` and the parameters (:func:`export_yaml`, with the
    ``friction`` and ``torque_offset`` found) at
    ``yaml_path`` (None: beside the URDF, .yaml), each atomically. Relative paths are resolved
    against the working directory. Returns the two absolute paths; :class:`DiffneaError` (one
    line, nothing written) for a path not ending in .urdf or, unless ``make_folders``, a folder
    that does not exist."""
    if not urdf_path.endswith(".urdf"):
        beside = " (the YAML is written beside it with .yaml)" if yaml_path is None else ""
        raise DiffneaError(f"URDF path {urdf_path!r} must end in .urdf{beside}")
    urdf_path = os.path.abspath(os.path.expanduser(urdf_path))
    yaml_path = (urdf_path[:-len(".urdf")] + ".yaml" if yaml_path is None
                 else os.path.abspath(os.path.expanduser(yaml_path)))
    for path in (urdf_path, yaml_path):
        folder = os.path.dirname(path)
        if make_folders:
            os.makedirs(folder, exist_ok=True)
        elif not os.path.isdir(folder):
            raise DiffneaError(f"cannot write {path}: directory {folder} does not exist")
    urdf = export_urdf(urdf_text, links, damping)
    text = export_yaml(links, damping, friction, metadata, torque_offset)
    write_text_atomic(urdf_path, urdf)
    write_text_atomic(yaml_path, text)
    return urdf_path, yaml_path
