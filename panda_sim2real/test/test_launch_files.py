"""The package's launch files as roslaunch resolves them (no master): the nodes get their YAML
configuration as mappings loaded by the launch file (issue 21; the node reads them with
sim2real_checks.node.mapping_param); argument docs: tools/test/test_launch_conventions.py."""
import dataclasses
import os

import pytest

from panda_sim2real.limits import DEFAULT_LIMITS_FILE, JointLimits
from panda_sim2real.robot_config import REALITY_CONFIG_FILE, SIM_CONFIG_FILE, RobotConfig
from panda_sim2real.trajectory_generation import DEFAULT_SETTINGS_FILE, GeneratorSettings
from panda_sim2real.work_cycle import DEFAULT_WORK_CYCLE_FILE, WorkCycleSettings
from sim2real_checks.launch_testing import launch_params, param_mapping

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
    params = dump_params("record_pairs.launch", f"reality_config:={other}", f"sim_config:={other}")
    for name in ("/real/panda_reality/reality_config", "/sim/panda_sim/config"):
        assert mapping(params, name)["label"] == "reality stand-in (individual B)"


def test_the_pair_runner_gets_its_generator_settings_limits_and_work_cycle_as_mappings():
    params = dump_params("pair_runner.launch", "bag:=/tmp/pairs.bag")
    settings = GeneratorSettings.from_dict(mapping(params, "/pair_runner/generator_config"), "test")
    assert settings == GeneratorSettings.from_yaml(DEFAULT_SETTINGS_FILE)
    same_limits(JointLimits.from_dict(mapping(params, "/pair_runner/limits"), "test"),
                JointLimits.from_yaml(DEFAULT_LIMITS_FILE))
    assert not any(k.startswith("/pair_runner/work_cycle") for k in params)   # random moves: unused
    params = dump_params("pair_runner.launch", "bag:=/tmp/pairs.bag", "kinds:=task")
    cycle = WorkCycleSettings.from_dict(mapping(params, "/pair_runner/work_cycle"), "test")
    assert cycle.cycle == WorkCycleSettings.from_yaml(DEFAULT_WORK_CYCLE_FILE).cycle


@pytest.mark.parametrize("robot, node", [("franka_ros", "/real/franka_ros_relay"),
                                         ("fci", "/real/fci_bridge")])
def test_the_robot_side_gets_the_limits_as_a_mapping(robot, node):
    params = dump_params("robot.launch", f"robot:={robot}", "robot_ip:=127.0.0.9")
    same_limits(JointLimits.from_dict(mapping(params, f"{node}/limits"), "test"), JointLimits.from_yaml())

