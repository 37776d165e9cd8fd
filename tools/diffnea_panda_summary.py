#!/usr/bin/env python3
"""Markdown summary of tools/diffnea_panda.sh: NMSE before/after identification and the torque
MSE of panda_sim against the reality stand-in with the nominal and the identified URDF."""
from __future__ import annotations

import json
import os
import sys

import numpy as np


def load(folder: str, name: str) -> dict:
    with open(os.path.join(folder, name), encoding="utf-8") as handle:
        return json.load(handle)


def row(label: str, values: list, fmt: str = "{:.3g}") -> str:
    return "| " + label + " | " + " | ".join(fmt.format(v) for v in values) + " |"


def per_trajectory_torque_mse(bag: str) -> tuple[np.ndarray, list[int]]:
    """Torque MSE (trajectories, 7) of each aligned pair of a pair bag, and the trajectory ids."""
    from panda_pairs import align_all
    from panda_sim2real import JointLimits
    from panda_pairs import read_pairs

    aligned = align_all(read_pairs(bag, JointLimits.from_yaml().joint_names).pairs).aligned
    mse = np.array([((a.sim[:, 14:] - a.real[:, 14:]) ** 2).mean(axis=0) for a in aligned])
    return mse, [a.trajectory_id for a in aligned]


def main(folder: str, work: str = "") -> int:
    ident = load(folder, "panda_identify.json")
    nominal, identified = (load(folder, f"panda_gap_{s}.json") for s in ("nominal", "identified"))
    joints = [f"j{i + 1}" for i in range(len(ident["joint_names"]))]
    head = "| | " + " | ".join(joints) + " |\n|---|" + "---|" * len(joints)
    ratio = [n / i if i > 0 else float("inf")
             for n, i in zip(nominal["torque_mse"], identified["torque_mse"])]
    print(f"# DiffNEA on the Panda: {nominal['label']} (not a real robot)\n")
    print(f"Identification ({ident['parametrisation']}) from {ident['data']}: "
          f"{ident['samples']['train']} training / {ident['samples']['heldout']} held-out samples, "
          f"{ident['epochs']} epochs, {ident['seconds']:.0f} s; physically consistent: "
          f"{ident['consistent']}.\n")
    print("Torque NMSE on held-out samples (the URDF's rigid-body model against the stand-in's "
          "measured torque):\n")
    print(head)
    print(row("nominal URDF", ident["nmse_heldout_before"]))
    print(row("identified", ident["nmse_heldout_after"]))
    print(f"\npanda_sim against the stand-in on {nominal['trajectories']} new trajectories "
          f"(same moves and seed for both), torque MSE [(N m)²]:\n")
    print(head)
    print(row("nominal URDF in panda_sim", nominal["torque_mse"]))
    print(row("identified URDF in panda_sim", identified["torque_mse"]))
    print(row("reduction", ratio, "{:.1f}x"))
    if work:
        per = {s: per_trajectory_torque_mse(os.path.join(work, f"eval_{s}.bag"))
               for s in ("nominal", "identified")}
        median = {s: np.median(per[s][0], axis=0) for s in per}
        print("\nMedian over the trajectories of the per-trajectory torque MSE [(N m)²]:\n")
        print(head)
        print(row("nominal URDF in panda_sim", median["nominal"]))
        print(row("identified URDF in panda_sim", median["identified"]))
        print(row("reduction", median["nominal"] / median["identified"], "{:.1f}x"))
        worst = int(np.argmax(per["identified"][0].sum(axis=1)))
        print(f"\nLargest per-trajectory torque MSE with the identified URDF: trajectory "
              f"{per['identified'][1][worst]}, summed over joints "
              f"{per['identified'][0][worst].sum():.3g} (N m)² (nominal URDF on the same "
              f"trajectory: {per['nominal'][0][worst].sum():.3g}).")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(sys.argv[1:] or ["diffnea_ros/results"])))
