"""The Panda in Gazebo 11 against the PyBullet simulator, same run (issue 36; simulation only,
against the reality stand-in where a robot is involved; needs the Gazebo image, make gazebo):

1. lock-step collection: ``collect`` of ``pairs`` real/sim pairs with --sim gazebo and with the
   PyBullet simulator, simulated seconds per wall second (best of ``repeats``), and the ratio;
   the sim-vs-robot gap per joint of both on the same trajectories (``compare`` on the bags of
   the first repeat: one seed, the same moves);
2. the simulator alone on the same moves (no stand-in stepping next to it): real-time factor of
   GazeboRobot (gzserver stepped through /gazebo/step_world, states at 100 Hz) and of
   SimulatedRobot (PyBullet);
3. tracking: the PID's joint error |q - q_ref| per joint (RMS and max over the moves) on test
   moves (generator seed 1000, the kinds of a collection), Gazebo vs PyBullet.

    python bench/gazebo_panda.py --out bench/results/gazebo_panda.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np

from panda_pairs import CollectionRequest, run_collection
from panda_sim2real import (GazeboRobot, GeneratorSettings, JointLimits, KINDS, RobotConfig, SIM_CONFIG_FILE,
                            SimulatedRobot, TrajectoryGenerator)
from sim2real_checks import source_commit, write_json

TEST_SEED = 1000


def collection_speed(sim: str, pairs: int, repeats: int) -> tuple[float, dict]:
    """(best real-time factor of the collections, compare's gap figures of the first one)."""
    best, gap = 0.0, {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            bag = os.path.join(tmp, f"{sim}{r}.bag")
            figures = run_collection(CollectionRequest(out=bag, trajectories=pairs, seed=r,
                                                       sim=sim, show_progress=False)).figures
            best = max(best, figures["real_time_factor"])
            if r == 0:
                out = os.path.join(tmp, "gap.json")
                subprocess.run(["rosrun", "panda_pairs", "compare", "--bag", bag, "--quiet",
                                "--json", out, "--plot", os.path.join(tmp, "gap.png")],
                               check=True, capture_output=True)
                with open(out) as f:
                    gap = json.load(f)
    return best, gap


def track(robot, limits: JointLimits, moves: int) -> tuple[np.ndarray, float]:
    """(|q - q_ref| of every state during the moves, shape (N, dof); wall s per simulated s)."""
    generator = TrajectoryGenerator(limits, GeneratorSettings(), seed=TEST_SEED)
    errors = []
    wall = time.perf_counter()
    robot.advance(2.0)
    start_q = limits.home
    t0 = robot.t
    for _ in range(moves):
        planned = generator.next(start_q, KINDS).trajectory.at(robot.t + 0.05)
        robot.command(planned)
        for m in robot.advance(planned.start + planned.duration):
            if m.stamp >= planned.start:
                errors.append(np.abs(m.position - planned.sample(m.stamp - planned.start)[0]))
        start_q = planned.positions[-1]
    return np.array(errors), (time.perf_counter() - wall) / (robot.t - t0 + 2.0)


def bench_gazebo_panda(pairs: int = 20, moves: int = 20, repeats: int = 3) -> dict:
    limits = JointLimits.from_yaml()
    config = RobotConfig.from_yaml(SIM_CONFIG_FILE)
    result: dict = {"benchmark": "gazebo_panda",
                    "label": "Gazebo 11 simulation (ODE, panda_gazebo plugin) and the PyBullet "
                             "simulation, against the reality stand-in (MuJoCo); this machine",
                    "pairs": pairs, "test_moves": moves, "repeats": repeats,
                    "physics_rate": config.physics_rate, "publish_rate": config.publish_rate}
    runs = {sim: collection_speed(sim, pairs, repeats) for sim in ("gazebo", "pybullet")}
    speed = {sim: run[0] for sim, run in runs.items()}
    result["collection_real_time_factor"] = speed
    result["collection_gazebo_over_pybullet"] = speed["gazebo"] / speed["pybullet"]
    result["gap_to_the_reality_stand_in"] = {
        sim: {key: run[1][key] for key in ("position_mse", "velocity_mse", "torque_mse", "label")}
        for sim, run in runs.items()}
    result["torque_mse_gazebo_over_pybullet"] = (
        np.array(runs["gazebo"][1]["torque_mse"]) / np.array(runs["pybullet"][1]["torque_mse"])).tolist()
    alone, tracking = {}, {}
    for sim in ("gazebo", "pybullet"):
        best, errors = np.inf, None
        for _ in range(repeats):
            robot = GazeboRobot(config, limits) if sim == "gazebo" else SimulatedRobot(config, limits)
            try:
                errors, seconds = track(robot, limits, moves)
            finally:
                robot.close()
            best = min(best, seconds)
        alone[sim] = 1.0 / best
        tracking[sim] = {"rms_rad": np.sqrt(np.mean(errors ** 2, axis=0)).tolist(),
                         "max_rad": errors.max(axis=0).tolist(), "states": len(errors)}
    result["simulator_alone_real_time_factor"] = alone
    result["simulator_alone_gazebo_over_pybullet"] = alone["gazebo"] / alone["pybullet"]
    result["tracking"] = tracking
    result["tracking_rms_gazebo_over_pybullet"] = (np.array(tracking["gazebo"]["rms_rad"])
                                                   / np.array(tracking["pybullet"]["rms_rad"])).tolist()
    result["joint_names"] = list(limits.joint_names)
    result["commit"] = source_commit(__file__)
    return result


def print_table(result: dict) -> None:
    c, a = result["collection_real_time_factor"], result["simulator_alone_real_time_factor"]
    print(f"Panda, Gazebo 11 vs PyBullet (simulation; stand-in for the pairs): collection "
          f"{c['gazebo']:.1f}x / {c['pybullet']:.1f}x real time (ratio "
          f"{result['collection_gazebo_over_pybullet']:.2f}); simulator alone {a['gazebo']:.1f}x / "
          f"{a['pybullet']:.1f}x (ratio {result['simulator_alone_gazebo_over_pybullet']:.2f})")
    for sim in ("gazebo", "pybullet"):
        rms = " ".join(f"{1e3 * v:6.2f}" for v in result["tracking"][sim]["rms_rad"])
        gap = " ".join(f"{v:6.3f}" for v in result["gap_to_the_reality_stand_in"][sim]["torque_mse"])
        print(f"  {sim:8s} tracking RMS [mrad] {rms}; torque MSE vs stand-in [(N m)^2] {gap}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    result = bench_gazebo_panda(args.pairs, args.moves, args.repeats)
    write_json(args.out, result)
    print_table(result)


if __name__ == "__main__":
    main()
