"""The repeated task set (work_cycle.py): settings errors, repeats that chain at home at rest,
small bounded seeded variations, the exact motion limits, and `collect --task-repeats` into a
pair bag that panda_pairs' readers take (kernel_manager_ros's reader: its test_kernel_panda.py)."""
import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from panda_pairs.collection import CollectionRequest, run_collection
from panda_pairs.dataset import build_dataset
from panda_sim2real import (ConfigError, DEFAULT_WORK_CYCLE_FILE, JointLimits, TASK, VARIATION_BOUND,
                            WorkCycleGenerator, WorkCycleSettings, check_motion_limits, motion_extremes)
from panda_pairs.errors import BagError
from panda_pairs.pair_bag import read_pairs

LIMITS = JointLimits.from_yaml()
COLLECT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts",
                       "collect")
with open(DEFAULT_WORK_CYCLE_FILE, encoding="utf-8") as _f:
    DEFAULT = yaml.safe_load(_f)
# Short and fast for the collection test: the default cycle at full speed with short rests.
FAST = {**DEFAULT, "velocity_scaling": [0.9, 1.0], "rest_before": 0.1, "rest_after": 0.2,
        "dwell": {"pick": 0.1, "place": 0.1}}


def write(tmp_path, tree, name="cycle.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(tree))
    return str(path)


def chain(generator, count, start=LIMITS.home):
    repeats, q = [], np.asarray(start, dtype=float)
    for _ in range(count):
        repeats.append(generator.next(q, [TASK]))
        q = repeats[-1].trajectory.positions[-1]
    return repeats


@pytest.fixture(scope="module")
def settings():
    return WorkCycleSettings.from_yaml(None, LIMITS)


def test_default_cycle_starts_at_the_robots_home(settings):
    np.testing.assert_allclose(settings.home, LIMITS.home)
    assert settings.cycle == ("above_pick", "pick", "above_pick", "above_place", "place",
                              "above_place")


def _set(tree, key, value):
    tree = json.loads(json.dumps(tree))     # deep copy
    parent = tree
    *path, last = key.split(".")
    for part in path:
        parent = parent[part]
    if value is KeyError:
        del parent[last]
    else:
        parent[last] = value
    return tree


@pytest.mark.parametrize("key, value, match", [
    ("cycle", KeyError, r"missing key\(s\) \['cycle'\]"),
    ("speed", 2.0, r"unknown key\(s\) \['speed'\]"),
    ("home", [0.0] * 6, r"'home' needs 7 finite numbers"),
    ("variation_std", [0.01] * 8, r"'variation_std' needs 7 finite numbers"),
    ("poses.pick", [float("nan")] * 7, r"'poses.pick' needs 7 finite numbers"),
    ("poses.pick", "up", r"'poses' is malformed"),
    ("poses.pick", [-0.161, 1.75, -0.284, -2.171, 0.276, 2.632, 0.131],
     r"pose 'pick': panda_joint2 = 1.7500 rad .* outside \[-1.6628, 1.6628\]"),
    ("home", [0.0, -0.785, 0.0, -0.1, 0.0, 1.571, 0.785],
     r"home: panda_joint4 = -0.1000 rad is outside \[-2.9718, -0.1698\]"),
    ("variation_std", [0.3] * 7,
     r"pose 'above_pick': panda_joint4 = -2.1550 rad \(\+- 0.9000 variation\)"),
    ("variation_std", [-0.01] * 7, r"'variation_std' must be >= 0"),
    ("cycle", ["pick", "drop"], r"'cycle' names unknown pose\(s\) \['drop'\]"),
    ("cycle", [], r"'cycle' must name at least one pose"),
    ("dwell.pick", -1.0, r"'dwell.pick' must be a number >= 0"),
    ("velocity_scaling", [0.5, 1.5], r"'velocity_scaling' must be \[min, max\]"),
    ("rest_after", -0.5, r"'rest_after' must be a number >= 0"),
])
def test_settings_errors_name_the_entry(tmp_path, key, value, match):
    path = write(tmp_path, _set(DEFAULT, key, value))
    with pytest.raises(ConfigError, match=match) as info:
        WorkCycleSettings.from_yaml(path, LIMITS)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"work cycle {path}: ")


def test_settings_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="work cycle not found"):
        WorkCycleSettings.from_yaml(str(tmp_path / "missing.yaml"), LIMITS)
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        WorkCycleSettings.from_yaml(str(path), LIMITS)


