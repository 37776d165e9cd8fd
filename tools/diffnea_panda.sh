#!/usr/bin/env bash
# make identify-panda: the Panda system-identification loop of diffnea_ros/README.md ("Results"),
# against the reality stand-in (not a real robot).
#  1. collect PANDA_ID_TRAJECTORIES (default 60) pairs; identify the Panda's inertials and damping
#     from the stand-in's /real/joint_states, starting from the nominal URDF (pybullet_data);
#  2. collect PANDA_EVAL_TRAJECTORIES (default 40) new pairs twice with the same seed (same moves,
#     same stand-in noise): once with the nominal URDF in panda_sim, once with the identified one;
#  3. compare both with the stand-in: torque MSE per joint (panda_pairs compare).
# Output: build/diffnea_panda/ (bags; PANDA_WORK) and diffnea_ros/results/ (PANDA_RESULTS).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${PANDA_WORK:-$root/build/diffnea_panda}"
results="${PANDA_RESULTS:-$root/diffnea_ros/results}"
n_id="${PANDA_ID_TRAJECTORIES:-60}"
n_eval="${PANDA_EVAL_TRAJECTORIES:-40}"
param="${PANDA_PARAM:-cov}"
epochs="${PANDA_EPOCHS:-30}"
mkdir -p "$work" "$results"
nominal="$(python -c 'import os, pybullet_data; print(os.path.join(pybullet_data.getDataPath(), "franka_panda", "panda.urdf"))')"

if [ ! -f "$work/pairs_id.bag" ]; then
  echo "== collect $n_id identification pairs from the stand-in"
  rosrun panda_pairs collect --trajectories "$n_id" --seed 3000 --out "$work/pairs_id.bag" --quiet
fi
echo "== identify ($param) from /real/joint_states"
# with the simulator's configuration for the identified URDF (panda_sim2real's identified config,
# at the shipped physics rate; nothing else identified)
rate="$(python -c 'from panda_sim2real import SIM_CONFIG_FILE, RobotConfig; print(RobotConfig.from_yaml(SIM_CONFIG_FILE).physics_rate)')"
rosrun diffnea_ros identify --data "$work/pairs_id.bag" --urdf "$nominal" --param "$param" \
  --epochs "$epochs" --out "$work/panda_identified.urdf" --sim-config "$work/panda_sim_identified.yaml" \
  --physics-rate "$rate" --json "$results/panda_identify.json" --quiet \
  | tee "$results/panda_identify.txt"
cp "$work/panda_identified.urdf" "$work/panda_identified.yaml" "$results/"
for sim in nominal identified; do
  config="$root/panda_sim2real/config/sim/panda_sim.yaml"
  [ "$sim" = identified ] && config="$work/panda_sim_identified.yaml"
  echo "== collect $n_eval evaluation pairs, $sim URDF in panda_sim"
  rosrun panda_pairs collect --trajectories "$n_eval" --seed 4000 --sim-config "$config" \
    --out "$work/eval_$sim.bag" --quiet
  rosrun panda_pairs compare --bag "$work/eval_$sim.bag" --json "$results/panda_gap_$sim.json" \
    --plot "$results/panda_gap_$sim.png" > /dev/null
done
python "$root/tools/diffnea_panda_summary.py" "$results" "$work" | tee "$results/panda.md"
