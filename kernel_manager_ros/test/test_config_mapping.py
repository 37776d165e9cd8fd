"""Issue 21: the nodes' configuration from the parameter server. The launch files load the YAML in
config/ there (``<rosparam command="load" ns="config"/>``); the library reads that mapping with the
validation of its file reader (``from_dict``: mapping == file, a malformed mapping is a KernelError
naming its source), and the nodes read their parameters once into typed dataclasses
(``*Params.from_ros``: a bad value is a KernelError naming the parameter)."""
from __future__ import annotations

import os
import re
import xmlrpc.client
from typing import Any

import pytest
import yaml

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.manager_node import ManagerParams
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.vehicle.mission import MissionConfig
from kernel_manager_ros.vehicle.mission_node import MissionParams
from kernel_manager_ros.vehicle.model import VehicleConfig
from kernel_manager_ros.vehicle.sim_node import VehicleSimParams
from sim2real_checks import StandInParameters

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config")
SOURCE = "parameter /node/config"
READERS = {"vehicle_topics.yaml": StateSpec, "panda_topics.yaml": StateSpec,
           "vehicle_design.yaml": VehicleConfig, "vehicle_deploy.yaml": VehicleConfig,
           "vehicle_deploy_slow_gps.yaml": VehicleConfig, "mission.yaml": MissionConfig}


def on_parameter_server(path: str) -> Any:
    """The file's mapping as a node gets it back from the parameter server (XML-RPC: no null)."""
    with open(path) as f:
        data = yaml.safe_load(f)
    return xmlrpc.client.loads(xmlrpc.client.dumps((data,)))[0][0]


@pytest.mark.parametrize("name", sorted(READERS))
def test_the_mapping_a_launch_file_loads_gives_what_the_file_gives(name):
    path = os.path.join(CONFIG, name)
    cls = READERS[name]
    assert cls.from_dict(on_parameter_server(path), SOURCE) == cls.from_yaml(path)


GOOD_SPEC = yaml.safe_load(open(os.path.join(CONFIG, "vehicle_topics.yaml")))
BAD = [
    (StateSpec, [1, 2], "must be a mapping"),
    (StateSpec, {**GOOD_SPEC, "sensor": []}, "unknown keys"),
    (StateSpec, {k: v for k, v in GOOD_SPEC.items() if k != "reward"}, "missing key 'reward'"),
    (StateSpec, {**GOOD_SPEC, "epsilon_c": "big"}, "epsilon_c must be a finite number"),
    (StateSpec, {**GOOD_SPEC, "sensors": []}, "at least one sensor"),
    (StateSpec, {**GOOD_SPEC, "actions": [{"name": "cmd"}]}, "action 0: missing key 'topic'"),
    (VehicleConfig, "vehicle.yaml", "must be a mapping"),
    (VehicleConfig, {"vehicle": {"wheelbase": -1.0}},
     "vehicle.wheelbase must be a finite number > 0"),
    (VehicleConfig, {"sensors": {"gps_rate": 30}}, "must divide"),
    (VehicleConfig, {"physics_rate": "fast"}, "could not convert"),
    (VehicleConfig, {"ramp": {"start": [1, 2, 3]}}, "2 numbers"),
    (MissionConfig, {"goals": [{"name": "a", "x": 1.0}]}, "a goal lacks key"),
    (MissionConfig, {"goals": [{"name": "a", "x": 1, "y": 1, "epsilon": -1, "deadline": 5}]},
     "epsilon and deadline must be > 0"),
    (MissionConfig, {"control_rate": 0}, "control_rate"),
    (MissionConfig, {"program": {"max_speed": "x"}}, "could not convert"),
    (MissionConfig, {"program": {"max_speed": -1}}, "program.max_speed"),
]


@pytest.mark.parametrize("cls,data,message", BAD)
def test_a_malformed_mapping_is_one_error_naming_its_source(cls, data, message):
    with pytest.raises(KernelError, match=f"^{re.escape(SOURCE)}:? .*{message}"):
        cls.from_dict(data, SOURCE)


