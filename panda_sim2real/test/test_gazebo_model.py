"""The Panda's Gazebo model from a simulator configuration (gazebo_model.py) and the elapsed cut
of GazeboRobot.command, without gzserver (make test)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

from panda_sim2real.errors import ConfigError
from panda_sim2real.gazebo_model import PLUGIN, VELOCITY_LIMIT, gazebo_label, gazebo_model
from panda_sim2real.gazebo_robot import elapsed_cut
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot_config import SIM_CONFIG_FILE, RobotConfig
from panda_sim2real.trajectory_generation import KINDS, GeneratorSettings, TrajectoryGenerator

LIMITS = JointLimits.from_yaml()


def sim_config(**changes) -> RobotConfig:
    with open(SIM_CONFIG_FILE) as f:
        raw = yaml.safe_load(f)
    raw.update(changes)
    return RobotConfig.from_dict(raw, "test config")


def test_the_model_is_fixed_to_the_world_with_the_plugin_and_gazebo_limits():
    friction = {"phi1": [0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1], "phi2": [50.0] * 7, "phi3": [0.0] * 7}
    model = gazebo_model(sim_config(friction=friction, latency=0.002), LIMITS)
    root = ET.fromstring(model.urdf)
    world = [j for j in root.iter("joint") if j.find("parent").get("link") == "world"]
    assert len(world) == 1 and world[0].get("type") == "fixed"
    assert world[0].find("child").get("link") == "panda_link0"
    for j, name in enumerate(LIMITS.joint_names):
        limit = next(x for x in root.iter("joint") if x.get("name") == name).find("limit")
        assert float(limit.get("velocity")) == VELOCITY_LIMIT
        assert float(limit.get("effort")) == pytest.approx(LIMITS.effort[j] + friction["phi1"][j])
    plugin = root.find("gazebo/plugin")
    assert plugin.get("filename") == PLUGIN and plugin.find("robotNamespace").text == "sim"
    assert not list(root.iter("visual")) and not list(root.iter("collision"))
    p = model.params
    assert p["/sim/gazebo/joint_names"] == list(LIMITS.joint_names)
    assert p["/sim/gazebo/initial_positions"] == LIMITS.home.tolist()
    assert p["/sim/gazebo/friction_phi1"] == friction["phi1"] and p["/sim/gazebo/latency"] == 0.002
    assert p["/sim/gazebo/label"] == "Gazebo 11 simulation"
    assert "/sim/gazebo/torque_offset" not in p
    assert model.physics_rate == 1000.0


def test_labels():
    assert gazebo_label("simulation (identified)") == "Gazebo 11 simulation (identified)"
    assert gazebo_label("my arm") == "my arm (Gazebo 11)"


@pytest.mark.parametrize("changes, message", [
    ({"urdf": "/nonexistent/panda.urdf"}, "URDF not found: /nonexistent/panda.urdf"),
    ({"elasticity": {"stiffness": [1e4] * 7, "damping": [10.0] * 7, "rotor_inertia": [0.5] * 7}},
     "rigid joints"),
    ({"encoders": {"position_noise_std": 1e-4, "velocity_noise_std": 1e-3}}, "encoder noise"),
    ({"torque_sensor": {"offset": [0.0] * 7, "noise_std": [0.1] * 7}}, "no sensor noise"),
    ({"controller": {"type": "joint_impedance", "stiffness": [1.0] * 7, "damping": [1.0] * 7}},
     "effort PID"),
])
def test_what_gazebo_cannot_run_is_refused_before_gzserver_starts(changes, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        gazebo_model(sim_config(**changes), LIMITS)


def test_a_urdf_without_the_panda_joints_is_refused(tmp_path):
    (tmp_path / "arm.urdf").write_text("<robot name='arm'><link name='base'/></robot>")
    with pytest.raises(ConfigError, match="lacks the joints"):
        gazebo_model(sim_config(urdf=str(tmp_path / "arm.urdf")), LIMITS)


def test_the_elapsed_cut_gives_the_same_reference_from_now_on():
    move = TrajectoryGenerator(LIMITS, GeneratorSettings(), seed=2).next(LIMITS.home, KINDS).trajectory
    planned = move.at(3.0)
    for now in (3.0, 3.37, 3.0 + planned.duration / 2, 3.0 + planned.duration + 1.0):
        cut = elapsed_cut(planned, now)
        assert cut.start == now and cut.times[0] == 0.0
        np.testing.assert_allclose(cut.sample(0.0)[0], planned.sample(now - 3.0)[0], atol=1e-12)
        for t in np.linspace(now, 3.0 + planned.duration + 0.5, 200)[1:]:   # velocity: after now
            np.testing.assert_allclose(cut.sample(t - now)[0], planned.sample(t - 3.0)[0], atol=1e-12)
            np.testing.assert_allclose(cut.sample(t - now)[1], planned.sample(t - 3.0)[1], atol=1e-9)
