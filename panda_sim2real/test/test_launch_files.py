"""The package's launch files as roslaunch resolves them (no master): the nodes get their YAML
configuration as mappings loaded by the launch file (issue 21; the node reads them with
sim2real_checks.node.mapping_param); argument docs: tools/test/test_launch_conventions.py."""
import dataclasses
import os

import pytest

from panda_sim2real.limits import JointLimits
from panda_sim2real.robot_config import REALITY_CONFIG_FILE, SIM_CONFIG_FILE, RobotConfig
from sim2real_checks import launch_params, param_mapping

LAUNCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch")


def dump_params(launch: str, *args: str) -> dict:
    return launch_params(os.path.join(LAUNCH, launch), *args)


mapping = param_mapping


def same_limits(a: JointLimits, b: JointLimits) -> None:
    assert a == b


def same_config(a: RobotConfig, b: RobotConfig) -> None:
    """Equal but for the source and the order of the inertials (the parameter server sorts)."""
    def plain(c: RobotConfig) -> str:
        return repr(dataclasses.replace(c, source="", inertials=dict(sorted(c.inertials.items()))))
    assert plain(a) == plain(b)


@pytest.mark.parametrize("launch, node, param, default", [
    ("panda_sim.launch", "/sim/panda_sim", "config", SIM_CONFIG_FILE),
    ("panda_reality.launch", "/real/panda_reality", "reality_config", REALITY_CONFIG_FILE),
])
def test_the_robots_get_their_config_and_limits_as_mappings(launch, node, param, default):
    params = dump_params(launch)
    same_config(RobotConfig.from_dict(mapping(params, f"{node}/{param}"), "test"),
                RobotConfig.from_yaml(default))
    same_limits(JointLimits.from_dict(mapping(params, f"{node}/limits"), "test"),
                JointLimits.from_yaml())
    assert not any(isinstance(params.get(f"{node}/{p}"), str) for p in (param, "limits"))


def test_a_config_given_by_its_launch_argument_is_loaded():
    other = os.path.join(os.path.dirname(REALITY_CONFIG_FILE), "individual_b.yaml")
    params = dump_params("panda_reality.launch", f"reality_config:={other}")
    config = RobotConfig.from_dict(mapping(params, "/real/panda_reality/reality_config"), "test")
    assert config.label == "reality stand-in (individual B)"
