#!/usr/bin/env bash
# make demo: the main job on the embedded default. Collects real/sim pairs (PyBullet simulator vs
# the MuJoCo reality stand-in), builds the Realeasy data set, prints the per-joint gap table and
# writes reports/report.md with the torque plot. DEMO_TRAJECTORIES sets the size (default 150).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/reports"
n="${DEMO_TRAJECTORIES:-150}"
mkdir -p "$out"

echo "== collect $n trajectory pairs (simulation and reality stand-in, lock-step)"
rosrun realeasy_ros collect --trajectories "$n" --seed 0 --out "$out/pairs.bag" --json "$out/collect.json"
echo "== build the data set"
rosrun realeasy_ros dataset --bag "$out/pairs.bag" --out "$out/dataset.npz" --json "$out/dataset.json"
echo "== the gap: simulation vs reality stand-in"
rosrun realeasy_ros compare --bag "$out/pairs.bag" --json "$out/gap.json" --plot "$out/gap_torques.png" \
  | tee "$out/gap_table.txt"

python - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
collect = json.load(open(os.path.join(out, "collect.json")))
gap = json.load(open(os.path.join(out, "gap.json")))
table = open(os.path.join(out, "gap_table.txt")).read()
with open(os.path.join(out, "report.md"), "w") as f:
    f.write(f"""# sim2real demo report ({gap['label']})

All figures below compare the nominal simulator (PyBullet, pybullet_data Panda URDF, PID) with the
**{gap['label']}** (MuJoCo, identified Panda dynamics, friction, elasticity, sensor effects). They
are not real-robot results.

- pairs: {collect['trajectories']} {collect['kinds']}, {collect['simulated_seconds']:.0f} s simulated
  in {collect['wall_seconds']:.0f} s wall ({collect['real_time_factor']:.1f}x real time for both robots)
- data set: `dataset.npz` (splits in `dataset.json`)

```
{table.strip()}
```

![joint torques, simulation vs {gap['label']}](gap_torques.png)
""")
print(f"wrote {os.path.join(out, 'report.md')}")
PY