def test_repeats_start_and_end_at_home_at_rest(settings):
    repeats = chain(WorkCycleGenerator(LIMITS, settings, seed=2), 3)
    before = int(round(settings.rest_before * settings.knot_rate))
    after = int(round(settings.rest_after * settings.knot_rate))
    for k, repeat in enumerate(repeats):
        tr = repeat.trajectory
        assert repeat.kind == TASK and repeat.repeat == k and tr.start is None
        np.testing.assert_allclose(np.diff(tr.times), 1.0 / settings.knot_rate, atol=1e-9)
        for rest in (slice(0, before + 1), slice(len(tr.times) - after - 1, None)):
            assert np.all(tr.positions[rest] == settings.home)      # exactly: repeats chain
            assert np.all(tr.velocities[rest] == 0.0)
        # the poses of the cycle are knots at rest, visited in order
        visits = [int(np.flatnonzero(np.all(tr.positions == repeat.poses[name], axis=1))[0])
                  for name in ("above_pick", "pick", "above_place", "place")]
        assert visits == sorted(visits)
        for index in visits:
            assert np.all(tr.velocities[index] == 0.0)


def test_a_repeat_from_elsewhere_first_moves_home(settings):
    start = LIMITS.home + np.array([0.3, 0.1, -0.2, 0.2, 0.1, -0.1, 0.2])
    generator = WorkCycleGenerator(LIMITS, settings, seed=0)
    first, second = chain(generator, 2, start)
    tr = first.trajectory
    assert np.array_equal(tr.positions[0], start)
    assert np.array_equal(tr.positions[-1], settings.home)
    at_home = np.flatnonzero(np.all(tr.positions == settings.home, axis=1))
    assert at_home[0] < len(tr.times) // 3          # home is reached before the cycle
    # the approach costs time the chained repeat does not spend
    assert second.trajectory.duration < first.trajectory.duration


def test_repeats_differ_by_small_bounded_amounts(settings):
    repeats = chain(WorkCycleGenerator(LIMITS, settings, seed=4), 20)
    bound = VARIATION_BOUND * settings.variation_std + 1e-12
    for repeat in repeats:
        for name, q in repeat.poses.items():
            assert np.all(np.abs(q - settings.poses[name]) <= bound)
    a, b = repeats[0], repeats[1]
    for name in settings.poses:
        difference = np.abs(a.poses[name] - b.poses[name])
        assert np.all(difference > 0.0) and np.all(difference <= 2.0 * bound)
    # the spread of the offsets is the configured std (20 repeats x 4 poses per joint)
    offsets = np.array([r.poses[n] - settings.poses[n] for r in repeats for n in settings.poses])
    np.testing.assert_allclose(offsets.std(axis=0) / settings.variation_std, 1.0, atol=0.35)
    # small timing variations: c in its range, durations within a few tenths of a second
    c = np.array([r.velocity_scaling for r in repeats])
    assert np.all((c >= settings.velocity_scaling[0]) & (c <= settings.velocity_scaling[1]))
    durations = np.array([r.trajectory.duration for r in repeats])
    assert 0.0 < durations.max() - durations.min() < 0.3 * durations.mean()


@pytest.mark.parametrize("scaling", [None, (1.0, 1.0)])
def test_every_repeat_passes_the_motion_limits(settings, scaling):
    if scaling is not None:
        settings = dataclasses.replace(settings, velocity_scaling=scaling)
    for repeat in chain(WorkCycleGenerator(LIMITS, settings, seed=7), 10):
        tr = repeat.trajectory
        check_motion_limits(tr, LIMITS)
        c = repeat.velocity_scaling
        extremes = motion_extremes(tr)
        assert np.all(extremes["velocity"][0] <= c * LIMITS.velocity * 1.001)
        assert np.all(extremes["position_min"][0] >= LIMITS.position_min + settings.margin)
        assert np.all(extremes["position_max"][0] <= LIMITS.position_max - settings.margin)


def test_same_seed_same_repeats(settings):
    first = chain(WorkCycleGenerator(LIMITS, settings, seed=11), 3)
    again = chain(WorkCycleGenerator(LIMITS, settings, seed=11), 3)
    other = chain(WorkCycleGenerator(LIMITS, settings, seed=12), 3)
    for a, b, c in zip(first, again, other):
        assert a.velocity_scaling == b.velocity_scaling
        np.testing.assert_array_equal(a.trajectory.times, b.trajectory.times)
        np.testing.assert_array_equal(a.trajectory.positions, b.trajectory.positions)
        np.testing.assert_array_equal(a.trajectory.velocities, b.trajectory.velocities)
        assert not np.array_equal(a.poses["pick"], c.poses["pick"])


