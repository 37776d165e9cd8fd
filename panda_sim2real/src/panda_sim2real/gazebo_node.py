"""The ``panda_gazebo`` node (``sim:=gazebo``): the nominal simulator in Gazebo 11 behind panda_sim's
topics. It reads the same parameters as panda_sim (``~config``, ``~limits``, ``~urdf``,
``~publish_rate``, ``~real_time_factor``), writes the model (``robot_description`` in its
namespace) and panda_gazebo's plugin parameters (gazebo_model.py), and runs gzserver of the Gazebo
image with them (sim2real_gazebo's ServerNode), the clock source on /clock. The topics are the
plugin's: ``joint_states``, ``joint_trajectory_controller/reference``, ``label``,
``joint_trajectory_controller/command`` and ``set_joint_state``. A bad configuration or URDF
stops it with one line before gzserver starts; it ends when gzserver ends."""
from __future__ import annotations

import rospy
from sim2real_checks import number_param, run_node
from sim2real_gazebo import GazeboError, ServerNode, ServerParams, WorldConfig

from panda_sim2real.errors import PandaError
from panda_sim2real.gazebo_model import gazebo_model
from panda_sim2real.robot_config import SIM_CONFIG_FILE
from panda_sim2real.robot_node import robot_params

DESCRIPTION = "robot_description"


def make_node() -> ServerNode:
    limits, config = robot_params("config", SIM_CONFIG_FILE)
    namespace = rospy.get_namespace().strip("/") or "sim"
    model = gazebo_model(config, limits, namespace)
    rospy.set_param(DESCRIPTION, model.urdf)
    for key, value in model.params.items():
        rospy.set_param(key, value)
    rtf = number_param("~real_time_factor", 1.0, PandaError, minimum=0.0)
    rospy.loginfo("%s: %s, physics %.0f Hz, joint_states %.0f Hz, config %s", rospy.get_name(),
                  model.label, model.physics_rate, config.publish_rate, config.source)
    return ServerNode(ServerParams(world=WorldConfig(physics_rate=model.physics_rate,
                                                     real_time_factor=rtf), spawn=DESCRIPTION))


def main() -> None:
    run_node("panda_gazebo", make_node, ServerNode.spin, ServerNode.close,
             errors=(PandaError, GazeboError))
