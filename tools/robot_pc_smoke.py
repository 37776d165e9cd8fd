"""The robot PC's real-time parts for --seconds at 1 kHz, as `make docker-test` runs them inside the
container and on the host in the same run: the preflight, then on a private master
launch/robot_pc.launch with the reality stand-in served over FCI (fci_standin at SCHED_FIFO 40),
fci_bridge with its control process at SCHED_FIFO 80 and its memory locked, the Realeasy
residual publisher at SCHED_FIFO 70 on the simulator's 1 kHz joint states with a model file, and
a listener. Prints one table and
writes --json: /real/joint_states rate and gaps, the bridge's control command success rate, the
corrected stream's count, the residual publisher's latency (its own /diagnostics), and the errors
the bridge reported (a reflex abort of the stand-in, panda_fci/reflexes.py, or a lost connection). Fails (exit 1)
only when a stream did not come out; the figures are reported against their targets, not
asserted (a shared non-RT VM misses them now and then). Reality stand-in, never a real robot.

  python tools/robot_pc_smoke.py --seconds 30 --json OUT.json [--model FILE.pt] [--where LABEL]
  python tools/robot_pc_smoke.py --table RUN.json... [--results OUT.json]

--results writes the runs side by side with their targets, the commit and the command: the
file behind docker/RESULTS.md (docker/results/robot_pc.json, copied from build/docker/out/).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from node_latency import free_port, stop_process, untrained_model  # noqa: E402 (the bench's)

HOST = "127.0.0.73"


def listen(seconds: float) -> dict:
    import rospy
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    from panda_sim2real.msg import RobotState

    rospy.init_node("robot_pc_smoke")
    real, corrected, success, errors, diagnostics = [], [], [], [], {}
    rospy.Subscriber("/real/joint_states", JointState,
                     lambda m: real.append(m.header.stamp.to_sec()), queue_size=5000, tcp_nodelay=True)
    rospy.Subscriber("/sim/joint_states_realistic", JointState,
                     lambda m: corrected.append(m.header.stamp.to_sec()), queue_size=5000)
    def on_robot_state(msg):
        success.append(msg.control_command_success_rate)
        errors.append(msg.last_error)

    rospy.Subscriber("/real/robot_state", RobotState, on_robot_state, queue_size=100)

    def on_diagnostics(msg):
        for status in msg.status:
            if "residual" in status.name:
                diagnostics.update({kv.key: kv.value for kv in status.values})

    rospy.Subscriber("/diagnostics", DiagnosticArray, on_diagnostics, queue_size=10)
    deadline = time.monotonic() + 90
    while (not real or not corrected) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    r0, c0, s0 = len(real), len(corrected), len(success)
    time.sleep(seconds)
    stamps = np.array(real[r0:])
    gaps = np.diff(stamps) if len(stamps) > 1 else np.array([np.inf])
    rates = np.array(success[s0:]) if len(success) > s0 else np.array([0.0])
    window = [""] + errors[s0:]                    # an error already active counts once
    aborts = sum(1 for before, now in zip(window, window[1:]) if now and not before)
    return {"seconds": seconds, "joint_states": int(len(stamps)),
            "joint_states_hz": len(stamps) / seconds,
            "max_stamp_gap_ms": float(gaps.max() * 1e3),
            "stamp_gaps_over_2ms": int(np.sum(gaps > 0.002)),
            "missing_states": int(np.sum(np.maximum(np.round(gaps / 0.001) - 1, 0)))
            if len(stamps) > 1 else 0,
            "success_rate_mean": float(rates.mean()), "success_rate_min": float(rates.min()),
            "aborts": int(aborts),
            "corrected": int(len(corrected) - c0),
            "publisher_latency_p99_us": float(diagnostics.get("latency_p99_us", "nan")),
            "publisher_latency_median_us": float(diagnostics.get("latency_median_us", "nan"))}


def run(seconds: float, model: str, where: str) -> dict:
    port = free_port()
    env = dict(os.environ, ROS_MASTER_URI=f"http://127.0.0.1:{port}", ROS_IP="127.0.0.1")
    preflight = subprocess.run([sys.executable, os.path.join(ROOT, "panda_fci", "scripts",
                                                             "preflight"), "--allow-degraded"],
                               capture_output=True, text=True, env=env)
    print(preflight.stdout)
    procs = [subprocess.Popen(["roscore", "-p", str(port)], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    log = open(os.path.join(tempfile.mkdtemp(prefix="robot_pc_smoke_"), "launch.log"), "w")
    try:
        time.sleep(2.0)
        procs.append(subprocess.Popen(
            ["roslaunch", os.path.join(ROOT, "launch", "robot_pc.launch"), "robot:=fci_standin",
             f"robot_ip:={HOST}", f"model:={model}", "standin_priority:=40"],
            env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen(
            ["roslaunch", "panda_sim2real", "panda_sim.launch", "publish_rate:=1000",
             "publish_clock:=false"], env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        figures = json.loads(subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--listen", "--seconds", str(seconds)],
            env=env, capture_output=True, text=True, check=True, timeout=seconds + 180).stdout
            .strip().splitlines()[-1])
    finally:
        for proc in reversed(procs):
            stop_process(proc)
        log.close()
    figures["where"] = where
    figures["preflight_exit"] = preflight.returncode
    return figures


TARGETS = (("joint_states_hz", "/real/joint_states [Hz]", "1000"),
           ("missing_states", "robot states that never reached the topic", "0"),
           ("stamp_gaps_over_2ms", "robot-stamp gaps > 2 ms", "0"),
           ("max_stamp_gap_ms", "longest robot-stamp gap [ms]", "<= 2"),
           ("success_rate_mean", "control command success rate", ">= 0.999"),
           ("aborts", "bridge errors (reflex aborts, lost connections)", "0"),
           ("corrected", "corrected messages (/sim/joint_states_realistic)", "> 0"),
           ("publisher_latency_median_us", "residual publisher median [us]", ""),
           ("publisher_latency_p99_us", "residual publisher p99 [us]", "<= 1000"))


def table(runs: list[dict]) -> str:
    head = f"{'figure':<50}" + "".join(f"{r['where']:>16}" for r in runs) + f"{'target':>12}"
    lines = [head, "-" * len(head)]
    for key, name, target in TARGETS:
        lines.append(f"{name:<50}" + "".join(f"{r.get(key, float('nan')):>16.4g}" for r in runs) + f"{target:>12}")
    return "\n".join(lines)


def results(runs: list[dict], seconds: float) -> dict:
    """The runs of one ``make docker-test`` side by side (``where`` -> figures), with the targets
    and the provenance (docker/RESULTS.md)."""
    from sim2real_checks import provenance
    return {"label": "reality stand-in (fci_standin over FCI), not a real robot",
            "seconds": seconds, "runs": {r["where"]: r for r in runs},
            "targets": {key: target for key, _, target in TARGETS},
            **provenance("make docker-test", [])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--model", help="realtime model file (default: an untrained one)")
    parser.add_argument("--where", default="host", help="label of this run in the table")
    parser.add_argument("--json", help="write the figures")
    parser.add_argument("--table", nargs="+", metavar="JSON", help="print the table of these runs")
    parser.add_argument("--results", metavar="JSON", help="with --table: write the runs side by side")
    parser.add_argument("--listen", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.listen:
        print(json.dumps(listen(args.seconds)))
        return
    if args.table:
        runs = []
        for path in args.table:
            with open(path, encoding="utf-8") as f:
                runs.append(json.load(f))
        print(table(runs))
        if args.results:
            from sim2real_checks import write_json
            write_json(args.results, results(runs, args.seconds))
        return
    model = args.model or untrained_model(
        os.path.join(tempfile.mkdtemp(prefix="robot_pc_model_"), "untrained.pt"),
        label="smoke test (untrained weights)")
    figures = run(args.seconds, model, args.where)
    print(table([figures]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    if figures["joint_states"] == 0 or figures["corrected"] == 0:
        sys.exit("robot_pc_smoke: a stream did not come out (see the table)")


if __name__ == "__main__":
    main()