def test_task_is_the_only_kind(settings, tmp_path):
    generator = WorkCycleGenerator(LIMITS, settings, seed=0)
    with pytest.raises(ConfigError, match="only kind 'task'"):
        generator.next(LIMITS.home, ["multi"])
    with pytest.raises(ConfigError, match="cannot be mixed"):
        run_collection(CollectionRequest(out=str(tmp_path / "x.bag"), trajectories=1,
                                         kinds=("task", "single"), show_progress=False))
    assert not (tmp_path / "x.bag").exists()


def run_collect(*args):
    return subprocess.run([sys.executable, COLLECT, *args], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def task_bag(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tasks")
    cycle = write(folder, FAST)
    bag = str(folder / "tasks.bag")
    done = run_collect("--task-repeats", "3", "--seed", "1", "--work-cycle", cycle, "--out", bag,
                       "--quiet", "--json", str(folder / "figures.json"))
    assert done.returncode == 0, done.stderr
    figures = json.loads((folder / "figures.json").read_text())
    assert figures["kinds"] == {"task": 3} and figures["work_cycle"] == cycle
    return bag


def test_collect_task_repeats_writes_task_pairs(task_bag):
    recording = read_pairs(task_bag, LIMITS.joint_names)
    assert [(p.trajectory_id, p.kind) for p in recording.pairs] == [(0, TASK), (1, TASK), (2, TASK)]
    assert recording.label == "reality stand-in"
    for previous, pair in zip(recording.pairs, recording.pairs[1:]):
        assert 0.0 < pair.start - previous.end < 0.1            # chained, the lead time apart
    for pair in recording.pairs:
        for stream in (pair.sim, pair.real):
            assert len(stream) > 100 and np.all(np.isfinite(stream.q))
            # near rest at home at both ends (the simulator's PID sags a few hundredths of a
            # rad and is still settling after the short rests of FAST)
            for q, qd in ((stream.q[0], stream.qd[0]), (stream.q[-1], stream.qd[-1])):
                np.testing.assert_allclose(q, LIMITS.home, atol=0.05)
                assert np.abs(qd).max() < (0.01 if stream is pair.real else 0.1)
            assert np.abs(stream.q - LIMITS.home).max() > 0.5   # it did the cycle


def test_the_data_set_leaves_task_pairs_out(task_bag):
    recording = read_pairs(task_bag, LIMITS.joint_names)
    with pytest.raises(BagError, match=r"no pair of the data-set kinds .* \{'task': 3\}"):
        build_dataset(recording, LIMITS)
    mixed = dataclasses.replace(recording, pairs=[dataclasses.replace(recording.pairs[0],
                                                                      kind="multi")]
                                + recording.pairs[1:])
    dataset = build_dataset(mixed, LIMITS)
    assert list(dataset.kinds) == ["multi"] and dataset.skipped_pairs == 0


@pytest.mark.parametrize("args, message", [
    (["--task-repeats", "0"], "error: --task-repeats must be at least 1"),
    (["--task-repeats", "2", "--kinds", "multi"], "error: --task-repeats records kind 'task' only"),
    (["--trajectories", "2", "--kinds", "task,multi"], "cannot be mixed"),
    (["--task-repeats", "2", "--work-cycle", "/nonexistent.yaml"], "error: work cycle not found"),
])
def test_collect_task_option_errors(tmp_path, args, message):
    done = run_collect(*args, "--out", str(tmp_path / "x.bag"), "--quiet")
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_collect_count_options_are_exclusive(tmp_path):
    done = run_collect("--trajectories", "2", "--task-repeats", "2", "--out",
                       str(tmp_path / "x.bag"))
    assert done.returncode == 2 and "not allowed with argument" in done.stderr


def test_a_loaded_mapping_reads_as_its_file(tmp_path):
    """The pair runner's ~work_cycle is the mapping the launch file loaded: same settings as the
    file, same errors, naming the parameter."""
    from_mapping = WorkCycleSettings.from_dict(_set(DEFAULT, "margin", 0.1), "parameter /runner/work_cycle",
                                               LIMITS)
    from_file = WorkCycleSettings.from_yaml(DEFAULT_WORK_CYCLE_FILE, LIMITS)
    assert from_mapping.cycle == from_file.cycle
    np.testing.assert_array_equal(from_mapping.home, from_file.home)
    with pytest.raises(ConfigError, match=r"^parameter /runner/work_cycle: 'cycle' names unknown"):
        WorkCycleSettings.from_dict(_set(DEFAULT, "cycle", ["drop"]), "parameter /runner/work_cycle",
                                    LIMITS)
