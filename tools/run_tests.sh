#!/usr/bin/env bash
# make test: pytest over every package's library tests, then the rostest integration tests
# (real nodes on loopback). Prints one closing line 'N passed, N failed' over all of them and
# exits non-zero on any failure. Called by `make test` after `source env.sh`.
# On 2 cores the work is split in lanes: the library tests on two pytest workers (one file per
# worker, the longest file first), the rostests that need no 1 kHz robot two at a time; what runs
# a 1 kHz robot or measures a rate runs alone (SERIAL_*), so the machine's load cannot fail it.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
results="$root/build/test-results"
rm -rf "$results" && mkdir -p "$results/rostest" "$results/logs"
status=0
lanes="${TEST_LANES:-2}"
phase_start=$SECONDS
took() {   # took NAME: one line with the seconds since the last phase ended
  echo "== $1 took $((SECONDS - phase_start)) s"
  phase_start=$SECONDS
}

# pytest files with a libfranka-protocol stand-in at 1 kHz in a subprocess
SERIAL_PYTEST=(panda_fci/test/test_fci.py panda_fci/test/test_control_process.py panda_fci/test/test_preflight.py)
# rostests with a 1 kHz robot, or that compare rates
SERIAL_ROSTEST=(panda_fci panda_pairs panda_sim2real trifinger_controllers/test/trifinger_nodes.test
                kernel_manager_ros/test/pipeline.test)

test_dirs=("$root/sim2real_pipeline/test" "$root/tools/test")   # the longest file first
for pkg in sim2real_checks sim2real_gazebo panda_gazebo panda_sim2real panda_fci panda_pairs realeasy_ros kernel_manager_ros compliant_actuator_gazebo diffnea_ros trifinger_controllers; do
  if compgen -G "$root/$pkg/test/test_*.py" > /dev/null; then test_dirs+=("$root/$pkg/test"); fi
done
ignore=()
for f in "${SERIAL_PYTEST[@]}"; do ignore+=("--ignore=$root/$f"); done
echo "== pytest ($lanes workers): ${test_dirs[*]#$root/}"
python -m pytest -q -p no:cacheprovider -n "$lanes" --dist loadfile --ignore-glob="*/test/gazebo/*" \
  "${ignore[@]}" --junitxml="$results/pytest.xml" "${test_dirs[@]}" || status=1
took "pytest ($lanes workers)"
echo "== pytest (alone): ${SERIAL_PYTEST[*]}"
(cd "$root" && python -m pytest -q -p no:cacheprovider --junitxml="$results/pytest_serial.xml" \
  "${SERIAL_PYTEST[@]}") || status=1
took "pytest (alone)"

serial() {   # serial PATH.test: is it in SERIAL_ROSTEST (by package or by file)?
  local rel="${1#$root/}" s
  for s in "${SERIAL_ROSTEST[@]}"; do
    [[ "$rel" == "$s" || "$rel" == "$s"/* ]] && return 0
  done
  return 1
}
rostest_one() {   # rostest_one PATH.test: its output into a log, printed when it ends
  local launch="$1" pkg name log rc
  pkg="$(basename "$(dirname "$(dirname "$launch")")")"
  name="$(basename "$launch")"
  log="$results/logs/rostest-$pkg-$name.log"
  # rostest starts a private master on a free port: a user's running roscore is left alone
  rostest --results-base-dir="$results/rostest" "$pkg" "$name" > "$log" 2>&1
  rc=$?
  echo "== rostest $pkg $name (exit $rc)" && cat "$log"
  return $rc
}

# the longest shared rostests (about a minute each: hostile-input fuzzing) start first, so that the
# two lanes end together
LONG_ROSTEST=(compliant_actuator_gazebo/test/fuzz.test trifinger_controllers/test/fuzz.test
              kernel_manager_ros/test/fuzz.test)
shared=() alone=()
for rel in "${LONG_ROSTEST[@]}"; do [ -f "$root/$rel" ] && shared+=("$root/$rel"); done
for launch in "$root"/*/test/*.test; do
  rel="${launch#$root/}"
  if serial "$launch"; then alone+=("$launch")
  elif [[ " ${LONG_ROSTEST[*]} " != *" $rel "* ]]; then shared+=("$launch"); fi
done
echo "== rostest, $lanes at a time: ${#shared[@]} tests"
running=0
for launch in "${shared[@]}"; do
  if (( running >= lanes )); then wait -n || status=1; running=$((running - 1)); fi
  rostest_one "$launch" &
  running=$((running + 1))
done
while (( running > 0 )); do wait -n || status=1; running=$((running - 1)); done
took "rostest, $lanes at a time"
echo "== rostest, one at a time: ${#alone[@]} tests"
for launch in "${alone[@]}"; do rostest_one "$launch" || status=1; done
took "rostest, one at a time"
echo "== make test's tests took $SECONDS s"

python "$root/tools/test_summary.py" "$results" || status=1
exit $status
