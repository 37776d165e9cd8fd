"""The plugin blocks of the example robots, and bad variants of them, through the one parser the
Gazebo plugin and the embedded simulation share (``compliant::parse_plugin_block``,
plugin_block.hpp). Gazebo is not installed here, so the plugin's side is ``plugin_block_check``
(test/plugin_block_check.cpp, built by catkin): it calls the parser as the plugin's Load() does
(one BlockTag per child element of the block, a joint check standing in for the Gazebo model's)
and builds and steps the core the plugin would run. Each block must give the same line there as
through description.py, and the values or the message this test expects."""
from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Optional

import pytest

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo.description import (PLUGIN_FILENAME, DescriptionError,
                                                   expand_xacro, joint_problem,
                                                   parse_description)

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (source name, xacro file, xacro args): every example robot, and the rostests' robot
ROBOTS = [
    *((f"one_dof_{a}", "urdf/one_dof.urdf.xacro", {"actuator": a}) for a in cag.actuator_types()),
    ("one_dof_sea_fig8", "urdf/one_dof.urdf.xacro",
     {"actuator": "sea", "mode": 0, "k": 200, "namespace": "fig8"}),
    ("one_dof_awas_6", "urdf/one_dof.urdf.xacro", {"actuator": "awas", "mode": 6, "ks": 20}),
    ("two_dof_qbmove", "urdf/two_dof_qbmove.urdf.xacro", {}),
    ("five_dof_arm", "urdf/five_dof_arm.urdf.xacro", {}),
    ("compliant_sim_modes", "test/compliant_sim_modes.urdf.xacro", {}),
]


@pytest.fixture(scope="module")
def robots() -> dict[str, str]:
    return {name: expand_xacro(os.path.join(PKG, path), args) for name, path, args in ROBOTS}


@pytest.fixture(scope="module")
def check_exe() -> str:
    from catkin.find_in_workspaces import find_in_workspaces
    found = find_in_workspaces(["libexec"], project="compliant_actuator_gazebo",
                               path="plugin_block_check", first_match_only=True)
    assert found, "plugin_block_check is not built: run 'make workspace' and 'source env.sh'"
    return found[0]


@dataclass(frozen=True)
class Result:
    """One block's outcome: the settings (ok) or the one-line message."""

    error: Optional[str] = None
    joint: str = ""
    actuator_type: str = ""
    mode: int = -1
    namespace: str = ""
    actuator_params: tuple = ()
    joint_params: tuple = ()
    torque: float = 0.0


