"""Robot configuration and URDF loading: defaults load, bad files give one clear error."""
import dataclasses

import pytest
import yaml

from panda_sim2real.errors import ConfigError
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot_config import REALITY_CONFIG_FILE, SIM_CONFIG_FILE, RobotConfig
from panda_sim2real.urdf_model import load_urdf, prepare_dynamics_urdf


def raw_reality():
    with open(REALITY_CONFIG_FILE, encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_default_configs_load():
    sim = RobotConfig.from_yaml(SIM_CONFIG_FILE)
    real = RobotConfig.from_yaml(REALITY_CONFIG_FILE)
    assert (sim.engine, real.engine) == ("pybullet", "mujoco")
    assert real.label == "reality stand-in"
    assert sim.friction is None and real.friction is not None
    assert real.steps_per_publish == 10


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        RobotConfig.from_yaml(str(tmp_path / "nope.yaml"))


def test_malformed_yaml(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("engine: mujoco\nphysics_rate: [1000\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        RobotConfig.from_yaml(str(path))


@pytest.mark.parametrize("change, phrase", [
    (lambda r: r["friction"].__setitem__("phi1", [1.0] * 6), "friction.phi1"),
    (lambda r: r["torque_sensor"].__setitem__("noise_std", [float("nan")] * 7), "torque_sensor.noise_std"),
    (lambda r: r.__setitem__("engine", "gazebo"), "engine"),
    (lambda r: r.__setitem__("publish_rate", 300), "publish rate"),
    (lambda r: r["controller"].__setitem__("type", "magic"), "controller.type"),
    (lambda r: r["inertials"]["panda_link2"].__setitem__("mass", -1.0), "panda_link2.mass"),
    (lambda r: r.pop("controller"), "controller"),
])
def test_schema_errors_name_the_entry(change, phrase):
    raw = raw_reality()
    change(raw)
    with pytest.raises(ConfigError, match=phrase.replace(".", r"\.")):
        RobotConfig.from_dict(raw, source="test.yaml")


def test_overrides_are_checked():
    config = RobotConfig.from_yaml(SIM_CONFIG_FILE)
    assert config.with_overrides(publish_rate=1000).steps_per_publish == 1
    with pytest.raises(ConfigError):
        config.with_overrides(publish_rate=333)


def test_urdf_errors(tmp_path):
    with pytest.raises(ConfigError, match="URDF not found"):
        load_urdf(str(tmp_path / "missing.urdf"))
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot name='x'><link name='a'>")
    with pytest.raises(ConfigError, match="not valid XML"):
        load_urdf(str(broken))
    with pytest.raises(ConfigError, match="links the URDF does not have"):
        prepare_dynamics_urdf(load_urdf(None), {"no_such_link": RobotConfig.from_yaml(
            REALITY_CONFIG_FILE).inertials["panda_link1"]})


def test_robot_rejects_urdf_without_panda_joints(tmp_path):
    from panda_sim2real.robot import SimulatedRobot

    other = tmp_path / "other.urdf"
    other.write_text("<robot name='x'><link name='a'/><link name='b'/>"
                     "<joint name='j' type='revolute'><parent link='a'/><child link='b'/>"
                     "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint></robot>")
    config = RobotConfig.from_yaml(SIM_CONFIG_FILE).with_overrides(urdf=str(other))
    with pytest.raises(ConfigError, match="lacks the joints"):
        SimulatedRobot(config, JointLimits.from_yaml())


@pytest.mark.parametrize("path", [SIM_CONFIG_FILE, REALITY_CONFIG_FILE])
def test_the_shipped_configs_load_onto_the_parameter_server(path):
    """The launch files load these files onto the parameter server (<rosparam>), which holds
    no null and drops an empty mapping: they leave an absent entry out, and what the node reads
    back (the mapping without its empty mappings) is the file's configuration."""
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f)

    def server(tree):
        assert tree is not None
        if isinstance(tree, dict):
            return {k: server(v) for k, v in tree.items() if v != {}}
        return [server(v) for v in tree] if isinstance(tree, list) else tree

    from_param = RobotConfig.from_dict(server(raw), source="parameter /sim/panda_sim/config")
    from_file = RobotConfig.from_yaml(path)
    assert from_param.source == "parameter /sim/panda_sim/config"
    assert repr(dataclasses.replace(from_param, source="")) == repr(dataclasses.replace(from_file, source=""))
