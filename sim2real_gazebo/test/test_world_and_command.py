"""The host side of sim2real_gazebo without a container: the world file and the engine command
that keeps gzserver on loopback, and the one-line errors of a machine without an engine."""
import os
import xml.etree.ElementTree as ET

import pytest

from sim2real_gazebo import ContainerConfig, GazeboError, WorldConfig, engine, gzserver_command


def test_the_world_has_the_asked_physics_and_nothing_to_download():
    root = ET.fromstring(WorldConfig(physics_rate=4000, real_time_factor=0.0, gravity=9.0).sdf())
    physics = root.find("world/physics")
    assert float(physics.findtext("max_step_size")) == pytest.approx(2.5e-4)
    assert float(physics.findtext("real_time_update_rate")) == 0.0        # unthrottled
    assert physics.findtext("ode/solver/type") == "world"
    assert root.findtext("world/gravity") == "0 0 -9.0"
    assert root.find(".//include") is None                                 # no model:// download
    paced = ET.fromstring(WorldConfig(physics_rate=1000, real_time_factor=1.0).sdf())
    assert float(paced.findtext("world/physics/real_time_update_rate")) == 1000.0


@pytest.mark.parametrize("kwargs, message", [
    ({"physics_rate": 0.0}, "physics_rate must be a finite number > 0"),
    ({"physics_rate": float("nan")}, "physics_rate must be a finite number > 0"),
    ({"real_time_factor": -1.0}, "real_time_factor must be a finite number >= 0"),
    ({"gravity": float("inf")}, "gravity must be finite"),
    ({"solver": "dart"}, "solver must be 'world' or 'quick'"),
])
def test_a_bad_world_is_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WorldConfig(**kwargs)


def test_the_command_keeps_every_transport_on_loopback(monkeypatch):
    monkeypatch.setenv("ROS_IP", "192.0.2.1")                              # a LAN address: not passed on
    config = ContainerConfig(master_uri="http://127.0.0.1:12345", spawn="/robot_description",
                             paused=True, mounts=(("/tmp/lib", "/lib/user"),))
    cmd = gzserver_command(config, "podman", "/tmp/w.sdf", "c1", 23456)
    joined = " ".join(cmd)
    assert cmd[:3] == ["podman", "run", "--rm"]
    assert "--network host" in joined and "--pid host" in joined
    for env in ("ROS_MASTER_URI=http://127.0.0.1:12345", "ROS_IP=127.0.0.1", "GAZEBO_IP=127.0.0.1",
                "IGN_IP=127.0.0.1", "SIM2REAL_SPAWN=/robot_description",
                "GAZEBO_MASTER_URI=http://127.0.0.1:23456", f"SIM2REAL_OWNER_PID={os.getpid()}"):
        assert env in cmd
    assert "/tmp/w.sdf:/sim2real/world.sdf:ro" in cmd and "/tmp/lib:/lib/user:ro" in cmd
    tail = cmd[cmd.index("gzserver"):]
    assert tail[-2:] == ["/sim2real/world.sdf", "__name:=gazebo"]
    assert "-u" in tail and tail[tail.index("-s") + 1] == "libsim2real_gazebo_ros_api.so"


def test_no_engine_says_what_to_install(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(GazeboError, match="install podman"):
        engine()
