#!/usr/bin/env bash
# make demo: the main job on the embedded default (PyBullet simulator vs the MuJoCo reality stand-in,
# never a real robot).
#  1. the sim-to-real pipeline (sim2real_pipeline, as `make pipeline`): collect random pairs and
#     work-cycle repeats, identify the robot with diffnea_ros, re-simulate with the identified
#     URDF, train Realeasy on top, make state-space kernels from the task repeats, evaluate every
#     stage on held-out data with the acceptance gate -> reports/pipeline/;
#  2. live: launch/pipeline.launch robot:=fci_standin (the stand-in served over the libfranka
#     protocol, fci_bridge on the wall clock) with the identified simulator, the Realeasy residual
#     publisher and the kernel manager on new trajectories and new task repeats, and the nominal
#     simulator on the same moves as the baseline;
#  3. the compliant-actuator figures of paper 003 (Fig. 8, §4.3 ILC) in the embedded simulation,
#     two TriFinger policies on level 3 in trifinger_simulation, and paper 001's delivery-vehicle
#     experiment (30 missions); writes reports/report.md.
# DEMO_TRAJECTORIES (default 150), DEMO_TASK_REPEATS (40), DEMO_TRAIN_MINUTES (4) size the pipeline;
# DEMO_LIVE_TRAJECTORIES (5) and DEMO_LIVE_REPEATS (3) the live part.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/reports"
pipe="$out/pipeline"
work="$pipe/work"
live_n="${DEMO_LIVE_TRAJECTORIES:-5}"
live_tasks="${DEMO_LIVE_REPEATS:-3}"
mkdir -p "$out"

echo "== the sim-to-real pipeline on the embedded default (reality stand-in)"
rosrun sim2real_pipeline pipeline --out "$pipe" --seed 0 \
  --trajectories "${DEMO_TRAJECTORIES:-150}" --task-repeats "${DEMO_TASK_REPEATS:-40}" \
  --train-minutes "${DEMO_TRAIN_MINUTES:-4}"

echo "== live: pipeline.launch robot:=fci_standin, $live_n new trajectories and $live_tasks task repeats"
# each live run's recording (one bag per pair) and roslaunch log in reports/live/NAME/, its
# comparison next to the folder (reports/live/NAME.json, .png)
rm -rf "$out/live" "$out"/live_*   # this demo's own, earlier (live_* from before the folders)
live() {   # live NAME KINDS COUNT SEED [method args...]: one roslaunch on a private master
  local name="$1" kinds="$2" count="$3" seed="$4"
  shift 4
  local port dir="$out/live/$name"
  mkdir -p "$dir"
  port="$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  ROS_MASTER_URI="http://127.0.0.1:$port" roslaunch -p "$port" "$root/launch/pipeline.launch" \
    robot:=fci_standin bag:="$dir/pairs.bag" kinds:="$kinds" trajectories:="$count" \
    seed:="$seed" "$@" > "$dir/roslaunch.log" 2>&1 || { tail -n 30 "$dir/roslaunch.log"; exit 1; }
  rosrun panda_pairs compare --bag "$dir" --json "$out/live/$name.json" --plot "$out/live/$name.png" > /dev/null
}
methods=(sim_config:="$work/identified_sim.yaml" realeasy_model:="$work/realeasy.pt"
         kernels:="$work/kernels.yaml")
live nominal single,multi,cartesian "$live_n" 4242
live chain single,multi,cartesian "$live_n" 4242 "${methods[@]}"
live nominal_task task "$live_tasks" 4243
live chain_task task "$live_tasks" 4243 "${methods[@]}"
for name in chain chain_task; do
  rosrun panda_pairs compare --bag "$out/live/$name" --sim-topic /sim/joint_states_realistic \
    --json "$out/live/${name}_realeasy.json" --plot "$out/live/${name}_realeasy.png" > /dev/null
done

echo "== compliant actuators (embedded simulation): paper 003 Fig. 8 and the §4.3 ILC"
rosrun compliant_actuator_gazebo reproduce_fig8 --json "$out/fig8.json" --plot "$out/fig8.png" \
  | tee "$out/fig8_table.txt"
rosrun compliant_actuator_gazebo reproduce_ilc --json "$out/ilc.json" --plot "$out/ilc.png" \
  | tee "$out/ilc_table.txt"

echo "== TriFinger cube policies (simulation): CPC-TG and MP-PG on level 3, 2 trials each"
rosrun trifinger_controllers evaluate --controller cpc --grasp tg --level 3 --trials 2 --seed 0 \
  --seconds 20 --json "$out/trifinger_cpc_tg_l3.json" --quiet
rosrun trifinger_controllers evaluate --controller mp --grasp pg --level 3 --trials 2 --seed 0 \
  --seconds 20 --json "$out/trifinger_mp_pg_l3.json" --quiet

echo "== state-space kernels (paper 001): the delivery vehicle, 30 missions (deployment simulated)"
rosrun kernel_manager_ros vehicle-experiment --missions 30 --seed 0 --work-dir "$root/build/demo_vehicle" \
  --json "$out/vehicle_experiment.json" --plots "$out/vehicle" --quiet

python "$root/tools/demo_report.py" "$out"
