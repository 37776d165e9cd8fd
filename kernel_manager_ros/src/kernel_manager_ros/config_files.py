"""Where the package's configuration files are: its ``config/`` folder in the source tree, or
the installed share folder found through rospkg."""
from __future__ import annotations

import os

CONFIG_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "config"))


def config_path(name: str) -> str:
    """The path of ``config/<name>`` (source tree first, then the installed package)."""
    path = os.path.join(CONFIG_DIR, name)
    if os.path.isfile(path):
        return path
    try:
        import rospkg
        return os.path.join(rospkg.RosPack().get_path("kernel_manager_ros"), "config", name)
    except Exception:   # rospkg missing or the package not on ROS_PACKAGE_PATH
        return path
