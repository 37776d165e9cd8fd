#!/usr/bin/env bash
# make study: the Realeasy figures of realeasy_ros/README.md ("Results"), against the reality
# stand-in (not a real robot). Collects a larger data set than the demo (STUDY_TRAJECTORIES,
# default 400) and a transfer set from a second stand-in individual (config/reality/
# individual_b.yaml, STUDY_TRANSFER_TRAJECTORIES, default 80); trains the realtime and the
# precise network (STUDY_TRAIN_MINUTES each, default 10); evaluates both on the held-out test
# split, the Cartesian set and the whole transfer set. Output: build/study/ (bags, data sets,
# models; STUDY_WORK) and realeasy_ros/results/ (JSON, tables, plots; STUDY_RESULTS).
# STUDY_ARCHS selects the networks (default "realtime precise"). STUDY_SIM_CONFIG replaces the
# simulator's configuration (e.g. one whose `urdf:` is a URDF identified by diffnea_ros: Realeasy
# on top of system identification). About 35 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${STUDY_WORK:-$root/build/study}"
results="${STUDY_RESULTS:-$root/realeasy_ros/results}"
archs="${STUDY_ARCHS:-realtime precise}"
n="${STUDY_TRAJECTORIES:-400}"
n_b="${STUDY_TRANSFER_TRAJECTORIES:-80}"
minutes="${STUDY_TRAIN_MINUTES:-10}"
sim_args=()
[ -z "${STUDY_SIM_CONFIG:-}" ] || sim_args=(--sim-config "$STUDY_SIM_CONFIG")
mkdir -p "$work" "$results"
# train's default preset, tuned: the settings chosen for the stand-in (see the README): hidden
# 64, no input dropout, loss columns weighted by the simulation's gap, batch 32, learning rate
# halved on plateaus, patience 30, at most 400 epochs
train_args=(--max-minutes "$minutes")

if [ ! -f "$work/dataset_a.npz" ]; then
  echo "== collect $n pairs from the default stand-in"
  rosrun panda_pairs collect --trajectories "$n" --seed 1000 --out "$work/pairs_a.bag" "${sim_args[@]}" \
    --json "$work/collect_a.json" --quiet
  rosrun panda_pairs dataset --bag "$work/pairs_a.bag" --out "$work/dataset_a.npz" --seed 1000 \
    --json "$work/dataset_a.json"
fi
if [ ! -f "$work/dataset_b.npz" ]; then
  echo "== collect $n_b pairs from stand-in individual B (friction and offsets changed)"
  rosrun panda_pairs collect --trajectories "$n_b" --seed 2000 --out "$work/pairs_b.bag" "${sim_args[@]}" \
    --reality-config "$root/panda_sim2real/config/reality/individual_b.yaml" \
    --json "$work/collect_b.json" --quiet
  rosrun panda_pairs dataset --bag "$work/pairs_b.bag" --out "$work/dataset_b.npz" --seed 2000 \
    --json "$work/dataset_b.json"
fi

for arch in $archs; do
  echo "== train the $arch network (at most $minutes min)"
  rosrun realeasy_ros train --data "$work/dataset_a.npz" --model "$arch" --out "$work/$arch.pt" \
    "${train_args[@]}" --json "$results/train_$arch.json"
  echo "== evaluate the $arch network"
  rosrun realeasy_ros evaluate --data "$work/dataset_a.npz" --model "$work/$arch.pt" \
    --json "$results/eval_$arch.json" --plot "$results/fig2_$arch.png" | tee "$results/eval_$arch.txt"
  echo "== transfer: the $arch network on stand-in individual B"
  rosrun realeasy_ros evaluate --data "$work/dataset_b.npz" --model "$work/$arch.pt" --splits all \
    --json "$results/transfer_$arch.json" --plot "$results/transfer_$arch.png" \
    | tee "$results/transfer_$arch.txt"
done
cp "$work/dataset_a.json" "$results/dataset_a.json"
cp "$work/dataset_b.json" "$results/dataset_b.json"
python "$root/tools/study_summary.py" "$results"
