"""fci_bridge against fci_standin over the libfranka protocol (issue 15 targets), on this
machine's ordinary (not PREEMPT_RT) kernel; every figure is measured against the reality
stand-in served over FCI, never a real robot.

On a private master: ``robot.launch robot:=fci_standin`` (fci_standin + fci_bridge at 1 kHz).
A listener process subscribes /real/joint_states and /real/robot_state for --seconds while it
commands generated trajectories (config/trajectories.yaml, seeded) back to back on
/real/joint_trajectory_controller/command. Figures:

* control command success rate (libfranka's, from /real/robot_state): minimum and median;
* /real/joint_states: rate, the longest gap between consecutive robot stamps and between
  arrivals, the count of gaps over 2 ms; the node's own control-tick-to-publish latency
  (median, p99, from /real/robot_state) and robot-stamp-to-arrival at a subscriber;
* tracking: RMS joint error of each executed trajectory against its plan, per joint, over FCI
  and for the ROS-native stand-in (the same SimulatedRobot and config that panda_reality runs,
  stepped in-process) executing the same trajectories; their ratio.
Peer: franka_ros's franka_state_controller publishes joint states at 30 Hz by default
(its documented ``publish_rate``; franka_ros is not installed here, so this is not measured).

Run: python bench/fci_bridge.py --seconds 60 --out bench/results
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Optional

import numpy as np

from node_latency import free_port, stop_process
from sim2real_checks import provenance, write_json

HERE = os.path.abspath(__file__)
HOST = "127.0.0.71"
FRANKA_STATE_CONTROLLER_RATE = 30.0     # Hz, franka_ros's documented default
TRAJECTORY_SEED = 7


def generated_trajectories(count: int):
    """Seeded moves from home, each starting where the previous one ends (the pair runner's)."""
    from panda_sim2real import JointLimits
    from panda_sim2real import GeneratorSettings, TrajectoryGenerator

    limits = JointLimits.from_yaml()
    generator = TrajectoryGenerator(limits, GeneratorSettings.from_yaml(), seed=TRAJECTORY_SEED)
    q, moves = limits.home.copy(), []
    for _ in range(count):
        move = generator.next(q, ("single", "multi"))
        moves.append(move.trajectory)
        q = move.trajectory.positions[-1]
    generator.close()
    return limits, moves


def native_standin_rms(plans) -> np.ndarray:
    """Per-joint RMS tracking error [rad] of the ROS-native stand-in (panda_reality's robot and
    config) executing ``plans`` one after another, sampled at 1 kHz."""
    from panda_sim2real import SimulatedRobot
    from panda_sim2real import REALITY_CONFIG_FILE, RobotConfig
    from panda_sim2real import JointLimits

    limits = JointLimits.from_yaml()
    robot = SimulatedRobot(RobotConfig.from_yaml(REALITY_CONFIG_FILE), limits)
    errors = []
    for plan in plans:
        scheduled = robot.command(plan.at(robot.t + 0.2))
        end = scheduled.start + scheduled.duration
        while robot.t < end:
            robot.step()
            if robot.t >= scheduled.start:
                ref, _ = scheduled.sample(robot.t - scheduled.start)
                errors.append(robot.measure().position - ref)
        robot.run_until(robot.t + 0.3)
    robot.close()
    return np.sqrt(np.mean(np.square(errors), axis=0))


def listen(seconds: float, out: str) -> None:
    """The listener: subscribe, command trajectories, write raw figures to ``out`` (JSON)."""
    import rospy
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory

    from panda_sim2real.msg import RobotState
    from panda_sim2real import joint_trajectory_msg

    limits, plans = generated_trajectories(200)
    rospy.init_node("fci_bench_listener")
    received, states = [], []        # one tuple per message: appends are atomic

    def on_joint_state(msg):
        received.append((time.time(), msg.header.stamp.to_sec(), msg.position))

    def on_state(msg):
        states.append((time.time(), msg.control_command_success_rate, msg.publish_latency_p50,
                       msg.publish_latency_p99, msg.realtime_kernel, msg.last_error))

    rospy.Subscriber("/real/joint_states", JointState, on_joint_state, queue_size=5000,
                     tcp_nodelay=True)
    rospy.Subscriber("/real/robot_state", RobotState, on_state, queue_size=100)
    command = rospy.Publisher("/real/joint_trajectory_controller/command", JointTrajectory,
                              queue_size=2)
    deadline = time.monotonic() + 60
    while (not received or command.get_num_connections() == 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not received:
        raise SystemExit("fci bench: no /real/joint_states from fci_bridge within 60 s")
    time.sleep(1.0)
    start_wall = time.time()
    first = len(received)
    executed = []
    for plan in plans:
        start = time.time() + 0.2
        if start + plan.duration > start_wall + seconds:
            break
        command.publish(joint_trajectory_msg(plan.at(start), limits.joint_names))
        executed.append((start, plan))
        while time.time() < start + plan.duration + 0.3:
            time.sleep(0.01)
    while time.time() < start_wall + seconds:
        time.sleep(0.05)
    duration = time.time() - start_wall
    window = received[first:]
    arrivals = [r[0] for r in window]
    stamps = [r[1] for r in window]
    t, q = np.array(stamps), np.array([r[2] for r in window])
    window_states = [s[1:] for s in list(states) if s[0] >= start_wall]
    errors = []
    for start, plan in executed:
        inside = (t >= start) & (t <= start + plan.duration)
        ref = np.array([plan.sample(x - start)[0] for x in t[inside]])
        errors.append(q[inside] - ref)
    with open(out, "w") as f:
        json.dump({"stamps": stamps, "arrivals": arrivals, "states": window_states,
                   "duration": duration,
                   "rms_fci": np.sqrt(np.mean(np.square(np.concatenate(errors)), axis=0)).tolist(),
                   "trajectories": len(executed),
                   "plans": [[float(s), i] for i, (s, _) in enumerate(executed)]}, f)


def bench_fci_bridge(seconds: float, standin_priority: Optional[int] = None) -> dict:
    port = free_port()
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_IP="127.0.0.1")
    master = subprocess.Popen(["roscore", "-p", str(port)], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    robot: Optional[subprocess.Popen] = None
    raw_path = os.path.join(tempfile.mkdtemp(prefix="fci_bench_"), "raw.json")
    try:
        time.sleep(2.0)
        priority = [] if standin_priority is None else [f"standin_priority:={standin_priority}"]
        robot = subprocess.Popen(["roslaunch", "panda_fci", "robot.launch", "robot:=fci_standin",
                                  f"robot_ip:={HOST}", *priority], env=env, start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run([sys.executable, HERE, "--listen", "--seconds", str(seconds),
                        "--raw", raw_path], env=env, check=True, timeout=seconds + 240)
    finally:
        if robot is not None:
            stop_process(robot)
        stop_process(master)
    with open(raw_path) as f:
        raw = json.load(f)
    stamps, arrivals = np.array(raw["stamps"]), np.array(raw["arrivals"])
    stamp_gaps, arrival_gaps = np.diff(stamps), np.diff(arrivals)
    success = np.array([s[0] for s in raw["states"]])
    _, plans = generated_trajectories(raw["trajectories"])
    rms_native = native_standin_rms(plans)
    rms_fci = np.array(raw["rms_fci"])
    rate = len(stamps) / raw["duration"]
    last = raw["states"][-1]
    return {
        "label": "fci_bridge vs fci_standin (reality stand-in over FCI; not a real robot)",
        "seconds": raw["duration"], "realtime_kernel": bool(last[3]),
        "standin_fifo_priority": standin_priority,
        "cpus": os.cpu_count(), "machine": platform.machine(),
        "control_command_success_rate": {
            "mean": float(success.mean()), "min": float(success.min()),
            "median": float(np.median(success)), "target": 0.999,
            "what": "libfranka's rate (share of the last 100 ticks whose command arrived in "
                    "time), sampled at 100 Hz on /real/robot_state; mean over the run = the "
                    "run's share; min = the worst 100-tick window"},
        "joint_states": {
            "messages": int(len(stamps)), "rate_hz": rate, "configured_hz": 1000.0,
            "max_stamp_gap_ms": float(stamp_gaps.max() * 1e3),
            "max_arrival_gap_ms": float(arrival_gaps.max() * 1e3),
            "stamp_gaps_over_2ms": int(np.sum(stamp_gaps > 0.002)),
            "arrival_gaps_over_2ms": int(np.sum(arrival_gaps > 0.002)),
            "publish_latency_ms": {"median": last[1] * 1e3, "p99": last[2] * 1e3,
                                   "what": "control tick received -> JointState published, in the "
                                           "node, over its last 1000 messages"},
            "stamp_to_arrival_ms": {
                "median": float(np.median(arrivals - stamps) * 1e3),
                "p99": float(np.percentile(arrivals - stamps, 99) * 1e3),
                "what": "robot stamp (mapped to host time) -> arrival at a subscriber"},
        },
        "peer_franka_state_controller_hz": FRANKA_STATE_CONTROLLER_RATE,
        "rate_ratio_vs_franka_state_controller": rate / FRANKA_STATE_CONTROLLER_RATE,
        "tracking_rms_rad": {
            "trajectories": raw["trajectories"],
            "fci_bridge_over_fci": rms_fci.tolist(),
            "ros_native_standin": rms_native.tolist(),
            "ratio_fci_over_native": (rms_fci / rms_native).tolist(),
        },
    }


def bench_fci_bridges(seconds: float) -> dict:
    """Both runs of one benchmark: the stand-in at normal priority (it shares the two cores with
    the bridge, the listener and the master, and is sometimes late, which a robot never is),
    then at SCHED_FIFO 40 (a robot's controller is a computer of its own)."""
    runs = {}
    for name, priority in (("standin_normal_priority", None), ("standin_fifo_40", 40)):
        runs[name] = bench_fci_bridge(seconds, priority)
        print_table(runs[name])
    return runs


def print_table(result: dict) -> None:
    js = result["joint_states"]
    cc = result["control_command_success_rate"]
    where = ("normal priority" if result["standin_fifo_priority"] is None
             else f"SCHED_FIFO {result['standin_fifo_priority']}")
    print(f"fci_bridge vs fci_standin ({result['seconds']:.0f} s, real-time kernel: "
          f"{result['realtime_kernel']}; reality stand-in over FCI at {where})")
    print(f"  control command success rate  mean {cc['mean']:.5f}  worst 100-tick window {cc['min']:.2f}")
    print(f"  /real/joint_states  {js['rate_hz']:.1f} Hz ({js['rate_hz'] / 30.0:.0f}x franka_state_"
          f"controller's 30 Hz), max stamp gap {js['max_stamp_gap_ms']:.2f} ms, max arrival gap "
          f"{js['max_arrival_gap_ms']:.2f} ms, arrival gaps > 2 ms: {js['arrival_gaps_over_2ms']}")
    print(f"  tick -> publish  median {js['publish_latency_ms']['median']:.3f} ms, p99 "
          f"{js['publish_latency_ms']['p99']:.3f} ms; stamp -> subscriber median "
          f"{js['stamp_to_arrival_ms']['median']:.3f} ms, p99 {js['stamp_to_arrival_ms']['p99']:.3f} ms")
    tr = result["tracking_rms_rad"]
    print(f"  tracking RMS [mrad] over {tr['trajectories']} trajectories, per joint:")
    print("    over FCI    " + " ".join(f"{1e3 * v:7.3f}" for v in tr["fci_bridge_over_fci"]))
    print("    ROS-native  " + " ".join(f"{1e3 * v:7.3f}" for v in tr["ros_native_standin"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--out", help="folder for fci_bridge.json")
    parser.add_argument("--listen", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--raw", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.listen:
        listen(args.seconds, args.raw)
        return
    result = bench_fci_bridges(args.seconds)
    if args.out:
        write_json(os.path.join(args.out, "fci_bridge.json"), {**result, **provenance("bench/fci_bridge.py")})


if __name__ == "__main__":
    main()
