"""The simulator's config with an identified model (identified_config.py): the simulator accepts
what is written, refuses what it would refuse (nothing written), and picks a stable physics rate."""
import os

import numpy as np
import pytest

from panda_sim2real.errors import ConfigError
from panda_sim2real.identified_config import JointIdentification, stable_rate, write_identified_config
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot_config import RobotConfig
from panda_sim2real.urdf_model import nominal_urdf_path


def test_the_identified_simulator_config_is_one_the_simulator_accepts(tmp_path):
    out = str(tmp_path / "sim.yaml")
    joint = JointIdentification(friction=[[0.5, 8.0, 0.01]] * 7, offset=[0.1, -0.2, 0.0, 0.3, 0.0, 0.0, 0.05])
    assert write_identified_config(nominal_urdf_path(), joint, out, physics_rate=4000) == 4000
    config = RobotConfig.from_yaml(out)
    assert config.physics_rate == 4000 and config.label == "simulation (identified)"
    np.testing.assert_allclose(config.friction.phi2, 8.0)
    np.testing.assert_allclose(config.torque_sensor.offset[1], -0.2)
    np.testing.assert_allclose(config.torque_sensor.noise_std, 0.0)
    bad = JointIdentification(friction=[[0.5, 8.0, float("nan")]] * 7)
    with pytest.raises(ConfigError, match="friction"):
        write_identified_config(nominal_urdf_path(), bad, str(tmp_path / "bad.yaml"), physics_rate=4000)
    assert os.listdir(tmp_path) == ["sim.yaml"]


def test_without_a_rate_the_lowest_stable_one_is_written(tmp_path):
    joints = JointIdentification(offset=[0.0] * 7)
    q = np.array([JointLimits.from_yaml().home] * 3)
    rate = write_identified_config(nominal_urdf_path(), joints, str(tmp_path / "sim.yaml"), configurations=q)
    assert rate == stable_rate(nominal_urdf_path(), joints, q)
    assert RobotConfig.from_yaml(str(tmp_path / "sim.yaml")).physics_rate == rate
    with pytest.raises(ConfigError, match="needs a physics rate"):
        write_identified_config(nominal_urdf_path(), joints, str(tmp_path / "other.yaml"))
