"""Latency of the residual_publisher node with 1 kHz input (issue 3 target: p99 <= 1 ms over 60 s,
no message dropped).

Three processes on a private master: a player publishes 1 kHz simulator joint states (recorded
beforehand from the PyBullet simulator at 1 kHz) on /sim/joint_states with header stamp = the
wall time of publishing; the node corrects them; a listener records, for every message on
/sim/joint_states_realistic, receipt wall time minus stamp (message in -> corrected message out,
including both TCPROS hops) and the count. A baseline run without the node (the listener on
/sim/joint_states directly) measures one hop of the same Python transport, so the node's share
can be told apart. The node's own figure (callback entry -> both messages published) comes from
its /diagnostics.

Run: python bench/node_latency.py --seconds 60 [--model MODEL.pt] --out bench/results
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Optional

import numpy as np
from sim2real_checks import provenance, write_json

HERE = os.path.abspath(__file__)
MODEL_HIDDEN = 64   # the size make demo / make study train; the timing does not depend on weights
INPUT = "/sim/joint_states"
OUTPUT = "/sim/joint_states_realistic"


def record_states(path: str, seconds: float, rate: int = 1000) -> int:
    """Simulated Panda states at ``rate`` Hz over ``seconds`` (generated moves), saved as npy."""
    from panda_sim2real import JointLimits
    from panda_sim2real import SimulatedRobot
    from panda_sim2real import SIM_CONFIG_FILE, RobotConfig
    from panda_sim2real import GeneratorSettings, TrajectoryGenerator

    limits = JointLimits.from_yaml()
    config = RobotConfig.from_yaml(SIM_CONFIG_FILE).with_overrides(publish_rate=rate)
    robot = SimulatedRobot(config, limits)
    generator = TrajectoryGenerator(limits, GeneratorSettings(), seed=7)
    rows, start_q = [], limits.home
    while robot.t < seconds:
        planned = robot.command(generator.next(start_q, ("single", "multi")).trajectory)
        start_q = planned.positions[-1]
        while robot.t < planned.start + planned.duration and robot.t < seconds:
            robot.step()
            if robot.publish_due:
                m = robot.measure()
                rows.append(np.concatenate([m.position, m.velocity, m.effort]))
    robot.close()
    np.save(path, np.array(rows))
    return len(rows)


def play(states_path: str, rate: float, topic: str) -> None:
    """Publish the recorded states at ``rate`` Hz, stamp = wall time of publishing."""
    import rospy
    from sensor_msgs.msg import JointState

    from panda_sim2real import JointLimits

    states = np.load(states_path)
    names = list(JointLimits.from_yaml().joint_names)
    rospy.init_node("latency_player", disable_signals=True)
    with warnings.catch_warnings():   # synchronous publishing on purpose (see residual_node)
        warnings.simplefilter("ignore")
        pub = rospy.Publisher(topic, JointState, queue_size=None, tcp_nodelay=True)
    while pub.get_num_connections() == 0:
        time.sleep(0.01)
    time.sleep(1.0)
    period = 1.0 / rate
    next_time = time.perf_counter()
    for row in states:
        while True:   # sleep most of the wait, spin the rest: a steady 1 kHz from Python
            left = next_time - time.perf_counter()
            if left <= 0:
                break
            if left > 3e-4:
                time.sleep(left - 2e-4)
        msg = JointState()
        msg.name = names
        msg.position, msg.velocity, msg.effort = row[:7].tolist(), row[7:14].tolist(), row[14:].tolist()
        msg.header.stamp = rospy.Time.from_sec(time.time())
        pub.publish(msg)
        next_time += period
    time.sleep(1.0)


def listen(topic: str, expected: int, out: str, timeout: float) -> None:
    """Record receipt - stamp for ``expected`` messages on ``topic``; node diagnostics too."""
    import threading

    import rospy
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    latencies = np.zeros(expected)
    stamps = np.zeros(expected)
    count = [0]
    diagnostics: dict = {}
    done = threading.Event()

    def on_state(msg):
        now = time.time()
        k = count[0]
        if k < expected:
            stamp = msg.header.stamp.to_sec()
            latencies[k] = now - stamp
            stamps[k] = stamp
        count[0] = k + 1
        if count[0] >= expected:
            done.set()

    def on_diagnostics(msg):
        for status in msg.status:
            if "residual" in status.name.lower():
                diagnostics.update({kv.key: kv.value for kv in status.values})

    rospy.init_node("latency_listener", disable_signals=True)
    rospy.Subscriber(topic, JointState, on_state, queue_size=100000, tcp_nodelay=True)
    rospy.Subscriber("/diagnostics", DiagnosticArray, on_diagnostics, queue_size=10)
    done.wait(timeout)
    time.sleep(1.5)   # one more diagnostics message after the last sample
    n = min(count[0], expected)
    np.savez(out, latencies=latencies[:n], stamps=stamps[:n], received=count[0],
             diagnostics=json.dumps(diagnostics))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _summary(latencies: np.ndarray) -> dict:
    us = latencies * 1e6
    return {"median_us": float(np.median(us)), "p99_us": float(np.percentile(us, 99)),
            "p999_us": float(np.percentile(us, 99.9)), "max_us": float(us.max()),
            "mean_us": float(us.mean())}


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def run_case(env: dict, states: str, n: int, rate: float, model: Optional[str],
             folder: str) -> dict:
    """One run: player -> (node ->) listener; returns the listener's figures."""
    out = os.path.join(folder, f"listen_{'node' if model else 'baseline'}.npz")
    procs = []
    try:
        if model:
            procs.append(subprocess.Popen(
                ["rosrun", "realeasy_ros", "residual_publisher", "__ns:=/realeasy",
                 f"_model:={model}", f"joint_states:={INPUT}", f"joint_states_realistic:={OUTPUT}"],
                env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
            time.sleep(3.0)
        topic = OUTPUT if model else INPUT
        listener = subprocess.Popen([sys.executable, HERE, "listen", topic, str(n), out,
                                     str(n / rate + 60)], env=env, start_new_session=True)
        procs.append(listener)
        time.sleep(2.0)
        player = subprocess.Popen([sys.executable, HERE, "play", states, str(rate), INPUT],
                                  env=env, start_new_session=True)
        procs.append(player)
        player.wait()
        listener.wait(timeout=120)
    finally:
        for proc in reversed(procs):
            stop_process(proc)
    data = np.load(out)
    result = dict(_summary(data["latencies"]), sent=n, received=int(data["received"]),
                  dropped=int(n - int(data["received"])))
    diagnostics = json.loads(str(data["diagnostics"]))
    if diagnostics:
        result["node_internal"] = {k: diagnostics[k] for k in
                                   ("latency_median_us", "latency_p99_us", "latency_max_us",
                                    "messages", "corrected", "rejected") if k in diagnostics}
    return result


def untrained_model(path: str, rate: float = 1000.0,
                    label: str = "bench (untrained weights)") -> str:
    """A realtime Realeasy model file of the size make demo/study train, untrained weights (the
    timing does not depend on the weights, only on the sizes); returns ``path``."""
    from panda_sim2real import JointLimits
    from panda_pairs import JointLimitScaler
    from realeasy_ros import ModelSpec, build_network
    from realeasy_ros import RealeasyModel

    limits = JointLimits.from_yaml()
    spec = ModelSpec(hidden_size=MODEL_HIDDEN)
    RealeasyModel(build_network(spec), spec, JointLimitScaler.from_limits(limits),
                  limits.joint_names, rate, 20, {"label": label}).save(path)
    return path


def hot_path_costs(model_path: str, states_path: str, repeats: int = 5) -> dict:
    """Median microseconds per message of each part of the node's hot path, in this process on
    the recorded states (one message after another, ``repeats`` passes; medians over passes):
    the input check as the node runs it (a known layout: one vector pass) and as a first message
    takes it (every field), the output check on the values a message was built from and by walking
    the message's fields, the C++ step, building the two messages."""
    from panda_sim2real import JointLimits
    from realeasy_ros import REALTIME, ResidualStream, load_model
    from sensor_msgs.msg import JointState
    from sim2real_checks import non_finite_fields

    limits = JointLimits.from_yaml()
    model = load_model(model_path, architecture=REALTIME)
    stream = ResidualStream(model, limits.bounds(measured=True))
    names = list(limits.joint_names)
    messages = [JointState(name=names, position=r[:7].tolist(), velocity=r[7:14].tolist(),
                           effort=r[14:].tolist()) for r in np.load(states_path)[:5000]]
    x, out = np.zeros(21), stream.layout.message(messages[0].header, np.zeros(21))

    def per_field(msg):      # what fill did for every message before: the detailed check
        x[:7], x[7:14], x[14:] = stream.layout.arrays(msg.name, msg.position, msg.velocity, msg.effort)

    parts = {
        "input_check_hot_us": lambda m: stream.layout.fill(m.name, m.position, m.velocity, m.effort, x),
        "input_check_per_field_us": per_field,
        "step_us": lambda m: stream.core.update(x, stream.corrected, stream.residual),
        "messages_us": lambda m: (stream.layout.message(m.header, stream.corrected),
                                  stream.layout.message(m.header, stream.residual)),
        "output_check_values_us": lambda m: (np.isfinite(stream.corrected).all(),
                                             np.isfinite(stream.residual).all()),
        "output_check_walk_us": lambda m: (non_finite_fields(out), non_finite_fields(out)),
    }
    result = {}
    for name, part in parts.items():
        passes = []
        for _ in range(repeats):
            start = time.perf_counter()
            for msg in messages:
                part(msg)
            passes.append((time.perf_counter() - start) / len(messages) * 1e6)
        result[name] = float(np.median(passes))
    hot = result["input_check_hot_us"] + result["output_check_values_us"]
    full = result["input_check_per_field_us"] + result["output_check_walk_us"]
    result.update(checks_hot_us=hot, checks_per_field_us=full, checks_per_field_over_hot=full / hot,
                  what="median us per message in one process; the node runs the 'hot' checks "
                       "(a known layout, the output values checked as arrays); 'per_field' is how "
                       "every message was checked before (each field, each float of the messages)")
    return result


def bench_node_latency(seconds: float = 60.0, rate: float = 1000.0,
                       model: Optional[str] = None) -> dict:
    folder = tempfile.mkdtemp(prefix="realeasy_latency_")
    states = os.path.join(folder, "states.npy")
    n = record_states(states, seconds, int(rate))
    model_note = model
    if model is None:
        model = untrained_model(os.path.join(folder, "untrained.pt"), rate)
        model_note = (f"realtime model of the size make demo/study train (hidden {MODEL_HIDDEN}, "
                      f"2 layers), untrained weights")
    port = free_port()
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_IP="127.0.0.1")
    env.pop("ROS_HOSTNAME", None)
    master = subprocess.Popen(["roscore", "-p", str(port)], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(4.0)
        baseline = run_case(env, states, n, rate, None, folder)
        node = run_case(env, states, n, rate, model, folder)
    finally:
        stop_process(master)
    costs = hot_path_costs(model, states)
    return {
        "what": "residual_publisher: message in (player stamp) -> corrected message out "
                "(listener receipt), both TCPROS hops included; baseline = player -> listener "
                "directly (one hop, no node)",
        "input_rate_hz": rate, "seconds": seconds, "messages": n, "model": model_note,
        "node": node, "baseline_one_hop": baseline,
        "node_over_baseline_p99": node["p99_us"] / baseline["p99_us"],
        "hot_path": costs,
        "targets": {"p99_us": 1000.0, "dropped": 0, "node_over_baseline_p99": 1.5},
        "pass": {"p99": node["p99_us"] <= 1000.0, "no_drop": node["dropped"] == 0,
                 "node_over_baseline_p99": node["p99_us"] / baseline["p99_us"] <= 1.5},
        "paper_step_ms": 0.39,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "note": "2-core shared machine; player, node, listener and master share it"},
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "play":
        play(sys.argv[2], float(sys.argv[3]), sys.argv[4])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "listen":
        listen(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--model", help="a realtime model file (default: untrained, default size)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    result = bench_node_latency(args.seconds, args.rate, args.model)
    write_json(os.path.join(args.out, "node_latency.json"), {**result, **provenance("bench/node_latency.py")})
    print(json.dumps(result, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
