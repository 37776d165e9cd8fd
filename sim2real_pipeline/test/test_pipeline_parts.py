"""The pipeline's parts without running the chain: the work directory and resuming, the gate,
the settings, running a tool, the identified simulator's configuration."""
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from sim2real_pipeline.errors import PipelineError
from sim2real_pipeline.evaluation import KEYS, normalised_score, ratios
from sim2real_pipeline.gate import decide_chain
from sim2real_pipeline.runner import run_pipeline
from sim2real_pipeline.settings import CONFIG_FILE, load_settings
from sim2real_pipeline.splits import task_repeats, task_split
from sim2real_pipeline.stages import Stage, check_identification
from sim2real_pipeline.tools import run_tool
from sim2real_pipeline.workdir import StageRecord, WorkDir, fingerprint


def errors(position, velocity, torque, dof=7):
    return {"position_mse": [position] * dof, "velocity_mse": [velocity] * dof,
            "torque_mse": [torque] * dof}


# ------------------------------------------------------------------------------ work directory

def test_a_record_is_kept_only_with_the_same_fingerprint_and_its_files(tmp_path):
    work = WorkDir(str(tmp_path))
    out = work.path("a.txt")
    open(out, "w").close()
    print_ = fingerprint({"n": 1}, {})
    work.save(StageRecord("a", print_, {"file": out}, {"x": 1}))
    assert work.completed("a", print_).figures == {"x": 1}
    assert work.completed("a", fingerprint({"n": 2}, {})) is None
    assert fingerprint({"n": 1}, {"up": "1"}) != print_
    os.remove(out)
    assert work.completed("a", print_) is None
    (tmp_path / "stages" / "b.json").write_text("{ not json")
    assert work.completed("b", print_) is None


def _stages(log, fail_at=None):
    def make(name):
        def run(ctx):
            log.append(name)
            if name == fail_at:
                raise ValueError(f"{name} broke")
            path = ctx.work.path(f"{name}.out")
            with open(path, "w") as f:
                f.write(name)
            return StageRecord(name, "", {"out": path}, {"n": len(log)})
        return run
    return (Stage("one", make("one"), (), lambda s: {"seed": s.seed}, "first"),
            Stage("two", make("two"), ("one",), lambda s: {}, "second"),
            Stage("three", make("three"), ("two",), lambda s: {"t": s.trajectories}, "third"))


def test_a_failed_stage_is_named_earlier_ones_are_kept_and_the_next_run_resumes(tmp_path):
    settings = load_settings(None, out=str(tmp_path / "out"))
    log = []
    with pytest.raises(PipelineError, match="stage two: ValueError: two broke") as info:
        run_pipeline(settings, str(tmp_path / "w"), _stages(log, fail_at="two"), say=lambda s: None)
    assert info.value.stage == "two" and log == ["one", "two"]
    log.clear()
    ctx = run_pipeline(settings, str(tmp_path / "w"), _stages(log), say=lambda s: None)
    assert log == ["two", "three"] and set(ctx.records) == {"one", "two", "three"}
    log.clear()
    run_pipeline(settings, str(tmp_path / "w"), _stages(log), say=lambda s: None)
    assert log == []
    # a changed setting redoes its stage and everything after it
    more = load_settings(None, out=str(tmp_path / "out"), trajectories=settings.trajectories + 1)
    run_pipeline(more, str(tmp_path / "w"), _stages(log), say=lambda s: None)
    assert log == ["three"]
    log.clear()
    reseeded = load_settings(None, out=str(tmp_path / "out"), seed=7)
    run_pipeline(reseeded, str(tmp_path / "w"), _stages(log), say=lambda s: None)
    assert log == ["one", "two", "three"]
    # a stage whose file is gone runs again, and so does every stage that reads from it
    log.clear()
    os.remove(tmp_path / "w" / "one.out")
    run_pipeline(reseeded, str(tmp_path / "w"), _stages(log), say=lambda s: None)
    assert log == ["one", "two", "three"]


# ------------------------------------------------------------------------------ gate

def test_the_gate_adopts_a_stage_only_if_it_beats_the_adopted_one_before():
    sim = errors(1.0, 1.0, 1.0)
    validation = {"simulation": sim, "identified": errors(0.5, 0.5, 0.1),
                  "identified+realeasy": errors(0.6, 0.6, 0.2)}
    adopted, decisions = decide_chain(("identified", "identified+realeasy"), validation, sim,
                                      "simulation")
    assert adopted == "identified"
    assert [d.adopted for d in decisions] == [True, False]
    assert decisions[1].previous == "identified" and "does not beat" in decisions[1].reason
    # halving the torques while doubling positions and velocities is refused
    worse = {"simulation": sim, "identified": errors(2.0, 2.0, 0.5)}
    assert decide_chain(("identified",), worse, sim, "simulation")[0] == "simulation"


