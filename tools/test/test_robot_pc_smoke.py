"""tools/robot_pc_smoke.py --table --results: make docker-test's two runs side by side with their
targets and provenance, the file behind docker/RESULTS.md."""
import json
import os
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "robot_pc_smoke.py")
FIGURES = {"joint_states_hz": 999.9, "missing_states": 3, "stamp_gaps_over_2ms": 2, "max_stamp_gap_ms": 3.0,
           "success_rate_mean": 0.995, "corrected": 29990, "publisher_latency_median_us": 103.0,
           "publisher_latency_p99_us": 314.0, "joint_states": 29997, "aborts": 0}


def test_the_runs_side_by_side_with_targets_and_provenance(tmp_path):
    paths = []
    for where in ("container", "host"):
        paths.append(tmp_path / f"{where}.json")
        paths[-1].write_text(json.dumps({**FIGURES, "where": where}))
    out = tmp_path / "robot_pc.json"
    done = subprocess.run([sys.executable, TOOL, "--table", *map(str, paths), "--seconds", "30",
                           "--results", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "container" in done.stdout and "host" in done.stdout and ">= 0.999" in done.stdout
    result = json.loads(out.read_text())
    assert set(result["runs"]) == {"container", "host"} and result["seconds"] == 30
    assert result["runs"]["host"]["success_rate_mean"] == 0.995
    assert result["targets"]["publisher_latency_p99_us"] == "<= 1000" and result["targets"]["aborts"] == "0"
    assert "bridge errors (reflex aborts" in done.stdout
    assert "not a real robot" in result["label"] and result["commit"] and result["command"] == "make docker-test"
