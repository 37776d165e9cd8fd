"""Pair bag -> aligned, normalised, split data set and gap report, on a synthetic rosbag
(paper 000 §IV-B, §V, Table II); the ``dataset`` and ``compare`` tools as subprocesses."""
import json
import os
import subprocess
import sys

import genpy
import numpy as np
import pytest
import rosbag
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from panda_pairs.alignment import align_all
from panda_pairs.dataset import Dataset, SPLITS, assign_splits, build_dataset, split_counts, split_of
from panda_sim2real import ConfigError, JointLimits
from panda_pairs.errors import BagError
from panda_pairs.gap_report import compare_recording, format_table, gap_statistics, plot_torques
from panda_sim2real.msg import PairEvent
from panda_pairs.pair_bag import read_pairs

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")
RATE = 100.0
SHIFT = 0.037                      # the stand-in lags the simulation by 37 ms
TORQUE_OFFSET = np.array([0.5, 0.4, 0.3, 0.3, 0.2, 0.1, 0.1])   # N m, stand-in minus sim
REST_BEFORE, MOVE, REST_AFTER, GAP = 0.5, 1.0, 1.0, 0.2
DURATION = REST_BEFORE + MOVE + REST_AFTER
N_TRAJECTORIES = 12
CARTESIAN_IDS = (3, 8)
LABEL = "synthetic stand-in"


def _kind(i):
    return "cartesian" if i in CARTESIAN_IDS else ("single" if i % 2 else "multi")


def _moves(home, rng):
    """Per trajectory: planned start s and the joint displacement of its move (to a random
    target within 0.4 rad of home, so that everything stays inside the joint limits)."""
    moves, current, dof = [], np.array(home, dtype=float), len(home)
    for i in range(N_TRAJECTORIES):
        kind = _kind(i)
        joints = ([i % dof] if kind == "single" else
                  rng.choice(dof, 3, replace=False) if kind == "multi" else np.arange(dof))
        target = current.copy()
        target[joints] = home[joints] + rng.uniform(-0.4, 0.4, len(joints))
        target[joints] += np.where(np.abs(target[joints] - current[joints]) < 0.1, 0.2, 0.0)
        moves.append((1.0 + i * (DURATION + GAP), target - current))
        current = target
    return moves


def _state(t, home, moves, torque_offset):
    """q, qd, tau (len(t), dof) of a robot executing ``moves`` (quintic rest-to-rest)."""
    q = np.tile(home, (len(t), 1))
    qd = np.zeros_like(q)
    for start, d in moves:
        s = np.clip((t - start - REST_BEFORE) / MOVE, 0.0, 1.0)
        q += (10 * s**3 - 15 * s**4 + 6 * s**5)[:, None] * d
        qd += ((30 * s**2 - 60 * s**3 + 30 * s**4) / MOVE)[:, None] * d
    tau = 10.0 * np.sin(q) + 2.0 * qd + torque_offset
    return q, qd, tau


def _joint_state(stamp, names, q, qd, tau, order=None):
    order = np.arange(len(names)) if order is None else order
    msg = JointState()
    msg.header.stamp = genpy.Time.from_sec(stamp)
    msg.name = [names[j] for j in order]
    msg.position, msg.velocity, msg.effort = q[order].tolist(), qd[order].tolist(), tau[order].tolist()
    return msg


def _event(tid, kind, event, stamp):
    msg = PairEvent()
    msg.header.stamp = genpy.Time.from_sec(stamp)
    msg.trajectory_id, msg.kind, msg.event, msg.duration = tid, kind, event, DURATION
    return msg


