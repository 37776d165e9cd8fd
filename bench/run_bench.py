"""make bench: performance figures, written to bench/results/*.json (each part's details are in
the module docstring of its script).

* robot_speed: simulated seconds per wall second of each robot (1 kHz physics, joint states at
  100 Hz serialised as sensor_msgs/JointState), same run, with the stand-in/simulator ratio;
  target at least 5x real time each. collect_100: wall time of 100 real/sim pairs with `collect`.
* realtime_step: one Realeasy realtime step (paper 000 Algorithm 3) per implementation (torch
  eager, TorchScript, NumPy, C++), median and p99 [us], vs the paper's 0.39 ms.
* node_latency (residual_publisher, 1 kHz in), fci_bridge (against fci_standin over libfranka,
  the A/B of its 1 kHz path: tick callback in the node or in a child process, 10 min each under
  the robot PC's load), diffnea_dynamics (vs Pinocchio and differentiable-robot-model),
  compliant_actuators (core step, 5-DoF arm vs rigid joints), gazebo_compliant (the arms in
  gzserver 11 unthrottled and the plugin's cost per joint step, vs the embedded simulation),
  gazebo_panda (the Panda's lock-step collection, speed and PID tracking in Gazebo vs PyBullet;
  --skip-gazebo leaves both Gazebo parts out), kernel_manager (look-up with 10 000
  kernels, target <= 50 us median, vs a NumPy scan; Algorithm 1): bench/<part>.py.
* trifinger_controllers: paper 004 levels 3 and 4, Table II layout, compute time per call, in
  simulation (bench/trifinger_benchmark.py, ~1 h; --skip-trifinger leaves it out).
The machine is shared and noisy: the robot figures are the best of --repeats runs; the latency
figures are compared with peers measured in the same run.
"""
from __future__ import annotations

import argparse
import io
import os
import platform
import subprocess
import sys
import tempfile
import time

from compliant_actuators import bench_compliant_actuators, print_table as print_compliant_table
from gazebo_compliant import bench_gazebo_compliant, print_table as print_gazebo_table
from gazebo_panda import bench_gazebo_panda, print_table as print_gazebo_panda_table
from fci_bridge import bench_fci_bridges
from diffnea_dynamics import bench_diffnea_dynamics, print_table as print_dynamics_table
from kernel_manager import bench_kernel_manager, print_table as print_kernel_table
from node_latency import bench_node_latency
from sim2real_checks import provenance, write_json
from panda_pairs import CollectionRequest, run_collection
from panda_sim2real import (GeneratorSettings, JointLimits, REALITY_CONFIG_FILE, RobotConfig,
                            SIM_CONFIG_FILE, SimulatedRobot, TrajectoryGenerator, joint_state_msg)
from realtime_step import bench_realtime_step


def save(folder: str, name: str, figures: dict) -> None:
    """``folder/name`` with the commit and command that measured it (tools/results_age.py)."""
    write_json(os.path.join(folder, name), {**figures, **provenance("bench/run_bench.py")})


def robot_speed(config_file: str, limits: JointLimits, seconds: float, repeats: int) -> float:
    """Best simulated-seconds-per-wall-second while executing generated moves."""
    best = 0.0
    for r in range(repeats):
        robot = SimulatedRobot(RobotConfig.from_yaml(config_file), limits)
        generator = TrajectoryGenerator(limits, GeneratorSettings(), seed=r)
        buffer = io.BytesIO()
        start_q = limits.home
        wall = time.perf_counter()
        while robot.t < seconds:
            move = generator.next(start_q, ("single", "multi"))
            planned = robot.command(move.trajectory)
            start_q = planned.positions[-1]
            end = min(planned.start + planned.duration, seconds)
            while robot.t < end - 0.5 * robot.dt:
                robot.step()
                if robot.publish_due:
                    buffer.seek(0)
                    joint_state_msg(robot.measure(), limits.joint_names).serialize(buffer)
        wall = time.perf_counter() - wall
        best = max(best, robot.t / wall)
        robot.close()
    return best


