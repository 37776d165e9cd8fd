"""panda_fci's launch files as roslaunch resolves them (no master): the robot side gets the
limits as a mapping loaded by the launch file, whoever plays the robot."""
import os

import pytest

from panda_sim2real import JointLimits
from sim2real_checks import launch_params, param_mapping as mapping

LAUNCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch")


def dump_params(launch: str, *args: str) -> dict:
    return launch_params(os.path.join(LAUNCH, launch), *args)


@pytest.mark.parametrize("robot, node", [("franka_ros", "/real/franka_ros_relay"),
                                         ("fci", "/real/fci_bridge")])
def test_the_robot_side_gets_the_limits_as_a_mapping(robot, node):
    params = dump_params("robot.launch", f"robot:={robot}", "robot_ip:=127.0.0.9")
    assert JointLimits.from_dict(mapping(params, f"{node}/limits"), "test") == JointLimits.from_yaml()

