#!/usr/bin/env python3
"""Markdown summary of tools/diffnea_panda.sh: NMSE before/after identification and the torque
MSE of panda_sim against the reality stand-in with the nominal and the identified URDF."""
from __future__ import annotations

import json
import os
import sys


def load(folder: str, name: str) -> dict:
    with open(os.path.join(folder, name), encoding="utf-8") as handle:
        return json.load(handle)


def row(label: str, values: list, fmt: str = "{:.3g}") -> str:
    return "| " + label + " | " + " | ".join(fmt.format(v) for v in values) + " |"


def main(folder: str) -> int:
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "diffnea_ros/results"))
