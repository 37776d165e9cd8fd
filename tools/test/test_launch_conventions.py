"""The launch-file conventions of CONTRIBUTING.md ("Launch files", "Nodes") over every tracked
launch file: each argument a file declares is documented (``doc=``), and a node that gets a YAML
mapping loaded into its namespace (``<rosparam command="load">``) starts from a clean namespace
(``clear_params="true"``: a relaunch against a running master keeps no stale keys)."""
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def launch_files():
    tracked = subprocess.run(["git", "ls-files", "*.launch"], cwd=ROOT, capture_output=True, text=True).stdout
    return sorted(name for name in tracked.split() if "/test/" not in name)


def declared_args(element):
    """The <arg> a user can set (not the values passed to an <include>, not a ``value=``
    constant computed from other arguments)."""
    for child in element:
        if child.tag == "arg" and child.get("value") is None:
            yield child
        elif child.tag in ("group", "launch"):
            yield from declared_args(child)


@pytest.mark.skipif(not os.path.isdir(os.path.join(ROOT, ".git")), reason="not a git checkout")
def test_there_are_launch_files():
    assert len(launch_files()) > 15


@pytest.mark.parametrize("name", launch_files())
def test_every_argument_is_documented(name):
    root = ET.parse(os.path.join(ROOT, name)).getroot()
    assert [a.get("name") for a in declared_args(root) if not a.get("doc")] == []


@pytest.mark.parametrize("name", launch_files())
def test_a_node_loading_yaml_clears_its_namespace(name):
    root = ET.parse(os.path.join(ROOT, name)).getroot()
    loading = [n for n in root.iter("node")
               if any(r.get("command", "load") == "load" for r in n.findall("rosparam"))]
    assert [n.get("name") for n in loading if n.get("clear_params") != "true"] == []
