#!/usr/bin/env bash
# make gazebo-test (after make gazebo): the Gazebo tests against gzserver 11 of the Gazebo image,
# on a private ROS master on loopback: pytest over */test/gazebo/ (the plugin lock-stepped, the
# launch files as a user runs them), then the fuzz rostest of the plugin's topics. Prints one
# closing line 'N passed, N failed' and exits non-zero on any failure. Logs: build/gazebo-test/.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
results="$root/build/gazebo-test/results"
rm -rf "$results" && mkdir -p "$results"
status=0
dirs=()
for pkg in sim2real_gazebo panda_sim2real panda_pairs compliant_actuator_gazebo; do
  [ -d "$root/$pkg/test/gazebo" ] && dirs+=("$root/$pkg/test/gazebo")
done
echo "== pytest (Gazebo): ${dirs[*]#$root/}"
python -m pytest -q -p no:cacheprovider --junitxml="$results/pytest.xml" "${dirs[@]}" || status=1
for launch in "$root"/*/test/gazebo/*.test; do
  pkg="$(basename "$(dirname "$(dirname "$(dirname "$launch")")")")"
  echo "== rostest $pkg $(basename "$launch")"
  rostest --results-base-dir="$results/rostest" "$pkg" "$(basename "$launch")" || status=1
done
python "$root/tools/test_summary.py" "$results" || status=1
exit $status
