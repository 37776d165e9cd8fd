"""The ``gzserver_container`` node (nodes/gzserver_container is its start-up): gzserver of the
Gazebo image for a roslaunch on the host. Its parameters (:class:`ServerParams`) make the world;
the model comes from the parameter ~spawn names (robot_description), spawned by the ROS API
plugin. The node ends when gzserver ends (``required="true"`` in the launch then ends the
launch), and a roslaunch shutdown stops the container within STOP_SECONDS + 5 s."""
from __future__ import annotations

from dataclasses import dataclass

import rospy
from sim2real_checks import number_param

from sim2real_gazebo.container import IMAGE, ContainerConfig, GzserverContainer
from sim2real_gazebo.errors import GazeboError
from sim2real_gazebo.world import WorldConfig


@dataclass(frozen=True)
class ServerParams:
    world: WorldConfig
    spawn: str = "robot_description"
    paused: bool = False
    image: str = IMAGE

    @classmethod
    def from_ros(cls) -> "ServerParams":
        try:
            world = WorldConfig(
                physics_rate=number_param("~physics_rate", 1000.0, GazeboError, positive=True),
                real_time_factor=number_param("~real_time_factor", 1.0, GazeboError, minimum=0.0),
                gravity=number_param("~gravity", 9.81, GazeboError),
                solver=str(rospy.get_param("~solver", "world")))
        except ValueError as exc:
            raise GazeboError(str(exc)) from None
        return cls(world=world, spawn=str(rospy.get_param("~spawn", "robot_description")),
                   paused=bool(rospy.get_param("~paused", False)),
                   image=str(rospy.get_param("~image", IMAGE)))


class ServerNode:
    """gzserver running for :class:`ServerParams`; :meth:`spin` until it or ROS ends."""

    def __init__(self, params: ServerParams) -> None:
        spawn = rospy.resolve_name(params.spawn) if params.spawn else ""
        self.container = GzserverContainer(ContainerConfig(
            world=params.world, spawn=spawn, paused=params.paused, image=params.image))
        rospy.loginfo(f"{rospy.get_name()}: {' '.join(self.container.command)}")
        try:
            self.container.start()
        except BaseException:
            self.container.stop()
            raise

    @classmethod
    def from_parameters(cls) -> "ServerNode":
        return cls(ServerParams.from_ros())

    def spin(self) -> None:
        rate = rospy.Rate(10)
        while not rospy.is_shutdown() and self.container.running():
            try:
                rate.sleep()
            except rospy.ROSInterruptException:
                break
        if self.container.process.poll() is not None and not rospy.is_shutdown():
            rospy.logerr(f"{rospy.get_name()}: gzserver exited with status "
                         f"{self.container.process.returncode}")

    def close(self) -> None:
        self.container.stop()
