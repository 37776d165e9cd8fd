"""What the packages' Gazebo tests share (make gazebo-test): one private ROS master on 127.0.0.1
for a pytest session (the fixture ``ros_master``, which each test/gazebo/conftest.py imports),
gzserver's log file per test under build/gazebo-test/, and a launch file run as a user runs it."""
from __future__ import annotations

import os
import signal
import subprocess

import pytest

LOGS = os.path.join(os.environ.get("SIM2REAL_ROOT", os.getcwd()), "build", "gazebo-test")


def start_private_master(node_name: str = "gazebo_test") -> str:
    """A master of this process's own (a user's running roscore is left alone) and rospy's node
    (initialised once per process); its URI."""
    from sim2real_gazebo.session import ensure_master, init_node
    os.environ.pop("ROS_MASTER_URI", None)
    uri = ensure_master()
    init_node(node_name)
    os.makedirs(LOGS, exist_ok=True)
    return uri


def log_path(name: str) -> str:
    """gzserver's output file for one test (build/gazebo-test/NAME.log), emptied first."""
    os.makedirs(LOGS, exist_ok=True)
    path = os.path.join(LOGS, f"{name}.log")
    open(path, "w").close()
    return path


@pytest.fixture(scope="session", autouse=True)
def ros_master() -> str:
    """A private master for the whole session (rospy's node is initialised once per process)."""
    return start_private_master()


def run_launch(*args: str, timeout: float) -> str:
    """``roslaunch ARGS`` on a master of its own (a free 127.0.0.1 port) until it ends; its
    output. A launch still running after ``timeout`` seconds is stopped and fails the test."""
    from sim2real_gazebo.container import free_port
    port = free_port()
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_IP="127.0.0.1")
    launch = subprocess.Popen(["roslaunch", "-p", str(port), *args], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        return launch.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        os.killpg(launch.pid, signal.SIGINT)
        output, _ = launch.communicate(timeout=30)
        pytest.fail(f"the launch did not end: {output[-2000:]}")
