"""launch/identifier.launch as roslaunch resolves it (no master): the node gets the joint limits as a
mapping the launch file loads (issue 21; read with sim2real_checks.node.mapping_param).
Argument docs: tools/test/test_launch_conventions.py."""
import os


from panda_sim2real import JointLimits
from sim2real_checks import launch_params, param_mapping

LAUNCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch", "identifier.launch")
NODE = "/diffnea/identifier"


def limits_param(*args: str) -> dict:
    return param_mapping(launch_params(LAUNCH, "urdf:=/tmp/r.urdf", *args), f"{NODE}/limits")


def test_the_node_gets_the_limits_as_a_mapping():
    assert JointLimits.from_dict(limits_param(), f"parameter {NODE}/limits") == JointLimits.from_yaml()