def test_scores_and_ratios():
    sim = errors(1.0, 2.0, 4.0)
    assert normalised_score(sim, sim) == pytest.approx(1.0)
    assert normalised_score(errors(0.5, 1.0, 2.0), sim) == pytest.approx(0.5)
    r = ratios(errors(0.5, 1.0, 0.4), sim)
    assert set(r) == set(KEYS) and r["torque_mse"][0] == pytest.approx(10.0)


def test_task_repeats_are_split_in_order():
    splits = task_split(range(10), 0.6, 0.2)
    assert [splits[i] for i in range(10)] == ["train"] * 6 + ["validation"] * 2 + ["test"] * 2
    with pytest.raises(PipelineError, match="stage split: .*cannot be split"):
        task_split(range(2), 0.6, 0.2)


def test_the_repeats_of_a_split_are_taken_by_id_in_order():
    repeats = [SimpleNamespace(trajectory_id=i) for i in (4, 2, 3)]
    assert [r.trajectory_id for r in task_repeats(repeats, [4, 2])] == [2, 4]
    with pytest.raises(PipelineError, match="lacks the repeats 7"):
        task_repeats(repeats, [2, 7])


# ------------------------------------------------------------------------------ settings

def test_settings_from_the_file_and_the_options(tmp_path):
    s = load_settings(None, out="o", trajectories=30, seed=3)
    assert s.trajectories == 30 and s.seed == 3 and s.task_repeats > 0
    with pytest.raises(PipelineError, match="stage settings: trajectories must be at least 10"):
        load_settings(None, out="o", trajectories=3)
    with pytest.raises(PipelineError, match="reality config not found"):
        load_settings(None, out="o", reality_config=str(tmp_path / "missing.yaml"))
    broken = tmp_path / "p.yaml"
    raw = yaml.safe_load(open(CONFIG_FILE))
    del raw["kernels"]["sigma"]
    broken.write_text(yaml.safe_dump(raw))
    with pytest.raises(PipelineError, match="missing or malformed key"):
        load_settings(str(broken), out="o")
    broken.write_text("[1, 2")
    with pytest.raises(PipelineError, match="cannot read"):
        load_settings(str(broken), out="o")
    bag = tmp_path / "x.bag"
    bag.write_bytes(b"")
    with pytest.raises(PipelineError, match="go together"):
        load_settings(None, out="o", tasks_bag=str(bag))


def test_recorded_bags_may_be_split_recordings_given_by_the_recorders_name(tmp_path):
    """pipeline.launch records with `rosbag record --split -O pairs.bag`: pairs_0.bag, pairs_1.bag."""
    for name in ("pairs_0.bag", "pairs_1.bag", "tasks.bag"):
        (tmp_path / name).write_bytes(b"")
    s = load_settings(None, out="o", pairs_bag=str(tmp_path / "pairs.bag"), tasks_bag=str(tmp_path / "tasks.bag"))
    assert s.recorded
    with pytest.raises(PipelineError, match=r"stage settings: pairs bag not found: .*missing\.bag"):
        load_settings(None, out="o", pairs_bag=str(tmp_path / "missing.bag"), tasks_bag=str(tmp_path / "tasks.bag"))


# ------------------------------------------------------------------------------ tools

def test_a_failing_tool_becomes_one_line_naming_the_stage():
    for prefix in ("dataset: ", ""):     # the tools' convention (sim2real_checks.cli), a bare one
        script = ("import sys; print('working', file=sys.stderr); "
                  f"print('{prefix}error: the bag is gone', file=sys.stderr); "
                  "print('Error in atexit handler', file=sys.stderr); sys.exit(2)")
        with pytest.raises(PipelineError) as info:
            run_tool("collect", [sys.executable, "-c", script], quiet=True)
        assert info.value.stage == "collect"
        assert str(info.value).endswith("exited with 2: the bag is gone")
    run_tool("collect", [sys.executable, "-c", "print('fine')"], quiet=True)
    with pytest.raises(PipelineError, match="cannot run"):
        run_tool("collect", ["/nonexistent/tool"], quiet=True)


# ------------------------------------------------------------------------------ identified sim

def test_a_diverged_or_inconsistent_identification_stops_the_identify_stage():
    good = {"diverged": False, "consistent": True, "damping": [0.1] * 7,
            "friction": {"j1": [0.5, 8.0, 0.01]}}
    check_identification(good, "x.json")
    with pytest.raises(PipelineError, match="stage identify: the identification diverged"):
        check_identification(dict(good, diverged=True), "x.json")
    inconsistent = dict(good, consistent=False,
                        consistency={"links": [{"name": "panda_link3", "ok": False},
                                               {"name": "panda_link4", "ok": True}]})
    with pytest.raises(PipelineError, match=r"not physically consistent \(panda_link3\)"):
        check_identification(inconsistent, "x.json")
    with pytest.raises(PipelineError, match="non-finite"):
        check_identification(dict(good, damping=[float("nan")] * 7), "x.json")


