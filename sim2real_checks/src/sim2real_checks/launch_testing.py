"""Launch files as roslaunch resolves them, for the packages' tests (no master needed): the
parameters a launch file sets, and a YAML mapping it loads (``<rosparam>``) as the node reads it."""
from __future__ import annotations

import subprocess
from typing import Any, Optional

import yaml


def launch_params(launch: str, *args: str, package: Optional[str] = None) -> dict[str, Any]:
    """``roslaunch --dump-params [PACKAGE] LAUNCH ARGS`` (``launch``: a path, or a file name of
    ``package``) as ``{name: value}``; AssertionError with roslaunch's stderr if it fails."""
    done = subprocess.run(["roslaunch", "--dump-params", *([package] if package else []), launch, *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout) or {}


def param_mapping(params: dict[str, Any], name: str) -> dict[str, Any]:
    """The mapping under the parameter ``name`` of :func:`launch_params`' result, as
    ``rospy.get_param(name)`` returns it; AssertionError if nothing is there."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key.startswith(name + "/"):
            *parents, leaf = key[len(name) + 1:].split("/")
            tree = out
            for part in parents:
                tree = tree.setdefault(part, {})
            tree[leaf] = value
    assert out, f"nothing under {name}"
    return out
