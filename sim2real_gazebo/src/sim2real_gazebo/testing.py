"""What the packages' Gazebo tests share (make gazebo-test): one private ROS master on 127.0.0.1
for a pytest session, and gzserver's log file per test under build/gazebo-test/."""
from __future__ import annotations

import os

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
