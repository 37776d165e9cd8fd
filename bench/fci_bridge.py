"""fci_bridge against fci_standin over the libfranka protocol (issue 39 targets), on this
machine's ordinary (not PREEMPT_RT) kernel; every figure is measured against the reality
stand-in served over FCI, never a real robot.

An A/B of the bridge's 1 kHz path in one run: ``control:=callback`` (the tick callback that sets
each cycle's reference runs in the node's process, beside rospy's threads) and
``control:=process`` (it runs in a child process that does no ROS work; panda_fci's
control_process.py). Each run, on a private master: ``launch/robot_pc.launch robot:=fci_standin``
as on the robot PC (fci_bridge's 1 kHz path at SCHED_FIFO 80 with its memory locked: the control
process alone with ``control:=process``, the whole node with ``callback``; the Realeasy residual
publisher at SCHED_FIFO 70 on the simulator's 1 kHz joint states; rosbag recording the pair
topics at 1 kHz) and ``panda_sim`` publishing at 1 kHz, with
fci_standin at SCHED_FIFO 40: at normal priority the Python stand-in itself fell to 550-590 ticks
a second under this load on this 2-core machine (its robot clock then runs slow and no client
figure means anything); a robot's controller is a computer of its own and never late. A listener
subscribes /real/joint_states and /real/robot_state for --seconds while it commands generated
trajectories (config/trajectories.yaml, seeded) back to back on
/real/joint_trajectory_controller/command. Figures:

* control command success rate (libfranka's, from /real/robot_state): mean and worst window;
  the motions the stand-in aborted (its reflexes) and other bridge errors;
* /real/joint_states: rate, the longest gap between consecutive robot stamps and between
  arrivals, the count of gaps over 2 ms; the node's own control-tick-to-publish latency
  (median, p99, from /real/robot_state) and robot-stamp-to-arrival at a subscriber;
* tracking: RMS joint error of each executed trajectory against its plan, per joint, over FCI
  and for the ROS-native stand-in (the same SimulatedRobot and config that panda_reality runs,
  stepped in-process) executing the same trajectories; their ratio.
Peer: franka_ros's franka_state_controller publishes joint states at 30 Hz by default
(its documented ``publish_rate``; franka_ros is not installed here, so this is not measured).

Run: python bench/fci_bridge.py --seconds 600 --out bench/results
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

import numpy as np

from node_latency import free_port, stop_process
from sim2real_checks import provenance, write_json

HERE = os.path.abspath(__file__)
HOST = "127.0.0.71"
PRIORITIES = ["standin_priority:=40"]   # see the module docstring
ROBOT_PC_LAUNCH = os.path.join(os.path.dirname(os.path.dirname(HERE)), "launch", "robot_pc.launch")
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
        if inside.any():                 # none: the robot stopped on an error (bridge_errors)
            ref = np.array([plan.sample(x - start)[0] for x in t[inside]])
            errors.append(q[inside] - ref)
    errors = errors or [np.full((1, q.shape[1] if q.ndim == 2 else 7), np.nan)]
    with open(out, "w") as f:
        json.dump({"stamps": stamps, "arrivals": arrivals, "states": window_states,
                   "duration": duration,
                   "rms_fci": np.sqrt(np.mean(np.square(np.concatenate(errors)), axis=0)).tolist(),
                   "trajectories": len(executed),
                   "plans": [[float(s), i] for i, (s, _) in enumerate(executed)]}, f)


def bench_fci_bridge(seconds: float, control: str, model: str) -> dict:
    """One run of ``launch/robot_pc.launch`` with the bridge's ``control`` (see the docstring)."""
    port = free_port()
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_IP="127.0.0.1")
    master = subprocess.Popen(["roscore", "-p", str(port)], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs: list[subprocess.Popen] = []
    folder = tempfile.mkdtemp(prefix="fci_bench_")
    raw_path = os.path.join(folder, "raw.json")
    try:
        time.sleep(2.0)
        procs.append(subprocess.Popen(
            ["roslaunch", ROBOT_PC_LAUNCH, "robot:=fci_standin", f"robot_ip:={HOST}",
             f"control:={control}", f"model:={model}", f"bag:={os.path.join(folder, 'pairs.bag')}",
             *PRIORITIES],
            env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen(
            ["roslaunch", "panda_sim2real", "panda_sim.launch", "publish_rate:=1000",
             "publish_clock:=false"], env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        subprocess.run([sys.executable, HERE, "--listen", "--seconds", str(seconds),
                        "--raw", raw_path], env=env, check=True, timeout=seconds + 240)
    finally:
        for proc in reversed(procs):
            stop_process(proc)
        stop_process(master)
    recorded = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
                   if f.endswith(".bag"))
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
    errors = [""] + [s[4] for s in raw["states"]]
    aborts = sorted({now for before, now in zip(errors, errors[1:]) if now and not before})
    return {
        "label": "fci_bridge vs fci_standin (reality stand-in over FCI; not a real robot)",
        "control": control, "seconds": raw["duration"], "realtime_kernel": bool(last[3]),
        "load": "launch/robot_pc.launch: stand-in at SCHED_FIFO 40, the bridge's 1 kHz path at "
                "SCHED_FIFO 80 with memory locked, residual publisher at SCHED_FIFO 70 on panda_sim's 1 kHz states, "
                "rosbag recording the pair topics, a listener commanding trajectories",
        "recorded_bytes": int(recorded),
        "cpus": os.cpu_count(), "machine": platform.machine(),
        "bridge_errors": {"count": sum(1 for b, n in zip(errors, errors[1:]) if n and not b),
                          "distinct": aborts, "target": 0,
                          "what": "errors the bridge reported on /real/robot_state (the stand-in's "
                                  "reflex aborts, a lost connection), each counted once"},
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
    """The A/B of one benchmark: the tick callback in the node's process (today's path, the
    baseline), then in a child process of its own, each under the same load."""
    from node_latency import untrained_model

    model = untrained_model(os.path.join(tempfile.mkdtemp(prefix="fci_bench_model_"), "untrained.pt"),
                            label="bench (untrained weights)")
    runs = {}
    for control in ("callback", "process"):
        runs[control] = bench_fci_bridge(seconds, control, model)
        print_table(runs[control])
    base, new = (runs[c]["tracking_rms_rad"]["fci_bridge_over_fci"] for c in ("callback", "process"))
    runs["process_over_callback_tracking_rms"] = (np.array(new) / np.array(base)).tolist()
    return runs


def print_table(result: dict) -> None:
    js = result["joint_states"]
    cc = result["control_command_success_rate"]
    print(f"fci_bridge control:={result['control']} vs fci_standin ({result['seconds']:.0f} s, "
          f"real-time kernel: {result['realtime_kernel']}; reality stand-in over FCI)")
    print(f"  control command success rate  mean {cc['mean']:.5f}  worst 100-tick window {cc['min']:.2f}"
          f"; bridge errors {result['bridge_errors']['count']} {result['bridge_errors']['distinct']}")
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
    parser.add_argument("--seconds", type=float, default=600.0, help="seconds of each run (two runs)")
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