def write_pair_bag(path, limits, seed=0):
    """A small pair bag as the recorder writes it: both robots at 100 Hz, the stand-in shifted
    by SHIFT with noise and a torque offset, joint names of the stand-in in another order, two
    malformed messages per robot, 12 START/END pairs (2 cartesian) and one START without END."""
    rng = np.random.default_rng(seed)
    names, dof = list(limits.joint_names), limits.dof
    moves = _moves(limits.home, rng)
    t = np.arange(0.0, moves[-1][0] + DURATION + 0.5, 1.0 / RATE)
    sim = _state(t, limits.home, moves, np.zeros(dof))
    real = _state(t - SHIFT, limits.home, moves, TORQUE_OFFSET)
    real = (real[0] + rng.normal(0, 1e-4, real[0].shape), real[1] + rng.normal(0, 1e-4, real[1].shape),
            real[2] + rng.normal(0, 1e-3, real[2].shape))
    shuffled = rng.permutation(dof)
    with rosbag.Bag(path, "w") as bag:
        bag.write("/real/label", String(data=LABEL), genpy.Time.from_sec(0.0))
        for k, stamp in enumerate(t):
            when = genpy.Time.from_sec(stamp)
            bag.write("/sim/joint_states", _joint_state(stamp, names, *(x[k] for x in sim)), when)
            bag.write("/real/joint_states",
                      _joint_state(stamp, names, *(x[k] for x in real), order=shuffled), when)
        for ns in ("/sim", "/real"):
            bad = _joint_state(0.005, names, *(x[0] for x in sim))
            bad.name = bad.name[:-1]                                 # a joint is missing
            bag.write(f"{ns}/joint_states", bad, genpy.Time.from_sec(0.005))
            bad = _joint_state(0.015, names, *(x[1] for x in sim))
            bad.effort = [float("nan")] * dof                        # NaN
            bag.write(f"{ns}/joint_states", bad, genpy.Time.from_sec(0.015))
        for i, (start, _) in enumerate(moves):
            bag.write("/pairs/event", _event(i, _kind(i), PairEvent.START, start),
                      genpy.Time.from_sec(start))
            bag.write("/pairs/event", _event(i, _kind(i), PairEvent.END, start + DURATION),
                      genpy.Time.from_sec(start + DURATION))
        bag.write("/pairs/event", _event(99, "multi", PairEvent.START, t[-1]),
                  genpy.Time.from_sec(t[-1]))
    return path


@pytest.fixture(scope="module")
def limits():
    return JointLimits.from_yaml()


@pytest.fixture(scope="module")
def bag_path(tmp_path_factory, limits):
    return write_pair_bag(str(tmp_path_factory.mktemp("bag") / "pairs.bag"), limits)


