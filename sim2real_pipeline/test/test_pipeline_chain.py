"""The whole chain on a small configuration (test/small_pipeline.yaml: 24 pairs, 8 task repeats,
short identification and training) through the tool a user runs, against the reality stand-in;
then resuming, and bad input that must stop the chain with one line naming the stage."""
import json
import os
import subprocess

import pytest
import rosbag
from std_msgs.msg import String

HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = os.path.join(HERE, "small_pipeline.yaml")
STAGES = ("simulation", "identified")
KEYS = ("position_mse", "velocity_mse", "torque_mse")


def pipeline(out, *args, timeout=900):
    return subprocess.run(["rosrun", "sim2real_pipeline", "pipeline", "--config", SMALL, "--out",
                           str(out), "--quiet", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    out = tmp_path_factory.mktemp("chain") / "out"
    proc = pipeline(out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out, proc


def test_every_stage_leaves_its_files(chain):
    out, proc = chain
    for name in ("pipeline.json", "report.md", "stages.png", "task_stages.png"):
        assert (out / name).stat().st_size > 0, name
    work = out / "work"
    for name in ("pairs.bag", "tasks.bag", "dataset_simulation.npz",
                 "identified.urdf", "identified_sim.yaml", "pairs_identified.bag",
                 "tasks_identified.bag", "dataset_identified.npz", "realeasy.pt", "kernels.yaml",
                 "evaluation.json"):
        assert (work / name).stat().st_size > 0, name
    for stage in ("collect", "split", "identify", "resimulate", "realeasy", "kernels",
                  "evaluate", "report"):
        assert (work / "stages" / f"{stage}.json").exists(), stage
    assert "adopted" in proc.stdout


def test_the_json_has_every_stage_with_seven_joints(chain):
    out, _ = chain
    result = json.loads((out / "pipeline.json").read_text())
    assert result["label"] == "reality stand-in"
    assert result["commit"] and result["command"].startswith("rosrun sim2real_pipeline pipeline")
    assert "identified+realeasy" in result["stages"]
    assert any(n.endswith("+kernels") for n in result["task_stages"])
    for group in ("stages", "task_stages"):
        assert set(STAGES) <= set(result[group])
        for stage, errors in result[group].items():
            for key in KEYS:
                assert len(errors[key]) == 7 and all(v >= 0.0 for v in errors[key]), (stage, key)
    decisions = result["gate"]["random"] + result["gate"]["tasks"]
    assert [d["stage"] for d in decisions][:2] == ["identified", "identified+realeasy"]
    assert all(isinstance(d["adopted"], bool) and d["reason"] for d in decisions)
    assert "reality stand-in" in (out / "report.md").read_text()


def test_the_identified_simulator_beats_the_nominal_one_on_torque(chain):
    out, _ = chain
    stages = json.loads((out / "pipeline.json").read_text())["stages"]
    assert sum(stages["identified"]["torque_mse"]) < 0.5 * sum(stages["simulation"]["torque_mse"])


def test_the_calibration_reuses_the_chains_identification_and_reports_every_joint(chain):
    out, _ = chain
    proc = subprocess.run(["rosrun", "sim2real_pipeline", "standin-calibration", "--config", SMALL,
                           "--task-repeats", "8", "--out", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert proc.stdout.count("(kept from the last run)") == 4
    result = json.loads((out / "calibration.json").read_text())
    assert result["label"] == "reality stand-in" and result["commit"]
    assert proc.returncode == (0 if result["all_within"] else 1)
    for key in ("identified_torque_mse", "published_torque_mse", "ratio_to_published",
                "noise_floor", "residual_correlation_time"):
        assert len(result[key]) == 7 and all(v >= 0.0 for v in result[key].values()), key
    assert len(result["suggested_scale"]) == 7
    assert (out / "calibration.png").stat().st_size > 10_000


def test_a_second_run_keeps_every_stage(chain):
    out, _ = chain
    proc = pipeline(out, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("(kept from the last run)") == 8


def test_a_reality_config_that_fails_validation_stops_at_collect(tmp_path):
    bad = tmp_path / "reality.yaml"
    bad.write_text("label: broken\nengine: mujoco\nphysics_rate: -1\n")
    proc = pipeline(tmp_path / "out", "--reality-config", str(bad), timeout=120)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("pipeline: error: stage collect: ") and "earlier stages are kept" in line
    assert not os.path.exists(tmp_path / "out" / "work" / "stages" / "collect.json")


def test_a_bag_without_the_robot_stream_stops_at_the_first_stage_that_reads_it(tmp_path):
    bag = tmp_path / "sim_only.bag"
    with rosbag.Bag(str(bag), "w") as b:
        b.write("/real/label", String(data="real robot"))
    proc = pipeline(tmp_path / "out", "--pairs-bag", str(bag), "--tasks-bag", str(bag),
                    timeout=120)
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("pipeline: error: stage split: ") and "/real/joint_states" in line
    assert not any("Traceback" in l for l in proc.stderr.splitlines())
    # the collect stage (the recorded bags) is kept: the next run resumes at split
    assert (tmp_path / "out" / "work" / "stages" / "collect.json").exists()