@pytest.mark.parametrize("cls", [StateSpec, VehicleConfig, MissionConfig])
def test_a_malformed_file_is_one_error_naming_the_file(cls, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("epsilon_c: 0.1\nwheels: 4\n")
    with pytest.raises(KernelError, match=re.escape(str(path)) + ": .*unknown keys"):
        cls.from_yaml(path)


# ------------------------------------------------------------------ the nodes' parameters
@pytest.fixture
def params(monkeypatch: pytest.MonkeyPatch) -> StandInParameters:
    """A private parameter server for ``*Params.from_ros`` (``~name`` keys), its warnings kept."""
    return StandInParameters().install(monkeypatch)


def test_the_manager_reads_the_mapping_or_the_old_path(params):
    path = os.path.join(CONFIG, "vehicle_topics.yaml")
    params.update({"~config": on_parameter_server(path), "~kernels": "/k.yaml"})
    read = ManagerParams.from_ros()
    assert read.spec == StateSpec.from_yaml(path) and read.kernels_path == "/k.yaml"
    assert (read.suffix, read.max_abs, read.set_state) == ("_kernel", 1e5, None)
    assert params.warnings == []
    params["~config"] = path
    assert ManagerParams.from_ros().spec == read.spec
    assert len(params.warnings) == 1 and "deprecated" in params.warnings[0]


@pytest.mark.parametrize("values,message", [
    ({"~config": None}, "~config .* must be set"),
    ({"~config": ""}, "~config .* must be set"),
    ({"~config": {"sensors": []}}, "^parameter /node/config: "),
    ({"~config": "/no/such/spec.yaml"}, "/no/such/spec.yaml"),
    ({"~kernels": ""}, "~kernels"),
    ({"~max_abs": "abc"}, "~max_abs must be a finite number > 0, got 'abc'"),
    ({"~max_abs": 0}, "~max_abs"),
    ({"~suffix": 3}, "~suffix"),
])
def test_a_bad_manager_parameter_is_named(params, values, message):
    params.update({"~config": on_parameter_server(os.path.join(CONFIG, "vehicle_topics.yaml")),
                   "~kernels": "/k.yaml", **values})
    with pytest.raises(KernelError, match=message):
        ManagerParams.from_ros()


def test_vehicle_sim_reads_the_mapping_and_its_overrides(params):
    path = os.path.join(CONFIG, "vehicle_deploy.yaml")
    params.update({"~config": on_parameter_server(path), "~gps_rate": 1, "~seed": 7,
                   "~publish_clock": True, "~real_time_factor": 0})
    read = VehicleSimParams.from_ros()
    assert read.config == VehicleConfig.from_yaml(path).with_overrides(gps_rate=1.0, seed=7)
    assert read.publish_clock is True and read.real_time_factor == 0.0
    params.clear()    # nothing set: the design vehicle, as configured
    params.warnings.clear()
    read = VehicleSimParams.from_ros()
    assert read.config == VehicleConfig.from_yaml(os.path.join(CONFIG, "vehicle_design.yaml"))
    assert read.publish_clock is False and read.real_time_factor == 1.0


@pytest.mark.parametrize("values,name", [
    ({"~gps_rate": "abc"}, "~gps_rate"), ({"~gps_rate": -1}, "~gps_rate"),
    ({"~gps_rate": 30}, "~gps_rate"), ({"~seed": "x"}, "~seed"), ({"~seed": 1.5}, "~seed"),
    ({"~seed": -1}, "~seed"), ({"~publish_clock": "maybe"}, "~publish_clock"),
    ({"~real_time_factor": "fast"}, "~real_time_factor"),
    ({"~real_time_factor": -1.0}, "~real_time_factor"),
    ({"~config": {"physics_rate": "x"}}, "parameter /node/config"),
    ({"~config": 5}, "parameter /node/config"),
])
def test_a_bad_vehicle_sim_parameter_is_named(params, values, name):
    params.update(values)
    with pytest.raises(KernelError, match=re.escape(name)):
        VehicleSimParams.from_ros()


def test_mission_reads_the_mapping_and_its_overrides(params):
    path = os.path.join(CONFIG, "mission.yaml")
    params.update({"~config": on_parameter_server(path), "~missions": 3, "~gap": 0.5,
                   "~seed": 4, "~use_kernel_topics": True, "~pitch_speed_gain": 2})
    read = MissionParams.from_ros()
    assert read.config == MissionConfig.from_yaml(path).with_program(pitch_speed_gain=2.0)
    assert (read.missions, read.gap, read.seed, read.use_kernel_topics) == (3, 0.5, 4, True)
    params.clear()
    params.warnings.clear()
    read = MissionParams.from_ros()
    assert read.config == MissionConfig.from_yaml(path)
    assert (read.missions, read.gap, read.seed, read.use_kernel_topics) == (0, 2.0, 0, False)


@pytest.mark.parametrize("values,name", [
    ({"~missions": "foo"}, "~missions"), ({"~missions": -1}, "~missions"),
    ({"~missions": 1.5}, "~missions"), ({"~gap": "bar"}, "~gap"), ({"~gap": float("nan")}, "~gap"),
    ({"~seed": "x"}, "~seed"), ({"~use_kernel_topics": "yes"}, "~use_kernel_topics"),
    ({"~pitch_speed_gain": "high"}, "~pitch_speed_gain"),
    ({"~pitch_speed_gain": -1}, "~pitch_speed_gain"),
    ({"~config": {"goals": []}}, "parameter /node/config"),
])
def test_a_bad_mission_parameter_is_named(params, values, name):
    params.update(values)
    with pytest.raises(KernelError, match=re.escape(name)):
        MissionParams.from_ros()