@pytest.fixture(scope="module")
def recording(bag_path, limits):
    return read_pairs(bag_path, limits.joint_names)


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, bag_path):
    folder = tmp_path_factory.mktemp("bad")
    data = open(bag_path, "rb").read()
    truncated = folder / "truncated.bag"
    truncated.write_bytes(data[:len(data) // 2])
    noise = folder / "noise.bag"
    noise.write_bytes(np.random.default_rng(3).bytes(20000))
    return {"truncated": str(truncated), "random": str(noise), "missing": str(folder / "none.bag")}


# --- reading ---------------------------------------------------------------------------------

def test_read_pairs(recording, limits):
    assert len(recording.pairs) == N_TRAJECTORIES
    assert recording.kinds() == {"multi": 5, "single": 5, "cartesian": 2}
    assert recording.label == LABEL
    assert recording.skipped_messages == 4
    assert recording.unpaired_events == 1
    for pair in recording.pairs:
        for stream in (pair.sim, pair.real):
            assert stream.q.shape == stream.qd.shape == stream.tau.shape == (len(stream), 7)
            assert pair.start <= stream.t[0] and stream.t[-1] <= pair.end
            assert len(stream) >= int(DURATION * RATE) - 1
    # the stand-in's joints were published in another order: reordered, it rests at home
    first = recording.pairs[0]
    np.testing.assert_allclose(first.real.q[0], limits.home, atol=1e-3)
    np.testing.assert_allclose(first.real.tau[0] - first.sim.tau[0], TORQUE_OFFSET, atol=1e-2)


def test_read_pairs_errors(tmp_path, bad_files, limits):
    names = limits.joint_names
    with pytest.raises(BagError, match="not found"):
        read_pairs(bad_files["missing"], names)
    with pytest.raises(BagError, match="truncated.*rosbag reindex"):
        read_pairs(bad_files["truncated"], names)
    with pytest.raises(BagError, match="not a bag or corrupt"):
        read_pairs(bad_files["random"], names)
    lacking = str(tmp_path / "lacking.bag")
    with rosbag.Bag(lacking, "w") as bag:
        bag.write("/sim/joint_states", JointState(), genpy.Time.from_sec(1.0))
    with pytest.raises(BagError, match="lacks the topic.*/real/joint_states"):
        read_pairs(lacking, names)
    unpaired = str(tmp_path / "unpaired.bag")
    with rosbag.Bag(unpaired, "w") as bag:
        for topic in ("/sim/joint_states", "/real/joint_states"):
            bag.write(topic, JointState(), genpy.Time.from_sec(1.0))
        bag.write("/pairs/event", _event(0, "multi", PairEvent.START, 1.0), genpy.Time.from_sec(1.0))
    with pytest.raises(BagError, match="no complete START/END"):
        read_pairs(unpaired, names)


# --- data set --------------------------------------------------------------------------------

def test_build_dataset_splits(recording, limits):
    ds = build_dataset(recording, limits, seed=0)
    assert len(ds) == N_TRAJECTORIES and ds.skipped_pairs == 0
    train, val, test = split_counts(10)
    assert ds.counts() == {"train": train, "validation": val, "test": test, "cartesian": 2}
    assert (train, val, test) == (7, 2, 1)
    assert sorted(ds.trajectory_ids[ds.split == "cartesian"].tolist()) == list(CARTESIAN_IDS)
    assert np.all(ds.kinds[ds.split != "cartesian"] != "cartesian")
    per_split = [set(ds.trajectory_ids[ds.split == s].tolist()) for s in SPLITS]
    assert sum(len(s) for s in per_split) == len(set().union(*per_split)) == N_TRAJECTORIES
    assert ds.sim.dtype == np.float32 and ds.sim.shape == ds.real.shape
    assert ds.sim.shape[0] == ds.offsets[-1]
    assert -0.01 < ds.sim.min() and ds.sim.max() < 1.01
    np.testing.assert_allclose(ds.shifts, SHIFT, atol=1.0 / RATE)
    assert ds.label == LABEL and ds.skipped_messages == 4
    again = build_dataset(recording, limits, seed=0)
    np.testing.assert_array_equal(again.split, ds.split)


def test_a_data_set_takes_another_ones_split(recording, limits):
    reference = build_dataset(recording, limits, seed=0)
    given = split_of(reference)
    other = build_dataset(recording, limits, seed=5, splits=given)     # the seed no longer matters
    assert split_of(other) == given
    del given[int(reference.trajectory_ids[0])]
    fewer = build_dataset(recording, limits, splits=given)
    assert len(fewer) == len(reference) - 1 and fewer.skipped_pairs == 1
    with pytest.raises(ConfigError, match="unknown split"):
        build_dataset(recording, limits, splits={t: "nonsense" for t in given})


def test_split_counts_for_few_trajectories():
    assert split_counts(0) == (0, 0, 0)
    assert split_counts(2) == (2, 0, 0)
    assert split_counts(3) == (1, 1, 1)
    assert split_counts(100) == (80, 15, 5)


def test_split_fractions_are_the_callers_and_checked():
    kinds = ["single"] * 50 + ["multi"] * 50 + ["cartesian"] * 10
    split = assign_splits(kinds, seed=1, fractions=(0.7, 0.15, 0.15))
    counts = {name: int(np.sum(split == name)) for name in SPLITS}
    assert counts == {"train": 70, "validation": 15, "test": 15, "cartesian": 10}
    for bad in ((0.7, 0.3, 0.0), (0.5, 0.5), (0.6, 0.2, 0.3), (float("nan"), 0.5, 0.5)):
        with pytest.raises(ConfigError, match="fractions"):
            assign_splits(kinds, fractions=bad)


def test_dataset_save_load_round_trip(recording, limits, tmp_path):
    ds = build_dataset(recording, limits, seed=4)
    path = str(tmp_path / "ds.npz")
    ds.save(path)
    with np.load(path, allow_pickle=False) as npz:       # no pickled objects inside
        assert {"sim", "real", "offsets", "trajectory_ids", "kinds", "split", "joint_names",
                "rate", "label", "scaler_lower", "scaler_upper"} <= set(npz.files)
    back = Dataset.load(path)
    for name in ("sim", "real", "offsets", "trajectory_ids", "kinds", "split"):
        np.testing.assert_array_equal(getattr(back, name), getattr(ds, name))
    assert back.joint_names == ds.joint_names and back.rate == ds.rate and back.label == LABEL
    assert back.counts() == ds.counts() and back.skipped_messages == 4
    physical = back.trajectories("test", normalised=False)
    assert len(physical) == ds.counts()["test"]
    sim, real = physical[0]
    np.testing.assert_allclose(back.scaler.transform(sim), ds.trajectories("test")[0][0], atol=1e-6)
    assert len(back.trajectories(["train", "validation"])) == sum(
        ds.counts()[s] for s in ("train", "validation"))


def test_dataset_load_errors(tmp_path, bad_files):
    with pytest.raises(ConfigError, match="not found"):
        Dataset.load(str(tmp_path / "none.npz"))
    with pytest.raises(ConfigError, match="cannot read data set"):
        Dataset.load(bad_files["random"])
    partial = str(tmp_path / "partial.npz")
    np.savez(partial, sim=np.zeros((2, 21)))
    with pytest.raises(ConfigError, match="lacks the array"):
        Dataset.load(partial)


# --- gap report ------------------------------------------------------------------------------

def test_gap_statistics_recover_the_torque_offset(recording):
    comparison = compare_recording(recording)
    stats = comparison.stats
    assert set(stats) == {"position_mse", "velocity_mse", "torque_mse", "trajectories", "label"}
    assert stats["trajectories"] == N_TRAJECTORIES and stats["label"] == LABEL
    np.testing.assert_allclose(stats["torque_mse"], TORQUE_OFFSET**2, rtol=0.1, atol=2e-3)
    assert max(stats["position_mse"]) < 1e-5
    direct = gap_statistics(align_all(recording.pairs).aligned, LABEL)
    np.testing.assert_allclose(direct["torque_mse"], stats["torque_mse"])
    table = format_table(stats)
    assert LABEL in table.splitlines()[0] and "Table II" in table.splitlines()[0]
    assert [line.split()[0] for line in table.splitlines()[3:]] == ["position", "velocity", "torque"]
    assert "2.50e-01" in table


def test_plot_torques_writes_a_png(recording, tmp_path):
    aligned = compare_recording(recording).aligned
    path = str(tmp_path / "torques.png")
    plot_torques(aligned[0], path, LABEL)
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


# --- command-line tools ----------------------------------------------------------------------

def run_script(name, *args):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, name), *args],
                          capture_output=True, text=True, timeout=60)


