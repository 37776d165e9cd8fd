"""Gazebo 11 for sim2real without gazebo_ros: gzserver in the Gazebo image run from the host,
its world, and lock-step sessions. The C++ side (the ROS API system plugin) is in src/gazebo/."""
from sim2real_gazebo.container import (IMAGE, ContainerConfig, GzserverContainer, engine,
                                       free_port, gzserver_command)
from sim2real_gazebo.errors import GazeboError
from sim2real_gazebo.session import GazeboSession, ensure_master, init_node
from sim2real_gazebo.world import WorldConfig

__all__ = ["IMAGE", "ContainerConfig", "GazeboError", "GazeboSession", "GzserverContainer",
           "WorldConfig", "engine", "ensure_master", "free_port", "gzserver_command", "init_node"]
