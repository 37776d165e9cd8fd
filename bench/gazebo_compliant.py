"""Speed of the compliant-actuator plugin in gzserver 11 (issue 35), against the embedded
simulation in the same run (simulation only; needs the Gazebo image, make gazebo):

1. unthrottled real-time factor of the 2-DoF qbMove arm and the 5-DoF arm (mode 6) at a 1 ms
   ODE step, states at 100 Hz: gzserver stepped in chunks of 10 s of simulated time through
   /gazebo/step_world, and the embedded simulation (PyBullet) on the same description;
2. the plugin's cost per joint step: gzserver's wall time per step with the plugin blocks minus
   that of the same model with the blocks removed (passive joints), divided by the joints; next
   to the embedded simulation's core time per joint step (EmbeddedSimulation.core_seconds).
Each figure is the best of ``repeats`` runs (the machine is shared and noisy).

    python bench/gazebo_compliant.py --out bench/results/gazebo_compliant.json
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
import time

from compliant_actuator_gazebo import EmbeddedSimulation, expand_xacro, package_file, parse_description
from sim2real_checks import source_commit, write_json
from sim2real_gazebo import GazeboSession, WorldConfig, engine

ARMS = {"two_dof_qbmove": {}, "five_dof_arm": {"mode": 6}}
PRESET = 0.3


def without_plugins(urdf: str) -> str:
    """The same robot with its compliant-actuator blocks removed (passive joints)."""
    return re.sub(r"<gazebo>\s*<plugin[^>]*libcompliant_actuator_plugin\.so.*?</plugin>\s*</gazebo>",
                  "", urdf, flags=re.S)


def gazebo_seconds_per_step(urdf: str, robot: str, joints, seconds: float, plugins: bool) -> float:
    params = {f"/{robot}/publish_rate": 100.0}
    params.update({f"/{robot}/initial_inputs/{j}": {"stiffness_preset": PRESET} for j in joints})
    ready = [f"/{robot}/{j}/link_state" for j in joints] if plugins else []
    log = os.path.join(tempfile.gettempdir(), f"sim2real-bench-gzserver-{os.getpid()}.log")
    with GazeboSession(urdf, WorldConfig(physics_rate=1000.0, real_time_factor=0.0), params=params,
                       ready_topics=ready, log=log, private=True) as session:
        if not plugins:
            time.sleep(3.0)                      # the model loads in the background (no topic to wait for)
        session.step(1000)                       # warm-up
        steps = left = int(seconds * 1000)
        wall = time.perf_counter()
        while left > 0:
            session.step(min(left, 10000))
            left -= 10000
        return (time.perf_counter() - wall) / steps


def embedded(description, seconds: float) -> tuple[float, float]:
    """(wall s per step, core s per step) of the embedded simulation."""
    inputs = {j: {"stiffness_preset": PRESET} for j in description.compliant_names}
    with EmbeddedSimulation(description, physics_rate=1000.0, initial_inputs=inputs) as sim:
        sim.step(1000)
        sim.reset_timing()
        steps = int(seconds * 1000)
        wall = time.perf_counter()
        for _ in range(steps // 10):
            sim.step(10)
            for joint in sim.joints:              # states read at 100 Hz, as a publisher would
                sim.state(joint)
        wall = time.perf_counter() - wall
        return wall / steps, sim.core_seconds / steps


def bench_gazebo_compliant(seconds: float = 30.0, repeats: int = 3) -> dict:
    result: dict = {"benchmark": "gazebo_compliant", "label": "Gazebo 11 simulation (ODE) and "
                    "embedded simulation (PyBullet), this machine", "physics_step_s": 1e-3,
                    "simulated_seconds_per_run": seconds, "repeats": repeats, "arms": {}}
    for name, args in ARMS.items():
        urdf = expand_xacro(package_file("urdf", f"{name}.urdf.xacro"), args)
        description = parse_description(urdf)
        joints = description.compliant_names
        with_plugin = min(gazebo_seconds_per_step(urdf, description.name, joints, seconds, True)
                          for _ in range(repeats))
        passive = min(gazebo_seconds_per_step(without_plugins(urdf), description.name, joints, seconds,
                                              False) for _ in range(repeats))
        runs = [embedded(description, seconds) for _ in range(repeats)]
        wall, core = min(r[0] for r in runs), min(r[1] for r in runs)
        result["arms"][name] = {
            "joints": len(joints),
            "gazebo_real_time_factor": 1e-3 / with_plugin,
            "gazebo_passive_real_time_factor": 1e-3 / passive,
            "embedded_real_time_factor": 1e-3 / wall,
            "gazebo_over_embedded_speed": wall / with_plugin,
            "plugin_us_per_joint_step": 1e6 * (with_plugin - passive) / len(joints),
            "embedded_core_us_per_joint_step": 1e6 * core / len(joints),
        }
    result["commit"] = source_commit(__file__)
    result["engine_version"] = subprocess.run([engine(), "--version"], capture_output=True,
                                              text=True).stdout.strip()
    return result


def print_table(result: dict) -> None:
    print("compliant actuators, Gazebo 11 vs embedded (1 ms step, unthrottled, simulation):")
    for name, a in result["arms"].items():
        print(f"  {name:15s} RTF gazebo {a['gazebo_real_time_factor']:6.1f}x (passive "
              f"{a['gazebo_passive_real_time_factor']:6.1f}x), embedded {a['embedded_real_time_factor']:6.1f}x; "
              f"plugin {a['plugin_us_per_joint_step']:.2f} us/joint-step, embedded core "
              f"{a['embedded_core_us_per_joint_step']:.2f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    result = bench_gazebo_compliant(args.seconds, args.repeats)
    write_json(args.out, result)
    print_table(result)


if __name__ == "__main__":
    main()
