"""env.sh keeps ROS on loopback whatever the workspace's setup sets, and keeps the caller's choice
(issue 18)."""
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sourced(tmp_path, environment):
    """ROS_MASTER_URI, ROS_IP, ROS_HOSTNAME after sourcing a copy of env.sh whose workspace
    setup (like catkin's) sets ROS_MASTER_URI to localhost and a ROS_HOSTNAME."""
    shutil.copy(os.path.join(ROOT, "env.sh"), tmp_path / "env.sh")
    devel = tmp_path / "build" / "ws" / "devel"
    devel.mkdir(parents=True, exist_ok=True)
    (devel / "setup.bash").write_text("export ROS_MASTER_URI=http://localhost:11311\n"
                                      "export ROS_HOSTNAME=robot-pc\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("ROS_MASTER_URI", "ROS_IP", "ROS_HOSTNAME", "VIRTUAL_ENV")}
    env.update(environment)
    out = subprocess.run(["bash", "-c", f"source {tmp_path}/env.sh && echo $ROS_MASTER_URI "
                                        f"$ROS_IP ${{ROS_HOSTNAME:-unset}}"],
                         capture_output=True, text=True, env=env, check=True).stdout.split()
    return tuple(out)


def test_loopback_even_when_the_workspace_setup_sets_localhost(tmp_path):
    assert sourced(tmp_path, {}) == ("http://127.0.0.1:11311", "127.0.0.1", "unset")


def test_the_callers_master_and_host_are_kept(tmp_path):
    assert sourced(tmp_path, {"ROS_MASTER_URI": "http://127.0.0.9:12000", "ROS_IP": "127.0.0.9"}) \
        == ("http://127.0.0.9:12000", "127.0.0.9", "unset")
    assert sourced(tmp_path, {"ROS_HOSTNAME": "127.0.0.3"})[2] == "127.0.0.3"
