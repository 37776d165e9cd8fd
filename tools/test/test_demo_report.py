"""tools/demo_report.py: the demo report opens with a verdict per method, then the plots (issue 37).

The inputs are the committed results of the same tools make demo runs (the pipeline, Fig. 8, the
ILC, the vehicle experiment, TriFinger evaluations) and two live comparisons written here."""
import json
import math
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import demo_report  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TRIFINGER = ROOT / "trifinger_controllers" / "results"


def _live(torque: float) -> dict:
    return {"label": "reality stand-in over FCI", "trajectories": 5, "sim_topic": "/sim/joint_states",
            "torque_mse": [torque] * 7, "position_mse": [1e-4] * 7, "velocity_mse": [1e-3] * 7}


@pytest.fixture()
def reports(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "sim2real_pipeline" / "results" / "default", tmp_path / "pipeline")
    for name in ("fig8.json", "ilc.json", "fig8.png"):
        shutil.copy(ROOT / "compliant_actuator_gazebo" / "results" / name, tmp_path / name)
    (tmp_path / "fig8_table.txt").write_text("table of Fig. 8\n")
    (tmp_path / "ilc_table.txt").write_text("table of the ILC\n")
    shutil.copy(ROOT / "kernel_manager_ros" / "results" / "vehicle_experiment.json", tmp_path)
    shutil.copy(TRIFINGER / "unseen_cpc_l3_seed7.json", tmp_path / "trifinger_cpc_tg_l3.json")
    shutil.copy(TRIFINGER / "unseen_mp_l3_seed7.json", tmp_path / "trifinger_mp_pg_l3.json")
    (tmp_path / "live").mkdir()
    for suffix in ("", "_task"):
        (tmp_path / "live" / f"nominal{suffix}.json").write_text(json.dumps(_live(4.0)))
        (tmp_path / "live" / f"chain{suffix}.json").write_text(json.dumps(_live(2.0)))
        (tmp_path / "live" / f"chain{suffix}_realeasy.json").write_text(json.dumps(_live(0.5)))
    return tmp_path


def test_the_report_leads_with_a_verdict_per_method_and_the_plots(reports: Path) -> None:
    demo_report.main(str(reports))
    text = (reports / "report.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["## Verdict", "## Plots"]
    verdict = text.split("## Verdict")[1].split("## Plots")[0]
    assert "not real-robot results" in text.split("## Verdict")[0]
    rows = [line for line in verdict.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [r.split(" | ")[0][2:] for r in rows] == [
        "Sim-to-real chain (offline)", "Chain live over FCI", "Compliant actuators",
        "TriFinger level 3", "State-space kernels (vehicle)"]
    assert all(len(r.split(" | ")[1].split()) <= 25 for r in rows)   # no cell over 25 words
    assert "torque MSE 8.0x lower than the nominal simulator on 5 new trajectories" in verdict
    pipe = json.loads((reports / "pipeline" / "pipeline.json").read_text())
    assert f"gate adopted **{pipe['adopted']}**" in verdict
    vehicle = json.loads((reports / "vehicle_experiment.json").read_text())
    assert f"close {100 * vehicle['gap_closure']:.0f} %" in verdict
    mp = json.loads((reports / "trifinger_mp_pg_l3.json").read_text())
    drops = sum(t["drop"] for t in mp["trials"])
    error = sum(t["position_error_cm"] for t in mp["trials"]) / len(mp["trials"])
    assert f"MP-PG {error:.2f} cm, {drops}/20 drops" in verdict
    plots = text.split("## Plots")[1].split("\n## ")[0]
    assert "](pipeline/stages.png)" in plots and "](fig8.png)" in plots
    assert "](live/nominal.png)" not in plots     # no plot file, no broken link


def test_the_verdict_ratio_is_the_geometric_mean_over_the_joints() -> None:
    assert demo_report.times_lower({"torque_mse": [4.0, 1.0]}, {"torque_mse": [1.0, 4.0]}) == pytest.approx(1.0)
    assert demo_report.times_lower({"torque_mse": [8.0, 2.0]}, {"torque_mse": [1.0, 1.0]}) == pytest.approx(4.0)
    assert demo_report.geomean([4.0, 0.0, float("inf")]) == pytest.approx(4.0)
    assert math.isnan(demo_report.geomean([]))
