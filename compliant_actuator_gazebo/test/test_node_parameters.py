"""The nodes' parameters (sim_node.SimParams, manager_node.ManagerParams) read from a stand-in
parameter server: the launch files' values are accepted, and every bad value is one
CompliantError naming the parameter (the node's one [FATAL] line; the rostests check the exit).
No ROS master needed."""
import math
import os

import pytest
import rospy
import yaml

from compliant_actuator_gazebo.description import DescriptionError, expand_xacro
from compliant_actuator_gazebo.errors import CompliantError, ParameterError
from compliant_actuator_gazebo.manager import LayoutError, RobotLayout
from compliant_actuator_gazebo.manager_node import ManagerParams
from compliant_actuator_gazebo.sim_node import SimParams

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWO_DOF = expand_xacro(os.path.join(PKG, "urdf", "two_dof_qbmove.urdf.xacro"))
LAYOUT = {"robot": "two_dof_qbmove", "joints": [{"name": "joint_1", "mode": 6},
                                                 {"name": "joint_2", "mode": 6}]}


@pytest.fixture
def params(monkeypatch):
    """A dict as the parameter server of a node named /node ("~x" is "/node/x")."""
    server: dict = {}

    def key(name):
        return "/node/" + name[1:] if name.startswith("~") else "/" + name.lstrip("/")

    def get_param(name, *default):
        if key(name) in server:
            return server[key(name)]
        if default:
            return default[0]
        raise KeyError(name)

    monkeypatch.setattr(rospy, "get_param", get_param)
    monkeypatch.setattr(rospy, "has_param", lambda name: key(name) in server)
    monkeypatch.setattr(rospy, "resolve_name",
                        lambda name: "/node/" + name[1:] if name.startswith("~") else name)
    monkeypatch.setattr(rospy, "loginfo", lambda *args: None)
    warnings: list = []
    monkeypatch.setattr(rospy, "logwarn", lambda message, *args: warnings.append(message))

    def set_params(**values):
        server.clear()
        warnings.clear()
        server.update({key(k.replace("private_", "~")): v for k, v in values.items()})
    set_params.warnings = warnings
    return set_params


def test_sim_parameters_of_the_launch_files(params):
    params(robot_description=TWO_DOF, private_physics_rate=1000, private_publish_rate=2000,
           private_initial_inputs={"joint_1": {"stiffness_preset": 0.2}},
           private_initial_positions={"joint_2": 1})
    p = SimParams.from_ros()
    assert p.description.name == "two_dof_qbmove"
    assert (p.physics_rate, p.publish_rate, p.clock_rate, p.real_time_factor, p.gravity) == \
        (1000.0, 1000.0, 1000.0, 1.0, 9.81)                 # publish_rate capped at physics
    assert p.initial_inputs == {"joint_1": {"stiffness_preset": 0.2}}
    assert p.initial_positions == {"joint_2": 1.0}
    params(private_robot_description=TWO_DOF, private_real_time_factor=0)
    assert SimParams.from_ros().real_time_factor == 0.0


@pytest.mark.parametrize("values, error, message", [
    ({"robot_description": None}, ParameterError, "no robot description (set ~robot_description or robot_description)"),
    ({"robot_description": 42}, ParameterError, "must be URDF text, got int"),
    ({"robot_description": "<robot name='r'><link"}, DescriptionError, "not well-formed XML"),
    ({"private_physics_rate": 0}, ParameterError, "~physics_rate must be a finite number > 0, got 0.0"),
    ({"private_physics_rate": math.inf}, ParameterError, "~physics_rate must be a finite number > 0"),
    ({"private_physics_rate": "fast"}, ParameterError, "~physics_rate must be a finite number > 0, got 'fast'"),
    ({"private_publish_rate": -1}, ParameterError, "~publish_rate must be a number > 0"),
    ({"private_clock_rate": [1]}, ParameterError, "~clock_rate must be a number > 0, got [1]"),
    ({"private_real_time_factor": -0.5}, ParameterError, "~real_time_factor must be a number >= 0"),
    ({"private_gravity": math.nan}, ParameterError, "~gravity must be a finite number, got nan"),
    ({"private_initial_positions": [0.1]}, ParameterError, "~initial_positions must be a mapping"),
    ({"private_initial_positions": {"joint_1": "up"}}, ParameterError,
     "~initial_positions[joint_1] must be a finite number, got 'up'"),
    ({"private_initial_inputs": {"joint_1": 0.2}}, ParameterError,
     "~initial_inputs[joint_1] must be a mapping {input: value}"),
    ({"private_initial_inputs": {"joint_1": {"stiffness_preset": None}}}, ParameterError,
     "~initial_inputs[joint_1][stiffness_preset] must be a finite number, got None"),
    ({"private_initial_inputs": {"joint_1": {"stiffness_preset": math.nan}}}, ParameterError,
     "~initial_inputs[joint_1][stiffness_preset] must be a finite number, got nan"),
    ({"private_initial_inputs": {"joint_3": {"stiffness_preset": 0.2}}}, ParameterError,
     "~initial_inputs: 'joint_3' is not a compliant joint of 'two_dof_qbmove' (compliant joints: "
     "joint_1, joint_2)"),
    ({"private_initial_inputs": {"joint_1": {"preset": 0.2}}}, ParameterError,
     "~initial_inputs[joint_1]: unknown inputs ['preset'] (inputs: torque_command,"),
    ({"private_initial_positions": {"joint_1": math.inf}}, ParameterError,
     "~initial_positions[joint_1] must be a finite number, got inf"),
    ({"private_initial_positions": {"base": 0.1}}, ParameterError,
     "~initial_positions: unknown or fixed joints ['base'] (movable: joint_1, joint_2)"),
])
def test_bad_sim_parameters_are_one_line(params, values, error, message):
    params(**{"robot_description": TWO_DOF, **values})
    with pytest.raises(error) as info:
        SimParams.from_ros()
    assert isinstance(info.value, CompliantError)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_manager_parameters(params, tmp_path):
    params(private_robot="two_dof_qbmove", private_joints=LAYOUT["joints"],
           private_publish_rate=50, robot_description=TWO_DOF)
    p = ManagerParams.from_ros()
    assert (p.layout.robot, p.layout.names, p.publish_rate) == \
        ("two_dof_qbmove", ("joint_1", "joint_2"), 50.0)
    assert set(p.bounds) == {"joint_1", "joint_2"}
    params(private_config=os.path.join(PKG, "config", "two_dof_qbmove.yaml"))
    p = ManagerParams.from_ros()
    assert (p.layout.names, p.publish_rate, p.bounds) == (("joint_1", "joint_2"), 100.0, {})


