"""Speed of compliant_actuator_gazebo (issue 5, "Benchmarks").

1. core step per joint in C++: ``CompliantJoint::update`` at a 1 kHz world step for every
   actuator in modes 3 (compliance model) and 6 (two motors + PID, sub-stepped), median ns per
   call, from the compiled ``core_step_bench`` (target <= 1 us);
2. the same call from Python through the pybind11 module, median ns per call, and its ratio to
   the C++ figure (the binding's overhead);
3. the 5-DoF arm (urdf/five_dof_arm.urdf.xacro, mode 6) in the embedded simulation at 1 kHz
   physics: simulated seconds per wall second (target >= 5x real time), and the share of the
   step spent in the core (the plugin's share: the rest is PyBullet and the Python loop).
Each figure is the median over ``repeats`` interleaved runs; the machine is shared and noisy.

    python bench/compliant_actuators.py --out bench/results/compliant_actuators.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

import numpy as np

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo import EmbeddedSimulation, load_description, package_file
from sim2real_checks import provenance, write_json

MODES = (3, 6)


def core_step_cpp() -> dict:
    """Run the compiled benchmark of the devel space (built by `make workspace`)."""
    devel = os.environ.get("CMAKE_PREFIX_PATH", "").split(":")
    for prefix in devel:
        exe = os.path.join(prefix, "lib", "compliant_actuator_gazebo", "core_step_bench")
        if os.access(exe, os.X_OK):
            return json.loads(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
    raise FileNotFoundError("core_step_bench not found on CMAKE_PREFIX_PATH (source env.sh, make workspace)")


def make_joint(actuator: str, mode: int) -> "cag.CompliantJoint":
    joint = cag.CompliantJoint(cag.make_actuator(actuator, {}), cag.make_joint_params(mode, {}))
    joint.reset(0.0, 0.0)
    joint.set_input("equilibrium_position", 0.3)
    joint.set_input("reference_1", 0.3)
    return joint


def core_step_python(calls: int, repeats: int) -> dict:
    """Median ns per ``joint.update`` call from Python, per actuator and mode."""
    result = {}
    for actuator in cag.actuator_types():
        for mode in MODES:
            joint = make_joint(actuator, mode)
            update, samples, t = joint.update, [], 0.0
            for _ in range(repeats):
                start = time.perf_counter_ns()
                for _ in range(calls):
                    t += 1e-3
                    update(t, 0.1, 0.0)
                samples.append((time.perf_counter_ns() - start) / calls)
            result[f"{actuator}_mode{mode}"] = float(np.median(samples))
    return result


def arm_speed(seconds: float) -> dict:
    """Real-time factor and core share of the 5-DoF arm (mode 6) at 1 kHz following a slow
    sine of the equilibria, published at 100 Hz as the manager would."""
    description = load_description(package_file("urdf", "five_dof_arm.urdf.xacro"), {"mode": 6})
    with EmbeddedSimulation(description, physics_rate=1000.0) as sim:
        joints = sim.joints
        for joint in joints:
            sim.set_input(joint, "stiffness_preset", 0.3)
        sim.reset_timing()
        wall = time.perf_counter()
        steps = int(seconds * 1000)
        for k in range(0, steps, 10):
            value = 0.4 * np.sin(2 * np.pi * 0.5 * k * 1e-3)
            for joint in joints:
                sim.set_input(joint, "equilibrium_position", value)
            sim.step(10)
        wall = time.perf_counter() - wall
        return {"real_time_factor": seconds / wall, "core_share": sim.core_seconds / sim.step_seconds,
                "us_per_physics_step": 1e6 * sim.step_seconds / steps,
                "core_us_per_physics_step": 1e6 * sim.core_seconds / steps, "joints": len(joints)}


def bench_compliant_actuators(repeats: int = 5, seconds: float = 10.0, calls: int = 100000) -> dict:
    cpp = core_step_cpp()
    python = core_step_python(calls, repeats)
    runs = [arm_speed(seconds) for _ in range(repeats)]
    arm = {key: float(np.median([r[key] for r in runs])) for key in runs[0]}
    cpp_ns = cpp["cpp_ns_per_step"]
    return {
        "benchmark": "compliant_actuators",
        "core_step_cpp_ns": cpp_ns,
        "core_step_python_ns": python,
        "python_over_cpp": {k: python[k] / cpp_ns[k] for k in python if k in cpp_ns},
        "five_dof_arm_1khz_mode6": arm,
        "targets": {"core_step_cpp_ns_max": 1000.0, "arm_real_time_factor_min": 5.0},
        "meets_targets": bool(max(cpp_ns.values()) <= 1000.0
                              and arm["real_time_factor"] >= 5.0),
        "repeats": repeats, "simulated_seconds_per_run": seconds, "python_calls_per_repeat": calls,
    }


def print_table(result: dict) -> None:
    print(f"{'core step per joint':28s} {'C++ ns':>9s} {'Python ns':>10s} {'ratio':>7s}")
    for key, ns in result["core_step_cpp_ns"].items():
        py = result["core_step_python_ns"].get(key)
        print(f"  {key:26s} {ns:9.1f} {py:10.1f} {py / ns:7.1f}")
    a = result["five_dof_arm_1khz_mode6"]
    print(f"5-DoF arm, mode 6, 1 kHz: {a['real_time_factor']:.1f}x real time, "
          f"{a['us_per_physics_step']:.1f} us/step, of which the core {a['core_us_per_physics_step']:.1f} us "
          f"({100 * a['core_share']:.1f} %)")
    print(f"targets {result['targets']} -> {result['meets_targets']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    result = bench_compliant_actuators(args.repeats, args.seconds)
    write_json(args.out, {**result, **provenance("bench/compliant_actuators.py")})
    print_table(result)


if __name__ == "__main__":
    main()
