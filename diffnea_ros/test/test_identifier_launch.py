"""launch/identifier.launch as roslaunch resolves it (no master): the node gets the joint limits as a
mapping the launch file loads (issue 21; read with sim2real_checks.node.mapping_param).
Argument docs: tools/test/test_launch_conventions.py."""
import dataclasses
import os
import subprocess

import numpy as np
import yaml

from panda_sim2real.limits import JointLimits

LAUNCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch", "identifier.launch")
NODE = "/diffnea/identifier"


def limits_param(*args: str) -> dict:
    done = subprocess.run(["roslaunch", "--dump-params", LAUNCH, "urdf:==/tmp/r.urdf", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    prefix = f"{NODE}/limits/"
    return {k[len(prefix):]: v for k, v in yaml.safe_load(done.stdout).items() if k.startswith(prefix)}


def test_the_node_gets_the_limits_as_a_mapping():
    limits = JointLimits.from_dict(limits_param(), f"parameter {NODE}/limits")
    for field in dataclasses.fields(JointLimits):
        np.testing.assert_array_equal(getattr(limits, field.name), getattr(JointLimits.from_yaml(), field.name))