@pytest.mark.parametrize("values, error, message", [
    ({"private_publish_rate": 0}, ParameterError,
     "~publish_rate must be a positive number of Hz, got 0"),
    ({"private_publish_rate": "often"}, ParameterError, "got 'often'"),
    ({"private_publish_rate": [10]}, ParameterError, "got [10]"),
    ({"private_publish_rate": math.nan}, ParameterError, "got nan"),
    ({"private_config": "/nonexistent/manager.yaml"}, LayoutError, "give either ~config"),
    ({"private_robot": "2dof"}, LayoutError, "'robot' must be a ROS name"),
    ({"robot_description": ["urdf"]}, ParameterError, "must be URDF text, got list"),
    ({"robot_description": "<robot/>"}, DescriptionError, "no name attribute"),
    ({"robot_description": TWO_DOF.replace("joint_2_actuator", "x").replace(
        "<joint>joint_2</joint>", "<joint>joint_1</joint>")}, DescriptionError, "more than one"),
    ({"private_joints": LAYOUT["joints"] + [{"name": "joint_3", "mode": 6}]}, LayoutError,
     "joints ['joint_3'] of robot 'two_dof_qbmove' have no compliant actuator"),
])
def test_bad_manager_parameters_are_one_line(params, values, error, message):
    params(**{"private_robot": LAYOUT["robot"], "private_joints": LAYOUT["joints"],
              "robot_description": TWO_DOF, **values})
    with pytest.raises(error) as info:
        ManagerParams.from_ros()
    assert isinstance(info.value, CompliantError)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_manager_config_mapping_equals_the_file(params):
    """~config as the launch file loads it (<rosparam file=... ns="config"/>) gives the layout
    of the file path (the old way, still read for one release, with a warning)."""
    path = os.path.join(PKG, "config", "two_dof_qbmove.yaml")
    params(private_config=path, robot_description=TWO_DOF)
    from_file = ManagerParams.from_ros()
    assert len(params.warnings) == 1 and "deprecated" in params.warnings[0] \
        and "/node/config" in params.warnings[0]
    with open(path, encoding="utf-8") as f:
        params(private_config=yaml.safe_load(f), robot_description=TWO_DOF)
    from_mapping = ManagerParams.from_ros()
    assert params.warnings == []
    assert from_mapping == from_file
    assert from_mapping.layout == RobotLayout.from_yaml(path)
    assert from_mapping.layout.robot == "two_dof_qbmove" and set(from_mapping.bounds) == \
        {"joint_1", "joint_2"}


@pytest.mark.parametrize("config, message", [
    ({"robot": "two_dof_qbmove"}, "parameter /node/config: missing key 'joints'"),
    ({**LAYOUT, "rate": 3}, "parameter /node/config: unknown key(s) rate"),
    ({"robot": "two_dof_qbmove", "joints": [{"name": "joint_1", "mode": 9}]},
     "parameter /node/config: joints[0] ('joint_1'): 'mode' must be an integer 0..6, got 9"),
    ([LAYOUT], "parameter /node/config: expected a mapping with keys 'robot' and 'joints', got list"),
    (42, "parameter /node/config: expected a mapping"),
])
def test_bad_manager_config_mapping_names_the_parameter(params, config, message):
    params(private_config=config)
    with pytest.raises(LayoutError) as info:
        ManagerParams.from_ros()
    assert message in str(info.value) and "\n" not in str(info.value)


def test_manager_config_mapping_and_robot_joints_are_exclusive(params):
    params(private_config=LAYOUT, private_robot="two_dof_qbmove")
    with pytest.raises(LayoutError, match="give either ~config or ~robot and ~joints"):
        ManagerParams.from_ros()


def test_missing_manager_config(params):
    params(private_config="/nonexistent/manager.yaml")
    with pytest.raises(LayoutError, match="manager config not found: /nonexistent/manager.yaml"):
        ManagerParams.from_ros()
