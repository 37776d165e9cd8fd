# Source this file to use sim2real's tools: `source env.sh` (bash).
# It activates the venv, the catkin devel space, and keeps ROS traffic on loopback unless the
# caller already chose a master (ROS 1 has no authentication: see README, "Security").
_s2r_root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# the caller's choice, taken before catkin's setup, which sets ROS_MASTER_URI=http://localhost:11311
_s2r_master="${ROS_MASTER_URI:-}"
_s2r_ip="${ROS_IP:-}"
_s2r_hostname="${ROS_HOSTNAME:-}"
if [ -f "$_s2r_root/.venv/bin/activate" ]; then
  # shellcheck disable=SC1091
  source "$_s2r_root/.venv/bin/activate"
fi
if [ -f "$_s2r_root/build/ws/devel/setup.bash" ]; then
  # shellcheck disable=SC1091
  source "$_s2r_root/build/ws/devel/setup.bash"
else
  echo "env.sh: no workspace yet; run 'make setup' first" >&2
fi
export ROS_MASTER_URI="${_s2r_master:-http://127.0.0.1:11311}"
export ROS_IP="${_s2r_ip:-127.0.0.1}"
if [ -n "$_s2r_hostname" ]; then export ROS_HOSTNAME="$_s2r_hostname"; else unset ROS_HOSTNAME; fi
export ROS_HOME="${ROS_HOME:-$_s2r_root/build/ros_home}"
export ROS_LOG_DIR="${ROS_LOG_DIR:-$_s2r_root/build/ros_home/log}"
export SIM2REAL_ROOT="$_s2r_root"
export MPLBACKEND="${MPLBACKEND:-Agg}"
unset _s2r_root _s2r_master _s2r_ip _s2r_hostname