def vehicle_histories(missions: int, seed: int):
    """(H_sim, H_phy, spec): the delivery vehicle's design and deployment (the simulation with the
    unexpected ramp) histories, paper 001 §4, as the generation benchmark's input."""
    from kernel_manager_ros import config_path
    from kernel_manager_ros import StateSpec
    from kernel_manager_ros import MissionConfig
    from kernel_manager_ros import VehicleConfig
    from kernel_manager_ros import run_missions
    spec = StateSpec.from_yaml(config_path("vehicle_topics.yaml"))
    mission = MissionConfig.from_yaml(config_path("mission.yaml"))
    runs = [run_missions(VehicleConfig.from_yaml(config_path(name)), mission, spec, missions, seed)
            for name in ("vehicle_design.yaml", "vehicle_deploy.yaml")]
    return runs[0].history("design"), runs[1].history("deployment"), spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0, help="simulated seconds per speed run")
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--latency-seconds", type=float, default=60.0,
                        help="duration of the 1 kHz node latency run")
    parser.add_argument("--fci-seconds", type=float, default=600.0,
                        help="seconds of each fci_bridge run (two runs: the A/B of its 1 kHz path)")
    parser.add_argument("--trifinger-trials", type=int, default=20, help="level-3/4 trials per pairing")
    parser.add_argument("--mix-trials", type=int, default=15, help="trials per mix-and-match cell")
    parser.add_argument("--skip-trifinger", action="store_true", help="leave out the TriFinger benchmark")
    parser.add_argument("--skip-gazebo", action="store_true",
                        help="leave out the Gazebo benchmark (needs the image: make gazebo)")
    args = parser.parse_args()
    limits = JointLimits.from_yaml()
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "machine": platform.machine()}

    sim = robot_speed(SIM_CONFIG_FILE, limits, args.seconds, args.repeats)
    real = robot_speed(REALITY_CONFIG_FILE, limits, args.seconds, args.repeats)
    speed = {"benchmark": "robot_speed", "physics_rate_hz": 1000, "publish_rate_hz": 100,
             "simulator_real_time_factor": sim, "stand_in_real_time_factor": real,
             "stand_in_over_simulator": real / sim, "target_real_time_factor": 5.0,
             "meets_target": bool(min(sim, real) >= 5.0), "repeats": args.repeats, "machine": machine}
    save(args.out, "robot_speed.json", speed)

    with tempfile.TemporaryDirectory() as folder:
        result = run_collection(CollectionRequest(out=os.path.join(folder, "pairs.bag"),
                                                  trajectories=args.pairs, seed=0,
                                                  show_progress=False), limits)
        bag_mb = os.path.getsize(os.path.join(folder, "pairs.bag")) / 1e6
    f = result.figures
    collect = {"benchmark": "collect_pairs", "pairs": args.pairs, "wall_seconds": f["wall_seconds"],
               "simulated_seconds": f["simulated_seconds"], "real_time_factor": f["real_time_factor"],
               "kinds": f["kinds"], "bag_megabytes": bag_mb, "label": f["label"], "machine": machine}
    save(args.out, "collect_pairs.json", collect)

    step = bench_realtime_step()
    save(args.out, "realtime_step.json", step)
    latency = bench_node_latency(args.latency_seconds)
    save(args.out, "node_latency.json", latency)
    save(args.out, "fci_bridge.json", bench_fci_bridges(args.fci_seconds))
    dynamics = bench_diffnea_dynamics()
    save(args.out, "diffnea_dynamics.json", dynamics)
    compliant = bench_compliant_actuators()
    save(args.out, "compliant_actuators.json", compliant)
    gazebo = None if args.skip_gazebo else bench_gazebo_compliant()
    if gazebo is not None:
        save(args.out, "gazebo_compliant.json", gazebo)
    gazebo_panda = None if args.skip_gazebo else bench_gazebo_panda()
    if gazebo_panda is not None:
        save(args.out, "gazebo_panda.json", gazebo_panda)
    kernels = bench_kernel_manager(histories=vehicle_histories(missions=100, seed=0))
    save(args.out, "kernel_manager.json", kernels)

    print(f"{'benchmark':34s} {'figure':>12s}")
    print(f"{'simulator (PyBullet) x real time':34s} {sim:12.1f}")
    print(f"{'stand-in (MuJoCo) x real time':34s} {real:12.1f}")
    print(f"{'stand-in / simulator':34s} {real / sim:12.2f}")
    print(f"{'collect %d pairs, wall s' % args.pairs:34s} {f['wall_seconds']:12.1f}")
    print(f"{'collect, x real time (both robots)':34s} {f['real_time_factor']:12.1f}")
    for name, c in step["candidates"].items():
        print(f"{'realtime step ' + name + ', median us':34s} {c['median_us']:12.2f}")
    print(f"{'realtime step chosen':34s} {step['chosen']:>12s}")
    print(f"{'node latency 1 kHz, median us':34s} {latency['node']['median_us']:12.1f}")
    print(f"{'node latency 1 kHz, p99 us':34s} {latency['node']['p99_us']:12.1f}")
    print(f"{'node: messages dropped':34s} {latency['node']['dropped']:12d}")
    print_dynamics_table(dynamics)
    print_compliant_table(compliant)
    if gazebo is not None:
        print_gazebo_table(gazebo)
    if gazebo_panda is not None:
        print_gazebo_panda_table(gazebo_panda)
    print_kernel_table(kernels)

    if not args.skip_trifinger:   # last: the longest part, with its own progress bars and rows
        subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "trifinger_benchmark.py"),
                        "--out", os.path.join(args.out, "trifinger_controllers.json"),
                        "--trials", str(args.trifinger_trials), "--mix-trials", str(args.mix_trials)],
                       check=True)


if __name__ == "__main__":
    main()
