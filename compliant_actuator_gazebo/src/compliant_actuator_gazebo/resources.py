"""Paths of the package's data files (URDF, config), in the source/devel tree or installed."""
from __future__ import annotations

import os

_SOURCE_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def package_file(*parts: str) -> str:
    """Path of a file of the package (e.g. ``package_file("urdf", "one_dof.urdf.xacro")``):
    from the source tree when the library runs from it (devel space), else from the installed
    share directory that rospkg finds (no ROS master needed)."""
    path = os.path.join(_SOURCE_ROOT, *parts)
    if os.path.exists(path):
        return path
    import rospkg

    try:
        return os.path.join(rospkg.RosPack().get_path("compliant_actuator_gazebo"), *parts)
    except rospkg.ResourceNotFound:
        raise FileNotFoundError(f"{os.path.join(*parts)}: compliant_actuator_gazebo is neither "
                                f"in the source tree nor on ROS_PACKAGE_PATH") from None
