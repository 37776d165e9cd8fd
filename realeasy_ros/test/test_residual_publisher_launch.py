"""launch/residual_publisher.launch and record_pairs.launch as roslaunch resolves them (no
master): the node gets the joint limits as a mapping the launch file loads (issue 21; read with
sim2real_checks.node.mapping_param).
Argument docs: tools/test/test_launch_conventions.py."""
import os


from panda_sim2real import JointLimits
from sim2real_checks import launch_params, param_mapping

LAUNCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch",
                      "residual_publisher.launch")
NODE = "/realeasy/residual_publisher"


def limits_param(*args: str) -> dict:
    return param_mapping(launch_params(LAUNCH, "model:=/tmp/m.pt", *args), f"{NODE}/limits")


def test_the_node_gets_the_limits_as_a_mapping():
    assert JointLimits.from_dict(limits_param(), f"parameter {NODE}/limits") == JointLimits.from_yaml()



def test_recording_pairs_with_the_publisher_live():
    """record_pairs.launch: panda_pairs' recording plus the publisher, the runner waiting for
    the corrected states; the root launch/record_pairs.launch takes it with model:=."""
    here = os.path.dirname(LAUNCH)
    root = os.path.join(os.path.dirname(os.path.dirname(here)), "launch", "record_pairs.launch")
    for launch, args in ((os.path.join(here, "record_pairs.launch"), ["trajectories:=4"]),
                         (root, ["trajectories:=4"])):
        params = launch_params(launch, "model:=/tmp/m.pt", *args)
        assert params[f"{NODE}/model"] == "/tmp/m.pt"
        assert params["/pair_runner/wait_for"] == "/sim/joint_states_realistic"
        assert params["/pair_runner/trajectories"] == 4
    params = launch_params(root)
    assert params["/pair_runner/wait_for"] == "" and f"{NODE}/model" not in params
