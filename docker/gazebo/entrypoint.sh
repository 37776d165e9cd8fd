#!/bin/bash
# The Gazebo image's entrypoint: Gazebo's and the workspace's environment, the plugins on
# GAZEBO_PLUGIN_PATH (the example actuator library on LD_LIBRARY_PATH), then the command.
# Gazebo's own transport stays on loopback unless the caller chose otherwise.
set -e
master="${GAZEBO_MASTER_URI:-http://127.0.0.1:11345}"   # setup.sh overwrites it
# shellcheck disable=SC1091
source /usr/share/gazebo/setup.sh
set +u
# shellcheck disable=SC1091
source /opt/sim2real/ws/devel/setup.bash
lib=/opt/sim2real/ws/devel/lib
export GAZEBO_PLUGIN_PATH="$lib${GAZEBO_PLUGIN_PATH:+:$GAZEBO_PLUGIN_PATH}"
export LD_LIBRARY_PATH="$lib:$lib/compliant_actuator_gazebo${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GAZEBO_IP="${GAZEBO_IP:-127.0.0.1}" IGN_IP="${IGN_IP:-127.0.0.1}"
export ROS_IP="${ROS_IP:-127.0.0.1}"
export GAZEBO_MASTER_URI="$master"
export GAZEBO_MODEL_DATABASE_URI=""       # no model downloads: worlds include no model://
exec "$@"
