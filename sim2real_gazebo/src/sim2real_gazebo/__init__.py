"""Gazebo 11 for sim2real without gazebo_ros: gzserver in the Gazebo image run from the host,
its world, and lock-step sessions. The C++ side (the ROS API system plugin) is in src/gazebo/."""
from sim2real_checks import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "container": ["ContainerConfig", "GzserverContainer", "IMAGE", "engine", "free_port", "gzserver_command",
        "pids_of"],
    "errors": ["GazeboError"],
    "server_node": ["ServerNode", "ServerParams"],
    "session": ["GazeboSession", "ensure_master", "init_node"],
    "testing": ["LOGS", "log_path", "ros_master", "run_launch", "start_private_master"],
    "world": ["WorldConfig"],
})
