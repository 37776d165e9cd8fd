#!/usr/bin/env bash
# make demo: the main job on the embedded default. Collects real/sim pairs (PyBullet simulator vs
# the MuJoCo reality stand-in), builds the Realeasy data set and prints the gap; trains the
# realtime Realeasy model, evaluates it on the held-out and Cartesian sets, runs the residual
# publisher live on new trajectories; reproduces the compliant-actuator figures of paper 003
# (Fig. 8 step responses, §4.3 ILC) in the embedded simulation; runs two TriFinger policies on
# level 3 in trifinger_simulation and paper 001's delivery-vehicle experiment with state-space
# kernels (30 missions); writes reports/report.md.
# DEMO_TRAJECTORIES sets the data size (default 150), DEMO_TRAIN_MINUTES the training budget
# (default 6), DEMO_LIVE_TRAJECTORIES the live run (default 8).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/reports"
n="${DEMO_TRAJECTORIES:-150}"
minutes="${DEMO_TRAIN_MINUTES:-6}"
live="${DEMO_LIVE_TRAJECTORIES:-8}"
mkdir -p "$out"

echo "== collect $n trajectory pairs (simulation and reality stand-in, lock-step)"
rosrun panda_sim2real collect --trajectories "$n" --seed 0 --out "$out/pairs.bag" --json "$out/collect.json"
echo "== build the data set"
rosrun panda_sim2real dataset --bag "$out/pairs.bag" --out "$out/dataset.npz" --json "$out/dataset.json"
echo "== the gap: simulation vs reality stand-in"
rosrun panda_sim2real compare --bag "$out/pairs.bag" --json "$out/gap.json" --plot "$out/gap_torques.png" \
  | tee "$out/gap_table.txt"

echo "== train the realtime Realeasy model (at most $minutes min)"
# the tool's default preset, tuned: the settings chosen on the stand-in (realeasy_ros/README.md,
# "Results"; `--preset paper` would train with the paper's)
rosrun realeasy_ros train --data "$out/dataset.npz" --model realtime --out "$out/realtime.pt" \
  --max-minutes "$minutes" --json "$out/train_realtime.json"
echo "== evaluate it on the held-out test split and the Cartesian set"
rosrun realeasy_ros evaluate --data "$out/dataset.npz" --model "$out/realtime.pt" \
  --json "$out/eval_realtime.json" --plot "$out/realeasy_torques.png" | tee "$out/eval_table.txt"

echo "== live: the residual publisher on $live new trajectories (roslaunch, private master)"
port="$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
ROS_MASTER_URI="http://127.0.0.1:$port" roslaunch -p "$port" panda_sim2real record_pairs.launch \
  bag:="$out/live.bag" trajectories:="$live" seed:=4242 model:="$out/realtime.pt" \
  real_time_factor:=2.0 > "$out/live_roslaunch.log" 2>&1 \
  || { tail -n 30 "$out/live_roslaunch.log"; exit 1; }
rosrun panda_sim2real compare --bag "$out/live.bag" --json "$out/live_sim.json" \
  --plot "$out/live_sim_torques.png" > "$out/live_sim_table.txt"
rosrun panda_sim2real compare --bag "$out/live.bag" --sim-topic /sim/joint_states_realistic \
  --json "$out/live_realeasy.json" --plot "$out/live_realeasy_torques.png" > "$out/live_realeasy_table.txt"

echo "== compliant actuators (embedded simulation): paper 003 Fig. 8 and the §4.3 ILC"
rosrun compliant_actuator_gazebo reproduce_fig8 --json "$out/fig8.json" --plot "$out/fig8.png" \
  | tee "$out/fig8_table.txt"
rosrun compliant_actuator_gazebo reproduce_ilc --json "$out/ilc.json" --plot "$out/ilc.png" \
  | tee "$out/ilc_table.txt"

echo "== TriFinger cube policies (simulation): CPC-TG and MP-PG on level 3, 2 trials each"
rosrun trifinger_controllers evaluate --controller cpc --grasp tg --level 3 --trials 2 --seed 0 \
  --seconds 20 --json "$out/trifinger_cpc_tg_l3.json" --no-progress
rosrun trifinger_controllers evaluate --controller mp --grasp pg --level 3 --trials 2 --seed 0 \
  --seconds 20 --json "$out/trifinger_mp_pg_l3.json" --no-progress

echo "== state-space kernels (paper 001): the delivery vehicle, 30 missions (deployment simulated)"
rosrun kernel_manager_ros vehicle-experiment --missions 30 --seed 0 --work-dir "$root/build/demo_vehicle" \
  --json "$out/vehicle_experiment.json" --plots "$out/vehicle" --quiet

python "$root/tools/demo_report.py" "$out"
