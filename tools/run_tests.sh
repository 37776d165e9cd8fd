#!/usr/bin/env bash
# make test: pytest over every package's library tests, then the rostest integration tests
# (real nodes on loopback). Prints one closing line 'N passed, N failed' over all of them and
# exits non-zero on any failure. Called by `make test` after `source env.sh`.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
results="$root/build/test-results"
rm -rf "$results" && mkdir -p "$results"
status=0

test_dirs=("$root/tools/test")
for pkg in sim2real_checks sim2real_gazebo panda_gazebo panda_sim2real panda_fci panda_pairs realeasy_ros kernel_manager_ros compliant_actuator_gazebo diffnea_ros trifinger_controllers sim2real_pipeline; do
  if compgen -G "$root/$pkg/test/test_*.py" > /dev/null; then test_dirs+=("$root/$pkg/test"); fi
done
echo "== pytest: ${test_dirs[*]#$root/}"
python -m pytest -q -p no:cacheprovider --ignore-glob="*/test/gazebo/*" --junitxml="$results/pytest.xml" "${test_dirs[@]}" || status=1

for launch in "$root"/*/test/*.test; do
  pkg="$(basename "$(dirname "$(dirname "$launch")")")"
  name="$(basename "$launch")"
  echo "== rostest $pkg $name"
  # rostest starts a private master on a free port: a user's running roscore is left alone
  rostest --results-base-dir="$results/rostest" "$pkg" "$name" || status=1
done

python "$root/tools/test_summary.py" "$results" || status=1
exit $status
