"""Every argument of the package launch files is reachable from the root ones (issue 39): for each
root launch file, every argument of every file it includes, transitively, can be set on the
root's command line: the root declares (and documents) an argument that reaches it through
``<arg name=.. value="$(arg ..)"/>``, an ``$(eval ..)`` of such arguments, or ``pass_all_args``,
unless PINNED says why a file fixes it. Read from the XML as roslaunch resolves includes; the
roslaunch cases below resolve the arguments a user on a test machine sets."""
from __future__ import annotations

import os
import re
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Iterator

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOTS = ("launch/robot.launch", "launch/record_pairs.launch", "launch/robot_pc.launch",
         "launch/pipeline.launch")
FIND = re.compile(r"\$\(find (\w+)\)/(.+)")
ARG = re.compile(r"\$\(arg (\w+)\)")
SIM_STATES = "the recorder and the pair runner use /sim/joint_states and its corrected twin by name"
# (including file, included file, argument): why the including file fixes it
PINNED = {
    ("panda_pairs/launch/record_pairs.launch", "panda_sim2real/launch/panda_sim.launch", "publish_clock"):
        "follows robot: the simulator is the clock source with the ROS-native stand-in only",
    ("launch/pipeline.launch", "panda_sim2real/launch/panda_sim.launch", "publish_clock"):
        "follows robot: the simulator is the clock source with the ROS-native stand-in only",
    ("launch/pipeline.launch", "panda_pairs/launch/pair_runner.launch", "wait_for"):
        "the pair runner waits for the residual publisher's output when it runs",
    ("launch/robot_pc.launch", "panda_fci/launch/robot.launch", "franka_joint_states"):
        "the robot PC runs fci or fci_standin, never franka_ros",
    ("launch/robot_pc.launch", "panda_fci/launch/robot.launch", "franka_command"):
        "the robot PC runs fci or fci_standin, never franka_ros",
    **{(parent, "realeasy_ros/launch/residual_publisher.launch", arg): SIM_STATES
       for parent in ("realeasy_ros/launch/record_pairs.launch", "launch/robot_pc.launch",
                      "launch/pipeline.launch") for arg in ("input", "output")},
}


@dataclass(frozen=True)
class Gap:
    parent: str
    child: str
    arg: str


def resolve(path: str) -> str:
    match = FIND.fullmatch(path)
    assert match, f"an include by $(find PKG)/..., got {path}"
    return os.path.join(match.group(1), match.group(2))


def children(element: ET.Element) -> Iterator[ET.Element]:
    for child in element:
        if child.tag == "group":
            yield from children(child)
        else:
            yield child


def arguments(name: str) -> dict[str, ET.Element]:
    return {a.get("name"): a for a in children(ET.parse(os.path.join(ROOT, name)).getroot())
            if a.tag == "arg"}


def settable(name: str) -> set[str]:
    return {n for n, a in arguments(name).items() if a.get("value") is None}


def mentioned(value: str, names: set[str]) -> set[str]:
    found = set(ARG.findall(value))
    if "$(eval" in value:
        found |= {word for word in re.findall(r"[A-Za-z_]\w*", value) if word in names}
    return found


def includes(name: str) -> Iterator[ET.Element]:
    yield from (e for e in children(ET.parse(os.path.join(ROOT, name)).getroot()) if e.tag == "include")


def gaps(name: str, context: set[str]) -> Iterator[Gap]:
    """The arguments of the files ``name`` includes (transitively) that no argument of
    ``context`` (the user-set names in ``name``'s context) reaches."""
    own = arguments(name)
    for include in includes(name):
        child = resolve(include.get("file"))
        passed = {a.get("name"): a.get("value") for a in include if a.tag == "arg"}
        inherited = context if include.get("pass_all_args") == "true" else set()
        reached = {n for n in inherited if n not in passed}
        for arg in sorted(settable(child)):
            if arg in passed:
                ok = bool(mentioned(passed[arg], set(own)) & context)
            else:
                ok = arg in inherited
            if ok:
                reached.add(arg)
            elif (name, child, arg) not in PINNED:
                yield Gap(name, child, arg)
        value_only = {n for n, a in arguments(child).items() if a.get("value") is not None}
        yield from gaps(child, reached - value_only)


@pytest.mark.parametrize("root", ROOTS)
def test_every_package_argument_is_reachable_from_the_root(root):
    assert list(gaps(root, settable(root))) == []


def test_pinned_arguments_exist():
    """Each PINNED entry names an include that still exists and an argument it declares."""
    for parent, child, arg in PINNED:
        assert child in {resolve(i.get("file")) for i in includes(parent)}, (parent, child)
        assert arg in settable(child), (child, arg)


@pytest.mark.parametrize("root, args, expected", [
    # the case: a robot server on a machine without a real-time kernel
    ("launch/robot.launch", ["robot:=fci", "robot_ip:=127.0.0.9", "realtime:=ignore",
                             "lock_memory:=true", "publish_rate:=500"],
     ["/real/fci_bridge/realtime: ignore", "/real/fci_bridge/lock_memory: true",
      "/real/fci_bridge/publish_rate: 500"]),
    ("launch/pipeline.launch", ["robot:=fci", "robot_ip:=127.0.0.9", "realtime:=ignore",
                                "bag:=/tmp/x.bag", "stamp_tolerance:=0.5", "publish_rate:=50"],
     ["/real/fci_bridge/realtime: ignore", "/pair_runner/stamp_tolerance: 0.5",
      "/sim/panda_sim/publish_rate: 50"]),
    ("launch/record_pairs.launch", ["robot:=fci", "robot_ip:=127.0.0.9", "realtime:=ignore",
                                    "model:=/tmp/x.pt", "wait_for:=/extra", "warmup_steps:=7"],
     ["/real/fci_bridge/realtime: ignore", "/pair_runner/wait_for: /sim/joint_states_realistic,/extra"]),
    ("launch/robot_pc.launch", ["robot:=fci_standin", "publish_rate:=500", "model:=/tmp/x.pt",
                                "warmup_steps:=7"],
     ["/real/fci_bridge/publish_rate: 500"]),
])
def test_roslaunch_resolves_the_root_arguments(root, args, expected):
    env = dict(os.environ, ROS_HOME=os.path.join(ROOT, "build", "ros_home"))
    listed = subprocess.run(["roslaunch", "--ros-args", os.path.join(ROOT, root)],
                            capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    assert {a.split(":=")[0] for a in args} <= set(re.findall(r"^  (\w+)[ :]", listed.stdout, re.M))
    out = subprocess.run(["roslaunch", "--dump-params", os.path.join(ROOT, root), *args],
                         capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    for line in expected:
        assert line in out.stdout
