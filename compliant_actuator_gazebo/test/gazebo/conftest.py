"""The Gazebo tests (make gazebo-test; not in make test): gzserver 11 of the Gazebo image, driven
from this process over a private ROS master on 127.0.0.1 (sim2real_gazebo.testing)."""
import pytest

from sim2real_gazebo.testing import log_path, start_private_master  # noqa: F401 (the tests' log_path)


@pytest.fixture(scope="session", autouse=True)
def ros_master():
    """A private master for the whole session (rospy's node is initialised once per process)."""
    return start_private_master()
