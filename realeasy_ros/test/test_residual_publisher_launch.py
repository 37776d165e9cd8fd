"""launch/residual_publisher.launch and record_pairs.launch as roslaunch resolves them (no
master): the node gets the joint limits as a mapping the launch file loads (issue 21; read with
sim2real_checks.node.mapping_param).
Argument docs: tools/test/test_launch_conventions.py."""
import dataclasses
import os
import subprocess

import numpy as np
import yaml

from panda_sim2real.limits import JointLimits

LAUNCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch",
                      "residual_publisher.launch")
NODE = "/realeasy/residual_publisher"


def limits_param(*args: str) -> dict:
    done = subprocess.run(["roslaunch", "--dump-params", LAUNCH, "model:==/tmp/m.pt", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    prefix = f"{NODE}/limits/"
    return {k[len(prefix):]: v for k, v in yaml.safe_load(done.stdout).items() if k.startswith(prefix)}


def test_the_node_gets_the_limits_as_a_mapping():
    limits = JointLimits.from_dict(limits_param(), f"parameter {NODE}/limits")
    for field in dataclasses.fields(JointLimits):
        np.testing.assert_array_equal(getattr(limits, field.name), getattr(JointLimits.from_yaml(), field.name))



def test_recording_pairs_with_the_publisher_live():
    """record_pairs.launch: panda_sim2real's recording plus the publisher, the runner waiting for
    the corrected states; the root launch/record_pairs.launch takes it with model:=."""
    here = os.path.dirname(LAUNCH)
    root = os.path.join(os.path.dirname(os.path.dirname(here)), "launch", "record_pairs.launch")
    for launch, args in ((os.path.join(here, "record_pairs.launch"), ["trajectories:=4"]),
                         (root, ["trajectories:=4"])):
        done = subprocess.run(["roslaunch", "--dump-params", launch, "model:=/tmp/m.pt", *args],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        params = yaml.safe_load(done.stdout)
        assert params[f"{NODE}/model"] == "/tmp/m.pt"
        assert params["/pair_runner/wait_for"] == "/sim/joint_states_realistic"
        assert params["/pair_runner/trajectories"] == 4
    done = subprocess.run(["roslaunch", "--dump-params", root], capture_output=True, text=True, timeout=60)
    params = yaml.safe_load(done.stdout)
    assert params["/pair_runner/wait_for"] == "" and f"{NODE}/model" not in params
