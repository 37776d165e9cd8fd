#!/usr/bin/env bash
# The container's entrypoint: the real-time preflight (one verdict table), then the real-time
# parts (launch/robot_pc.launch). A failed preflight stops the container with what to change on
# the host, unless SIM2REAL_ALLOW_DEGRADED=1 (then the 1 kHz loop runs degraded, knowingly).
#   environment: ROBOT_IP (required), MODEL (a realtime Realeasy model file), RECORD_BAG (a bag
#   path under /data), ROBOT (fci | fci_standin), SIM2REAL_ALLOW_DEGRADED (0 | 1)
# Any arguments replace the launch: `docker run ... IMAGE preflight` runs the preflight alone.
set -o pipefail        # not -u: catkin's profile scripts read unset variables
source /opt/sim2real/env.sh >/dev/null
robot="${ROBOT:-fci}"
allow=()
[ "${SIM2REAL_ALLOW_DEGRADED:-0}" = 1 ] && allow=(--allow-degraded)
if [ "$robot" = fci_standin ]; then
  ROBOT_IP="${ROBOT_IP:-127.0.0.2}"
  rosrun panda_fci fci_standin --host "$ROBOT_IP" --fifo-priority 40 &
fi
if [ -z "${ROBOT_IP:-}" ]; then
  echo "entrypoint: error: ROBOT_IP is not set: pass the robot's FCI address (docker compose: ROBOT_IP=... in .env)" >&2
  exit 2
fi
if [ -n "${MODEL:-}" ] && [ ! -r "$MODEL" ]; then
  echo "entrypoint: error: MODEL=$MODEL is not a readable file (mount the models folder, see compose.yaml)" >&2
  exit 2
fi
if [ "${1:-}" = preflight ]; then
  exec rosrun panda_fci preflight --robot-ip "$ROBOT_IP" "${allow[@]}"
fi
rosrun panda_fci preflight --robot-ip "$ROBOT_IP" "${allow[@]}"
case $? in
  0) ;;
  3) echo "entrypoint: the preflight failed: change the host as listed above, or set SIM2REAL_ALLOW_DEGRADED=1 to run degraded" >&2; exit 3 ;;
  *) echo "entrypoint: the preflight could not run" >&2; exit 2 ;;
esac
# the stand-in (ROBOT=fci_standin) is already served above: the bridge reaches it as a robot
label="real robot"
[ "$robot" = fci_standin ] && label="reality stand-in over FCI"
exec roslaunch /opt/sim2real/launch/robot_pc.launch robot:=fci robot_ip:="$ROBOT_IP" label:="$label" \
  model:="${MODEL:-}" bag:="${RECORD_BAG:-}" \
  realtime:="$([ "$robot" = fci ] && [ "${SIM2REAL_ALLOW_DEGRADED:-0}" != 1 ] && echo enforce || echo ignore)"
