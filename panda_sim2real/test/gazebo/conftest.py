"""The Gazebo tests (make gazebo-test; not in make test): gzserver 11 of the Gazebo image with
panda_gazebo's Panda plugin, driven from this process over a private ROS master on 127.0.0.1."""
import os

import pytest

PKG = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOGS = os.path.join(os.environ.get("SIM2REAL_ROOT", PKG), "build", "gazebo-test")


@pytest.fixture(scope="session", autouse=True)
def ros_master():
    """A private master for the whole session (rospy's node is initialised once per process)."""
    from sim2real_gazebo import ensure_master, init_node
    os.environ.pop("ROS_MASTER_URI", None)
    uri = ensure_master()
    init_node("gazebo_test")
    os.makedirs(LOGS, exist_ok=True)
    return uri


def log_path(name: str) -> str:
    """gzserver's output file for one test (build/gazebo-test/NAME.log), emptied first."""
    path = os.path.join(LOGS, f"{name}.log")
    open(path, "w").close()
    return path