def test_dataset_script(bag_path, tmp_path):
    out, js = str(tmp_path / "ds.npz"), str(tmp_path / "ds.json")
    proc = run_script("dataset", "--bag", bag_path, "--out", out, "--seed", "1", "--json", js)
    assert proc.returncode == 0, proc.stderr
    assert "cartesian" in proc.stdout and "skipped pairs 0" in proc.stdout
    figures = json.load(open(js))
    assert figures["splits"] == {"train": 7, "validation": 2, "test": 1, "cartesian": 2}
    assert figures["skipped_pairs"] == 0 and figures["skipped_messages"] == 4
    assert len(Dataset.load(out)) == N_TRAJECTORIES


def test_compare_script(bag_path, tmp_path):
    js, png = str(tmp_path / "gap.json"), str(tmp_path / "gap.png")
    proc = run_script("compare", "--bag", bag_path, "--json", js, "--plot", png)
    assert proc.returncode == 0, proc.stderr
    assert "Table II" in proc.stdout and "multi" in proc.stdout
    figures = json.load(open(js))
    assert set(figures) == {"position_mse", "velocity_mse", "torque_mse", "trajectories", "label",
                            "sim_topic", "commit", "command"}     # a tool's JSON records its provenance
    assert figures["command"].startswith("rosrun panda_pairs compare ")
    assert figures["sim_topic"] == "/sim/joint_states"
    assert all(len(figures[k]) == 7 for k in ("position_mse", "velocity_mse", "torque_mse"))
    assert figures["trajectories"] == N_TRAJECTORIES and figures["label"] == LABEL
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    proc = run_script("compare", "--bag", bag_path, "--json", js, "--plot", png,
                      "--trajectory", "1234")
    assert proc.returncode == 2 and proc.stderr.startswith("compare: error: trajectory 1234")
    # a bag recorded without the live residual publisher has no corrected stream to compare
    proc = run_script("compare", "--bag", bag_path, "--json", js, "--plot", png,
                      "--sim-topic", "/sim/joint_states_realistic")
    assert proc.returncode == 2 and "lacks the topic(s) /sim/joint_states_realistic" in proc.stderr


@pytest.mark.parametrize("case", ["truncated", "random", "missing"])
@pytest.mark.parametrize("script", ["dataset", "compare"])
def test_scripts_fail_with_one_line(script, case, bad_files, tmp_path):
    if script == "dataset":
        args = ("--out", str(tmp_path / "x.npz"))
    else:
        args = ("--json", str(tmp_path / "x.json"), "--plot", str(tmp_path / "x.png"))
    proc = run_script(script, "--bag", bad_files[case], *args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{script}: error: ") and bad_files[case] in lines[0]
