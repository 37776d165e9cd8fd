#!/usr/bin/env bash
# Install the benchmark-only peer of diffnea_ros into build/peers (never into .venv):
# differentiable-robot-model 0.2.3, Facebook's public implementation of paper 002, and the only
# dependency its import needs, urdf-parser-py (pure Python; it uses PyYAML from .venv).
# Installed with --no-deps: its declared requirements (torch, hydra-core, pyquaternion, Sphinx,
# recommonmark) are either already in .venv (torch 2.13 CPU, which must stay the one used) or
# never imported by the package. bench/diffnea_dynamics.py adds build/peers to sys.path.
# Idempotent: does nothing when both pinned versions are already there and import.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="$ROOT/build/peers"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
PEER_PACKAGES=(differentiable-robot-model==0.2.3 urdf-parser-py==0.0.4)

installed() {
  [ -d "$PEERS/differentiable_robot_model-0.2.3.dist-info" ] &&
  [ -d "$PEERS/urdf_parser_py-0.0.4.dist-info" ] &&
  PYTHONPATH="$PEERS" "$PYTHON" -c "import differentiable_robot_model" >/dev/null 2>&1
}

if installed; then
  echo "install_bench_peers: already in $PEERS"
  exit 0
fi
[ -x "$PYTHON" ] || { echo "error: no $PYTHON; run 'make setup' first" >&2; exit 2; }
mkdir -p "$PEERS"
"$PYTHON" -m pip install -q --target "$PEERS" --no-deps --upgrade "${PEER_PACKAGES[@]}" \
  > "$ROOT/build/peers.log" 2>&1 \
  || { tail -n 20 "$ROOT/build/peers.log" >&2; echo "error: peer install failed (log: build/peers.log)" >&2; exit 2; }
installed || { echo "error: differentiable_robot_model does not import from $PEERS" >&2; exit 2; }
echo "install_bench_peers: installed ${PEER_PACKAGES[*]} into $PEERS"