def blocks(text: str) -> list[ET.Element]:
    return [p for p in ET.fromstring(text).iter("plugin")
            if (p.get("filename") or "").strip() == PLUGIN_FILENAME]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def run_check(exe: str, source: str, text: str) -> list[Result]:
    """The plugin's side: every block of the URDF ``text`` through plugin_block_check, with the
    joint check's answers that description.py gives for that URDF."""
    root = ET.fromstring(text)
    description_joints = {j.name: j for j in parse_joints(text)}
    lines = []
    for plugin in blocks(text):
        tags = [c for c in plugin if isinstance(c.tag, str)]
        named = {(c.text or "").strip() for c in tags if c.tag == "joint"} | set(description_joints)
        lines += [f"joint\t{_escape(n)}\t{_escape(joint_problem(description_joints, n))}"
                  for n in sorted(named)]
        where = f"{source}: plugin {plugin.get('name', '?')!r}"     # as description.py says
        lines.append(f"block\t{_escape(root.get('name'))}\t{_escape(where)}")
        lines += [f"tag\t{_escape(c.tag)}\t{_escape(c.text or '')}\t{int(len(c) > 0)}" for c in tags]
        lines.append("end")
    done = subprocess.run([exe], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    results = []
    for line in done.stdout.splitlines():
        fields = line.split("\t")
        if fields[0] == "error":
            results.append(Result(error=fields[1]))
            continue
        pairs = [tuple((k, float(v)) for k, v in (kv.split("=") for kv in f.split(",") if kv))
                 for f in fields[5:7]]
        results.append(Result(joint=fields[1], actuator_type=fields[2], mode=int(fields[3]),
                              namespace=fields[4], actuator_params=pairs[0],
                              joint_params=pairs[1], torque=float(fields[7])))
    return results


def parse_joints(text: str):
    """The URDF joints as description.py reads them (a robot without plugin blocks)."""
    root = ET.fromstring(text)
    for gazebo in root.findall("gazebo"):
        root.remove(gazebo)
    return parse_description(ET.tostring(root, encoding="unicode")).joints


def python_results(source: str, text: str) -> list[Result]:
    """The embedded simulation's side: description.py; a bad block ends the list with its
    message, as parse_description stops at the first bad block."""
    try:
        description = parse_description(text, source=source)
    except DescriptionError as exc:
        return [Result(error=str(exc))]
    results = []
    for spec in description.compliant:
        joint = spec.make_joint()
        joint.reset(0.0, 0.0)
        results.append(Result(joint=spec.joint, actuator_type=spec.actuator_type, mode=spec.mode,
                              namespace=spec.namespace,
                              actuator_params=tuple(sorted(spec.actuator_params.items())),
                              joint_params=tuple(sorted(spec.joint_params.items())),
                              torque=joint.update(0.001, 0.1, 0.0)))
    return results


def test_example_blocks_load_the_same_in_the_plugin_and_the_embedded_simulation(robots, check_exe):
    for source, text in robots.items():
        plugin, embedded = run_check(check_exe, source, text), python_results(source, text)
        assert len(plugin) == len(blocks(text)) > 0, source
        assert plugin == embedded, source
        assert all(r.error is None for r in plugin), source
    five = run_check(check_exe, "five_dof_arm", robots["five_dof_arm"])
    assert [(r.joint, r.actuator_type, r.mode, r.namespace) for r in five] == \
        [(f"joint_{i}", t, 6, "five_dof_arm")
         for i, t in enumerate(["qbmove", "sea", "qbmove", "bavs", "qbmove"], start=1)]
    two = run_check(check_exe, "two_dof_qbmove", robots["two_dof_qbmove"])
    assert dict(two[0].actuator_params) == {"k1": 6.257, "a1": 0.01038, "k2": 3.9, "a2": 0.08918}
    fig8 = run_check(check_exe, "one_dof_sea_fig8", robots["one_dof_sea_fig8"])
    assert (fig8[0].mode, fig8[0].namespace, dict(fig8[0].actuator_params)) == (0, "fig8",
                                                                                 {"k": 200.0})
    modes = run_check(check_exe, "compliant_sim_modes", robots["compliant_sim_modes"])
    assert sorted(r.mode for r in modes) == list(range(7))


def _set(tags, name, text, children=False):
    """tags with <name> set to text (appended when absent)."""
    out = [(n, text, children) if n == name else (n, t, c) for n, t, c in tags]
    return out if any(n == name for n, _, _ in tags) else out + [(name, text, children)]


def _drop(tags, name):
    return [t for t in tags if t[0] != name]


def _own(tags):
    actuator = dict((n, t) for n, t, _ in tags)["actuator"].strip()
    return cag.actuator_parameter_names(actuator)


def _foreign(tags):
    own = _own(tags)
    return next(n for t in cag.actuator_types() for n in cag.actuator_parameter_names(t)
                if n not in own)


# (id, change of the block's (tag, text, has_children) list, expected message or None = valid)
VARIANTS = [
    ("no joint", lambda t: _drop(t, "joint"), "missing required element <joint>"),
    ("no actuator", lambda t: _drop(t, "actuator"), "missing required element <actuator>"),
    ("no mode", lambda t: _drop(t, "operationMode"), "missing required element <operationMode>"),
    ("blank mode", lambda t: _set(t, "operationMode", " \n "),
     "missing required element <operationMode>"),
    ("unknown joint", lambda t: _set(t, "joint", "elbow"), "the URDF has no joint 'elbow'"),
    ("unknown actuator", lambda t: _set(t, "actuator", "magic"),
     "unknown actuator 'magic' (known: sea, qbmove, bavs, awas)"),
    ("mode 7", lambda t: _set(t, "operationMode", "7"), "integer 0..6, got '7'"),
    ("mode 3.0", lambda t: _set(t, "operationMode", "3.0"), "integer 0..6, got '3.0'"),
    ("mode -1", lambda t: _set(t, "operationMode", "-1"), "integer 0..6, got '-1'"),
    ("mode +2", lambda t: _set(t, "operationMode", " +2 "), None),
    ("namespace", lambda t: _set(t, "robotNamespace", "/arm/left/"), None),
    ("bad namespace", lambda t: _set(t, "robotNamespace", "my robot"),
     "<robotNamespace> 'my robot' is not a valid ROS name"),
    ("digit namespace", lambda t: _set(t, "robotNamespace", "2arm"), "not a valid ROS name"),
    ("twice", lambda t: t + [t[-1]], "is given twice"),
    ("nested", lambda t: _set(t, "max_deflection", "", children=True),
     "<max_deflection> must hold a value, not elements"),
    ("word", lambda t: _set(t, "pid_p", "stiff"), "parameter <pid_p> is not a number: 'stiff'"),
    ("empty", lambda t: _set(t, "pid_p", ""), "parameter <pid_p> is not a number: ''"),
    ("hex", lambda t: _set(t, "pid_p", "0x10"), "parameter <pid_p> is not a number: '0x10'"),
    ("comma", lambda t: _set(t, "pid_p", "1,5"), "parameter <pid_p> is not a number: '1,5'"),
    ("spaces and exponent", lambda t: _set(t, "pid_p", " 1.5e2 "), None),
    ("negative gain", lambda t: _set(t, "pid_p", "-5"), "<pid_p>-5</pid_p>: "),
    ("nan gain", lambda t: _set(t, "pid_p", "nan"), "<pid_p>nan</pid_p>: "),
    ("infinite end stop", lambda t: _set(t, "motor1_position_max", "inf"), None),
    ("unknown parameter", lambda t: _set(t, "stiffness", "3"),
     "<stiffness>3</stiffness>: unknown joint parameter 'stiffness'"),
    ("other model's parameter", lambda t: _set(t, _foreign(t), "3"), "is not a parameter of the"),
    ("negative model parameter", lambda t: _set(t, _own(t)[0], "-1"), "-1</"),
]


def _with_block(text: str, index: int, change) -> str:
    """The URDF with block ``index`` rewritten by ``change``."""
    root = ET.fromstring(text)
    plugin = [p for p in root.iter("plugin")
              if (p.get("filename") or "").strip() == PLUGIN_FILENAME][index]
    tags = change([(c.tag, c.text or "", len(c) > 0) for c in plugin if isinstance(c.tag, str)])
    for child in list(plugin):
        plugin.remove(child)
    for name, value, children in tags:
        element = ET.SubElement(plugin, name)
        if children:
            ET.SubElement(element, "value").text = "1"
        else:
            element.text = value
    return ET.tostring(root, encoding="unicode")


@pytest.mark.parametrize("robot", ["two_dof_qbmove", "five_dof_arm", "one_dof_awas_6"])
@pytest.mark.parametrize("variant, change, message", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_bad_blocks_are_refused_alike_with_one_line(robots, check_exe, robot, variant, change,
                                                    message):
    index = len(blocks(robots[robot])) - 1          # the last block
    text = _with_block(robots[robot], index, change)
    plugin, embedded = run_check(check_exe, robot, text), python_results(robot, text)
    if message is None:
        assert plugin == embedded and plugin[index].error is None
        return
    assert all(r.error is None for r in plugin[:index]) and plugin[index].error is not None
    assert plugin[index].error == embedded[-1].error
    error = plugin[index].error
    assert message in error and "\n" not in error
    assert error.startswith(f"{robot}: plugin '"), error


def test_a_joint_the_actuator_cannot_drive_is_refused_by_the_joint_check(robots, check_exe):
    text = robots["two_dof_qbmove"].replace('name="joint_2" type="revolute"',
                                            'name="joint_2" type="prismatic"')
    plugin, embedded = run_check(check_exe, "arm", text), python_results("arm", text)
    assert plugin[1].error == embedded[-1].error == (
        "arm: plugin 'joint_2_actuator' (joint 'joint_2'): joint type is 'prismatic'; a "
        "compliant actuator drives a revolute or continuous joint")


def test_the_parser_directly():
    """parse_plugin_block as bound: the block's order of checks, trimming, the default
    namespace and the per-tag factory message."""
    tags = [cag.BlockTag("joint", " j1\n"), cag.BlockTag("actuator", "sea"),
            cag.BlockTag("operationMode", "6"), cag.BlockTag("k", "42"),
            cag.BlockTag("pid_p", "100")]
    s = cag.parse_plugin_block(tags, "bot")
    assert (s.joint, s.actuator_type, s.mode, s.robot_namespace) == ("j1", "sea", 6, "bot")
    assert s.actuator_params == {"k": 42.0} and s.joint_params == {"pid_p": 100.0}
    assert s.actuator.stiffness(0.1, 0.0, 0.0) == pytest.approx(42.0)
    assert s.params.motor_pid.p == 100.0
    refused = []
    with pytest.raises(ValueError, match=r"^here \(joint 'j1'\): no such joint$"):
        cag.parse_plugin_block(tags, "bot", lambda name: refused.append(name) or "no such joint",
                               "here")
    assert refused == ["j1"]
    with pytest.raises(ValueError, match=r"^plugin \(joint 'j1'\): <k>-1</k>: sea k must be a finite number >= 0"):
        cag.parse_plugin_block(tags[:3] + [cag.BlockTag("k", "-1")], "bot")
    with pytest.raises(ValueError, match="not a valid ROS name"):
        cag.parse_plugin_block(tags, "9bot")          # the default namespace is checked too
