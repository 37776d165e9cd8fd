#!/bin/bash
# The Gazebo image's entrypoint: Gazebo's and the workspace's environment, the plugins on
# GAZEBO_PLUGIN_PATH (the example actuator library on LD_LIBRARY_PATH), then the command (tied to
# its owner's life when SIM2REAL_OWNER_PID is set).
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
# every socket on loopback (loopback_only.c: gzserver and ignition transport bind 0.0.0.0 and
# multicast otherwise); each server its own ignition partition
if [ "${SIM2REAL_LOOPBACK_ONLY:-1}" != 0 ]; then
  export LD_PRELOAD="/opt/sim2real/libloopback_only.so${LD_PRELOAD:+:$LD_PRELOAD}"
fi
export IGN_PARTITION="${IGN_PARTITION:-sim2real-$HOSTNAME-$$}"
# With SIM2REAL_OWNER_PID (a host pid; the container shares the host's pid namespace), a watchdog
# stops the command when that process is gone, so a killed host process leaves no gzserver
# behind. The command itself replaces this shell ($$), so its exit status is the container's.
if [ -n "${SIM2REAL_OWNER_PID:-}" ]; then
  main=$$
  (
    while kill -0 "$SIM2REAL_OWNER_PID" 2>/dev/null; do sleep 1; done
    echo "entrypoint: process $SIM2REAL_OWNER_PID is gone: stopping $1" >&2
    kill -INT "$main" 2>/dev/null
    for _ in 1 2 3 4 5; do kill -0 "$main" 2>/dev/null || exit 0; sleep 1; done
    kill -KILL "$main" 2>/dev/null
  ) &
fi
exec "$@"