def test_models_from_another_run_are_taken_not_learnt(tmp_path):
    log = []

    def make(name):
        def run(ctx):
            log.append(name)
            path = ctx.work.path(f"{name}.out")
            open(path, "w").close()
            return StageRecord(name, "", {"out": path}, {})
        return run
    stages = (Stage("collect", make("collect"), (), lambda s: {"n": s.trajectories}, "c"),
              Stage("identify", make("identify"), ("collect",), lambda s: {}, "i"),
              Stage("evaluate", make("evaluate"), ("collect", "identify"), lambda s: {}, "e"))
    first = load_settings(None, out=str(tmp_path / "a"))
    run_pipeline(first, str(tmp_path / "a"), stages, say=lambda s: None)
    assert log == ["collect", "identify", "evaluate"]
    log.clear()
    transfer = load_settings(None, out=str(tmp_path / "b"), models_from=str(tmp_path / "a"))
    ctx = run_pipeline(transfer, str(tmp_path / "b"), stages, say=lambda s: None)
    assert log == ["collect", "evaluate"]
    assert ctx.records["identify"].outputs["out"] == str(tmp_path / "a" / "identify.out")
    # new data under the taken model: everything that reads the data runs again
    log.clear()
    changed = load_settings(None, out=str(tmp_path / "b"), models_from=str(tmp_path / "a"),
                            trajectories=transfer.trajectories + 5)
    run_pipeline(changed, str(tmp_path / "b"), stages, say=lambda s: None)
    assert log == ["collect", "evaluate"]
    with pytest.raises(PipelineError, match="stage identify: .* holds no finished identify"):
        run_pipeline(load_settings(None, out="c", models_from=str(tmp_path / "b" / "stages")),
                     str(tmp_path / "c"), stages, say=lambda s: None)


# ------------------------------------------------------------------------------ data

class _Dataset:
    """The parts of panda_pairs' Dataset random_sets reads."""

    def __init__(self, ids, splits, arrays):
        self.trajectory_ids, self.split, self._arrays = np.array(ids), np.array(splits), arrays

    def trajectory(self, index, normalised=True):
        return self._arrays[index]


def test_random_sets_score_every_stage_on_the_same_robot_samples():
    from sim2real_pipeline.evaluation import errors_of, random_sets
    real = np.zeros((10, 21))
    nominal = _Dataset([4, 5], ["validation", "test"], [(np.ones((10, 21)), real),
                                                        (np.ones((8, 21)), real[:8])])
    identified = _Dataset([5, 4], ["test", "validation"], [(np.full((7, 21), 0.5), real[:7]),
                                                           (np.full((12, 21), 0.5), real)])
    sets = random_sets(nominal, identified, [4], lambda s: s * 0.2)
    assert sets.ids == (4,)
    errors = errors_of(sets)
    assert errors["simulation"]["torque_mse"] == [1.0] * 7
    np.testing.assert_allclose(errors["identified"]["position_mse"], 0.25)
    np.testing.assert_allclose(errors["identified+realeasy"]["velocity_mse"], 0.01)
    test = random_sets(nominal, identified, [5, 6], None)        # 6: in neither data set
    assert [len(a) for a in test.stages["simulation"][0]] == [7]      # the shorter of 8 and 7
    assert set(test.stages) == {"simulation", "identified"}
    with pytest.raises(PipelineError, match="none of the trajectories"):
        random_sets(nominal, identified, [7], None)


def test_the_gate_gets_half_of_every_held_out_kind_and_none_of_the_early_stopping_split():
    from sim2real_pipeline.splits import random_purposes
    ids = list(range(20))
    kinds = ["single"] * 8 + ["multi"] * 8 + ["cartesian"] * 4
    splits = (["train"] * 4 + ["validation"] * 2 + ["test"] * 2) * 2 + ["cartesian"] * 4
    purposes = random_purposes(ids, kinds, splits, seed=3)
    assert purposes["train"] == [0, 1, 2, 3, 8, 9, 10, 11]
    assert purposes["validation"] == [4, 5, 12, 13]
    gate, test = set(purposes["gate"]), set(purposes["test"])
    assert not gate & test and gate | test == {6, 7, 14, 15, 16, 17, 18, 19}
    kind = dict(zip(ids, kinds))
    for name in ("single", "multi", "cartesian"):       # every kind of the test is in the gate
        assert sum(kind[i] == name for i in gate) == sum(kind[i] == name for i in test)
    assert random_purposes(ids, kinds, splits, seed=3) == purposes          # seeded
