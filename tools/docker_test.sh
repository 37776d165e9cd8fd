#!/usr/bin/env bash
# make docker-test: the robot PC image built from a bare Debian base made here (no registry), and a
# smoke test inside it and, in the same run, on the host:
#   1. podman, runc and mmdebstrap on the host (tools/apt_install.sh);
#   2. a bare Debian 12 base image from the host's apt sources (mmdebstrap; cached between runs);
#   3. the image built on it (tools/docker_build.sh: `make setup` inside, the fresh-machine install);
#   4. the container's entrypoint refusing a missing ROBOT_IP, then tools/robot_pc_smoke.py inside
#      the container (the stand-in over FCI, fci_bridge and the residual publisher at FIFO priority
#      for SMOKE_SECONDS at 1 kHz with a model file mounted) and on the host; one table of both.
# Traffic stays on loopback (--network host, 127.0.0.x addresses).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/build/docker"
seconds="${SMOKE_SECONDS:-30}"
base="localhost/sim2real-bookworm-base"
image="localhost/sim2real-robot"
mkdir -p "$work/out" "$work/models"
chmod 777 "$work/out"

bash "$root/tools/apt_install.sh" "$root/docker/host-packages.txt"
# shellcheck source=tools/podman_conf.sh
source "$root/tools/podman_conf.sh"
podman_conf "$work"

if ! podman image exists "$base"; then
  echo "docker-test: making the bare Debian base image (mmdebstrap)"
  mmdebstrap --variant=minbase --include=ca-certificates bookworm "$work/base.tar" \
    /etc/apt/sources.list.d/debian.sources > "$work/mmdebstrap.log" 2>&1 \
    || { tail -n 20 "$work/mmdebstrap.log"; exit 1; }
  podman import "$work/base.tar" "$base" > /dev/null
  rm -f "$work/base.tar"
fi
start=$(date +%s)
bash "$root/tools/docker_build.sh" --base "$base" --tag "$image" > "$work/build.log" 2>&1 \
  || { tail -n 40 "$work/build.log"; exit 1; }
echo "docker-test: image built in $(( $(date +%s) - start )) s (log: build/docker/build.log)"

run=(podman run --rm --network host --cap-add SYS_NICE --cap-add IPC_LOCK
     --cgroup-parent=/ --cpu-rt-runtime=900000
     --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=32768:32768)

# bad input: no ROBOT_IP is one clear line and exit 2, before anything runs
if "${run[@]}" "$image" > "$work/no_ip.log" 2>&1; then
  echo "docker-test: error: the container ran without ROBOT_IP" >&2; exit 1
fi
grep -q "ROBOT_IP is not set" "$work/no_ip.log" \
  || { echo "docker-test: error: no clear ROBOT_IP message:" >&2; cat "$work/no_ip.log" >&2; exit 1; }
echo "docker-test: a container without ROBOT_IP stops with: $(grep 'ROBOT_IP is not set' "$work/no_ip.log")"
# an unreadable model file: one line, exit 2
if "${run[@]}" -e ROBOT_IP=127.0.0.250 -e MODEL=/models/absent.pt "$image" > "$work/no_model.log" 2>&1; then
  echo "docker-test: error: the container ran with an unreadable MODEL" >&2; exit 1
fi
grep -q "is not a readable file" "$work/no_model.log" \
  || { echo "docker-test: error: no clear MODEL message:" >&2; cat "$work/no_model.log" >&2; exit 1; }
echo "docker-test: an unreadable MODEL stops with: $(grep 'not a readable file' "$work/no_model.log")"
# a host that denies real-time scheduling (no SYS_NICE/IPC_LOCK) and an unreachable robot: the
# preflight names both and the container exits 3 instead of running a degraded loop
set +e
podman run --rm --network host -e ROBOT_IP=127.0.0.250 "$image" > "$work/denied.log" 2>&1
status=$?
set -e
if [ "$status" -ne 3 ] || ! grep -q "SCHED_FIFO 80 refused" "$work/denied.log" \
     || ! grep -q "check ROBOT_IP" "$work/denied.log"; then
  echo "docker-test: error: a denied host or an unreachable robot was not reported (exit $status):" >&2
  cat "$work/denied.log" >&2; exit 1
fi
echo "docker-test: a host without real-time scheduling and an unreachable robot: preflight FAIL, exit 3"

set +u                     # catkin's profile scripts read unset variables
source "$root/env.sh" > /dev/null
set -u
python - "$work/models/untrained.pt" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["SIM2REAL_ROOT"], "bench"))
from node_latency import untrained_model
untrained_model(sys.argv[1], label="smoke test (untrained weights)")
PY
echo "docker-test: smoke test in the container (${seconds} s)"
"${run[@]}" --volume "$work/models:/models:ro" --volume "$work/out:/out" --entrypoint bash "$image" \
  -c "source /opt/sim2real/env.sh >/dev/null && python /opt/sim2real/tools/robot_pc_smoke.py \
      --seconds $seconds --model /models/untrained.pt --where container --json /out/container.json"
echo "docker-test: the same on the host (${seconds} s)"
python "$root/tools/robot_pc_smoke.py" --seconds "$seconds" --model "$work/models/untrained.pt" \
  --where host --json "$work/out/host.json" > "$work/host_smoke.log"
echo
python "$root/tools/robot_pc_smoke.py" --table "$work/out/container.json" "$work/out/host.json" \
  --seconds "$seconds" --results "$work/out/robot_pc.json" | tee "$work/out/table.txt"
echo "docker-test: passed (figures: build/docker/out/robot_pc.json; docker/results/robot_pc.json is a committed copy)"
