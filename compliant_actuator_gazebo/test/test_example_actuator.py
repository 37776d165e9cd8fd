"""Issue 20: a user's own actuator, written against template_actuator.hpp and built outside the
package's core sources (test/example_actuator/backlash_sea.cpp -> libcompliant_example_actuator
.so, a linear SEA with backlash), is available by name in a plugin block that names its library
(<actuatorLibrary>), in the embedded simulation and in the Gazebo plugin's parsing
(plugin_block_check), without a change to the package's sources.

Loading a library changes the process's actuator registry for good, so the Python side runs in a
child process (test/example_actuator/run_example.py); this process's registry stays as the other
tests expect."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo.description import expand_xacro
from test_plugin_block import Result, run_check

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = os.path.join(PKG, "test", "example_actuator", "run_example.py")
BUILTIN = ["sea", "qbmove", "bavs", "awas"]
K, BACKLASH = 30.0, 0.1


def _built(name: str) -> str:
    from catkin.find_in_workspaces import find_in_workspaces
    found = find_in_workspaces(["libexec"], project="compliant_actuator_gazebo", path=name,
                               first_match_only=True)
    assert found, f"{name} is not built: run 'make workspace' and 'source env.sh'"
    return found[0]


@pytest.fixture(scope="module")
def library() -> str:
    return _built("libcompliant_example_actuator.so")


@pytest.fixture(scope="module")
def urdf(library) -> str:
    """The 1-DoF robot with its block rewritten to the user's actuator and library."""
    text = expand_xacro(os.path.join(PKG, "urdf", "one_dof.urdf.xacro"),
                        {"actuator": "sea", "k": K})
    assert "<actuator>sea</actuator>" in text
    return text.replace("<actuator>sea</actuator>",
                        f"<actuator>backlash_sea</actuator><actuatorLibrary>{library}"
                        f"</actuatorLibrary><backlash>{BACKLASH}</backlash>")


@pytest.fixture(scope="module")
def child(library, urdf) -> dict:
    done = subprocess.run([sys.executable, CHILD], capture_output=True, text=True, timeout=120,
                          input=json.dumps({"library": library, "urdf": urdf, "source": "one_dof"}))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def spring(d: float) -> float:
    """The example's closed form: t1 = -k (d -+ b) beyond the dead zone |d| <= b, else 0."""
    return -K * (d - BACKLASH) if d > BACKLASH else -K * (d + BACKLASH) if d < -BACKLASH else 0.0


def test_this_process_knows_only_the_builtin_types():
    assert cag.actuator_types() == BUILTIN
    with pytest.raises(ValueError, match=r"unknown actuator type 'backlash_sea' \(known: sea, "
                                         r"qbmove, bavs, awas\)"):
        cag.make_actuator("backlash_sea", {})


def test_the_block_loads_the_library_and_registers_the_type(child):
    assert child["types_before"] == BUILTIN
    assert child["types_after"] == BUILTIN + ["backlash_sea"]
    assert child["loaded_again"] == []                   # loaded once, by the block
    block = child["block"]
    assert (block["joint"], block["actuator_type"], block["mode"]) == ("joint_1", "backlash_sea", 3)
    assert dict(block["actuator_params"]) == {"k": K, "backlash": BACKLASH}
    # mode 3, equilibrium 0, q = 0.1 at the update: d = 0.1 = b, the spring not yet engaged
    assert block["torque"] == 0.0


def test_the_embedded_simulation_runs_the_spring_of_the_example(child):
    trace = child["trace"]
    assert trace[0]["q"] == pytest.approx(0.3) and trace[0]["theta1"] == 0.0
    for s in trace:
        d = s["q"] - s["theta1"]
        assert s["t1"] == pytest.approx(spring(d), rel=1e-12, abs=1e-12)
        assert s["t2"] == 0.0 and s["link_torque"] == s["t1"]
        engaged = abs(d) > BACKLASH
        assert s["stiffness"] == (K if engaged else 0.0)
        assert s["energy"] == pytest.approx(0.5 * K * max(abs(d) - BACKLASH, 0.0) ** 2, abs=1e-15)
    assert trace[0]["t1"] == pytest.approx(-K * (0.3 - BACKLASH))
    # the spring pulls the link from 0.3 rad towards the dead zone around the equilibrium 0
    assert min(s["q"] for s in trace[:30]) < 0.3 - 0.1
    # both branches of the law were exercised: engaged, and inside the dead zone (t1 = 0 exactly)
    inside = [s for s in trace if abs(s["q"] - s["theta1"]) <= BACKLASH]
    assert inside and len(inside) < len(trace)
    assert all(s["t1"] == 0.0 and s["stiffness"] == 0.0 for s in inside)


def test_bad_blocks_give_one_line_naming_the_registered_types(child):
    errors = child["errors"]
    assert errors["unknown"] == ("one_dof: plugin 'joint_1_actuator' (joint 'joint_1'): unknown "
                                 "actuator 'magic' (known: sea, qbmove, bavs, awas, backlash_sea)")
    assert errors["bad_library"].startswith(
        "one_dof: plugin 'joint_1_actuator' (joint 'joint_1'): <actuatorLibrary>: cannot load "
        "actuator library '")
    assert "cannot open shared object file" in errors["bad_library"]
    assert errors["bad_value"].endswith(
        "<backlash>-1</backlash>: backlash_sea backlash must be a finite number >= 0, got -1.000000")
    assert all("\n" not in e for e in errors.values())


def test_the_gazebo_plugins_parsing_runs_the_example_alike(child, urdf):
    """plugin_block_check parses the block as the plugin's Load() does: it loads the library
    named in the block and builds and steps the same core as the embedded simulation."""
    plugin = run_check(_built("plugin_block_check"), "one_dof", urdf)
    block = child["block"]
    assert plugin == [Result(joint=block["joint"], actuator_type=block["actuator_type"],
                             mode=block["mode"], namespace=block["namespace"],
                             actuator_params=tuple(map(tuple, block["actuator_params"])),
                             joint_params=tuple(map(tuple, block["joint_params"])),
                             torque=block["torque"])]
    bad = run_check(_built("plugin_block_check"), "one_dof",
                    urdf.replace("<actuator>backlash_sea<", "<actuator>magic<"))
    assert bad == [Result(error=child["errors"]["unknown"])]
