"""Write reports/report.md from the figures `make demo` left in reports/ (JSON files of the
collect, compare, train and evaluate tools and the live run)."""
from __future__ import annotations

import json
import os
import sys


def load(folder: str, name: str) -> dict:
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return json.load(f)


def row(values: list) -> str:
    return " | ".join(f"{v:.3g}" for v in values)


def mse_table(rows: list[tuple[str, dict]], key: str) -> str:
    lines = ["| | " + " | ".join(f"joint {j + 1}" for j in range(7)) + " |",
             "|---|" + "---|" * 7]
    lines += [f"| {name} | {row(stats[key])} |" for name, stats in rows]
    return "\n".join(lines)


def section(title: str, rows: list[tuple[str, dict]]) -> str:
    parts = [f"### {title}"]
    for key, unit in (("torque_mse", "(N m)^2"), ("position_mse", "rad^2"),
                      ("velocity_mse", "(rad/s)^2")):
        parts += [f"\n{key.split('_')[0]} MSE [{unit}]\n", mse_table(rows, key)]
    return "\n".join(parts)


def reduction(sim: dict, corrected: dict) -> str:
    factors = [s / c if c > 0 else float("inf")
               for s, c in zip(sim["torque_mse"], corrected["torque_mse"])]
    return ", ".join(f"{f:.1f}x" for f in factors)


def compliant_section(folder: str) -> str:
    """Paper 003 reproductions (compliant_actuator_gazebo), from the embedded simulation."""
    ilc = load(folder, "ilc.json")
    text = lambda name: open(os.path.join(folder, name), encoding="utf-8").read().strip()  # noqa: E731
    return f"""## Compliant actuators (paper 003, embedded simulation: PyBullet + the C++ core)

Step responses of 0.8 rad, mode 3, soft and stiff presets of §4.1 (paper Fig. 8):

```
{text("fig8_table.txt")}
```

![step responses (paper 003 Fig. 8)](fig8.png)

ILC of the link equilibria (eq. 13) on the 2-DoF qbMove arm: within {ilc['tolerance']} rad after
{ilc['iterations']} iterations (paper: {ilc['paper_iterations']}, on the real arm's simulation).

```
{text("ilc_table.txt")}
```

![ILC (paper 003 Fig. 15)](ilc.png)
"""


def trifinger_section(folder: str) -> str:
    """Paper 004 policies (trifinger_controllers) on level 3 in trifinger_simulation."""
    lines = ["| policy | trial | final position error [cm] | drop | compute per call [us] |",
             "|---|---|---|---|---|"]
    seconds = 0.0
    for name in ("cpc_tg", "mp_pg"):
        result = load(folder, f"trifinger_{name}_l3.json")
        seconds = result["seconds"]
        for trial in result["trials"]:
            lines.append(f"| {name.upper().replace('_', '-')} | {trial['trial']} | "
                         f"{trial['position_error_cm']:.3f} | {'yes' if trial['drop'] else 'no'} | "
                         f"{trial['compute_us_mean']:.0f} |")
    return f"""## TriFinger cube policies (paper 004, simulation: trifinger_simulation, PyBullet)

Level 3 (carry the cube to a goal position), episodes of {seconds:.0f} s; the full benchmark (20
trials per pairing, level 4, the mix-and-match table) is part of `make bench`.

{chr(10).join(lines)}
"""


def kernel_section(folder: str) -> str:
    """Paper 001 delivery-vehicle experiment (kernel_manager_ros); the deployment is simulated."""
    r = load(folder, "vehicle_experiment.json")
    return f"""## State-space kernels (paper 001): the delivery vehicle

{r['label']}. {len(r['atr_curves']['design'])} missions per run.

| run | ATR |
|---|---|
| Design | {r['atr_design']:.2f} |
| Deploy (simulated) | {r['atr_deploy']:.2f} |
| Kernels (original program, kernel-modified simulation) | {r['atr_kernels']:.2f} |
| Redesign in the kernel simulation | {r['atr_redesign_kernels']:.2f} |
| Redeploy (simulated) | {r['atr_redeploy']:.2f} |

Gap closure {100 * r['gap_closure']:.0f} % by ATR, {100 * r['gap_closure_median']:.0f} % by the
median mission; {r['kernels']['motor']} motor and {r['kernels']['sensor']} sensor kernels.
The full run (100 missions) is `make kernel-results`.

![ATR curves](vehicle/fig6_atr_kernels.png)
"""


def main(folder: str) -> None:
    collect = load(folder, "collect.json")
    gap = load(folder, "gap.json")
    train = load(folder, "train_realtime.json")
    evaluation = load(folder, "eval_realtime.json")
    live_sim = load(folder, "live_sim.json")
    live_realeasy = load(folder, "live_realeasy.json")
    label = gap["label"]
    model = evaluation["model"]
    sections = []
    for split, title in (("test", "Held-out test split (joint-space moves)"),
                         ("cartesian", "Cartesian linear moves (generalisation)")):
        result = evaluation.get(split)
        if not result:
            continue
        rows = [("Simulation", result["sim"]),
                (f"Simulation + Realeasy ({model['architecture']})", result["realeasy"])]
        sections.append(section(f"{title}: {result['trajectories']} trajectories", rows)
                        + f"\n\ntorque MSE reduction per joint: "
                          f"{reduction(result['sim'], result['realeasy'])}")
    live_rows = [("Simulation", live_sim), ("Simulation + Realeasy, live node", live_realeasy)]
    sections.append(section(f"Live: residual_publisher on {live_sim['trajectories']} new "
                            f"trajectories (roslaunch)", live_rows)
                    + f"\n\ntorque MSE reduction per joint: {reduction(live_sim, live_realeasy)}")
    report = f"""# sim2real demo report ({label})

All figures compare the nominal simulator (PyBullet, pybullet_data Panda URDF, PID) with the
**{label}** (MuJoCo, identified Panda dynamics, friction, elasticity, sensor effects). They are
**not real-robot results**.

- pairs: {collect['trajectories']} {collect['kinds']}, {collect['simulated_seconds']:.0f} s simulated
  in {collect['wall_seconds']:.0f} s wall ({collect['real_time_factor']:.1f}x real time for both robots)
- data set: `dataset.npz` (splits in `dataset.json`)
- Realeasy realtime model: hidden {model['hidden_size']}, {model['num_layers']} LSTM layers,
  best epoch {train['best_epoch']} of {train['epochs_run']} ({train['wall_seconds']:.0f} s;
  {train['stopped_early'] or 'ran all epochs'}), `realtime.pt`
- {evaluation['warmup_note']}

## The gap before learning (all {gap['trajectories']} trajectories)

```
{open(os.path.join(folder, 'gap_table.txt'), encoding='utf-8').read().strip()}
```

![joint torques, simulation vs {label}](gap_torques.png)

## Realeasy (paper 000 Table II layout)

{chr(10).join(chr(10) + s for s in sections)}

![joint torques: {label} (green), simulation (blue), simulation + Realeasy (red)](realeasy_torques.png)

{compliant_section(folder)}
{trifinger_section(folder)}
{kernel_section(folder)}"""
    path = os.path.join(folder, "report.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(report)
    print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1])
