"""The Gazebo tests (make gazebo-test; not in make test): gzserver 11 of the Gazebo image, driven
from this process over a private ROS master on 127.0.0.1 (sim2real_gazebo.testing)."""
from sim2real_gazebo import ros_master  # noqa: F401 (the session's master, a fixture)
