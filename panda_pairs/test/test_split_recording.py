"""Recordings split by ``rosbag record --split`` (bag_set.py, BagFile, read_pairs) and the
``dataset`` tool's warnings about what a killed recorder leaves: an unclosed ``.bag.active`` file,
a pair whose START has no END, a robot stream that stops before a pair's end."""
import json
import os
import shutil

import numpy as np
import pytest
import rosbag

from panda_pairs.bag_set import recording_files, resolve_bags
from panda_pairs.errors import BagError
from panda_pairs.joint_state_bag import BagFile, read_joint_states
from panda_sim2real import JointLimits
from panda_pairs.pair_bag import read_pairs
from panda_pairs.pair_completeness import coverage_problem, gap_tolerance
from test_dataset_tools import DURATION, GAP, run_script, write_pair_bag

SPLIT = 2.0                      # s of bag time per file, as --split --duration=2
KILL = 20.5                      # s: the recorder is killed while writing pairs_10.bag
CUT_PAIR, CUT = 2, 0.5           # /real/joint_states of pair 2 stops 0.5 s before its end
LIMITS = JointLimits.from_yaml()


def split_bag(source, folder, drop=lambda topic, t: False):
    """Write the messages of ``source`` into folder/pairs_<k>.bag by bag time (k = t // SPLIT),
    leaving out those ``drop`` names; returns the file names in index order."""
    os.makedirs(folder, exist_ok=True)
    bags = {}
    with rosbag.Bag(source) as bag:
        for topic, msg, t in bag.read_messages():
            if drop(topic, t.to_sec()):
                continue
            k = int(t.to_sec() // SPLIT)
            if k not in bags:
                bags[k] = rosbag.Bag(os.path.join(folder, f"pairs_{k}.bag"), "w")
            bags[k].write(topic, msg, t)
    for bag in bags.values():
        bag.close()
    return [os.path.join(folder, f"pairs_{k}.bag") for k in sorted(bags)]


def kill_recorder(files, at):
    """What SIGKILL at ``at`` s leaves: the files after it gone, the one being written cut in
    half (no index) and named .bag.active."""
    k = int(at // SPLIT)
    for name in files[k + 1:]:
        os.remove(name)
    data = open(files[k], "rb").read()
    os.remove(files[k])
    with open(files[k] + ".active", "wb") as f:
        f.write(data[:len(data) // 2])
    return files[:k], files[k] + ".active"


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    return write_pair_bag(str(tmp_path_factory.mktemp("whole") / "pairs.bag"), LIMITS)


@pytest.fixture(scope="module")
def split(whole, tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("split"))
    return folder, split_bag(whole, folder)


def _cut_real(pair_start):
    end = pair_start + DURATION
    return lambda topic, t: topic == "/real/joint_states" and end - CUT < t <= end + 0.05


@pytest.fixture(scope="module")
def killed(whole, tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("killed"))
    files = split_bag(whole, folder, drop=_cut_real(1.0 + CUT_PAIR * (DURATION + GAP)))
    closed, active = kill_recorder(files, KILL)
    return folder, closed, active


# --- which files ----------------------------------------------------------------------------

def test_split_files_are_found_in_index_order(split):
    folder, files = split
    assert len(files) > 11                              # pairs_10.bag comes after pairs_9.bag
    by_name = resolve_bags(os.path.join(folder, "pairs.bag"))
    assert by_name.files == tuple(files) and by_name.unclosed == ()
    assert resolve_bags(folder).files == tuple(files)
    assert resolve_bags(os.path.join(folder, "pairs_*.bag")).files == tuple(files)
    assert resolve_bags(files[3]).files == (files[3],)


def test_missing_and_ambiguous_recordings(split, tmp_path):
    folder, files = split
    with pytest.raises(BagError, match="^bag not found: .*other.bag$"):
        resolve_bags(os.path.join(folder, "other.bag"))
    with pytest.raises(BagError, match="holds no bag file"):
        resolve_bags(str(tmp_path))
    two = tmp_path / "two"
    two.mkdir()
    shutil.copy(files[0], two / "a_0.bag")
    shutil.copy(files[1], two / "b.bag")
    with pytest.raises(BagError, match=r"holds several recordings \(a, b\)"):
        resolve_bags(str(two))


def test_the_files_a_recorder_named_name_may_have_left(tmp_path):
    names = ["pairs.bag", "pairs.bag.active", "pairs_0.bag", "pairs_12.bag", "pairs_3.bag.active",
             "pairs_x.bag", "pairs_1.bag.orig.active", "other_0.bag", "pairs2_0.bag"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    expected = ["pairs.bag", "pairs.bag.active", "pairs_0.bag", "pairs_3.bag.active",
                "pairs_12.bag"]
    for given in ("pairs.bag", "pairs"):
        found = recording_files(str(tmp_path / given))
        assert sorted(os.path.basename(f) for f in found) == sorted(expected)
        assert [os.path.basename(f) for f in found][-3:] == expected[-3:]     # index order
    assert recording_files(str(tmp_path / "absent.bag")) == []


# --- reading a split recording as one bag ---------------------------------------------------

def test_a_split_recording_reads_as_the_whole_bag(whole, split):
    folder, files = split
    recording_name = os.path.join(folder, "pairs.bag")
    with BagFile(recording_name) as bag:
        assert bag.files == files and bag.unclosed == () and "/pairs/event" in bag.topics
        times = [msg.header.stamp.to_sec() for _, msg in bag.messages(["/pairs/event"])]
        assert times == sorted(times) and len(times) == 25
    for topic in ("/sim/joint_states", "/real/joint_states"):
        a = read_joint_states(whole, topic, LIMITS.joint_names)
        b = read_joint_states(recording_name, topic, LIMITS.joint_names)
        np.testing.assert_array_equal(a.t, b.t)
        np.testing.assert_array_equal(a.tau, b.tau)
        assert b.label is None if topic.startswith("/sim") else b.label == a.label
    expected, got = read_pairs(whole, LIMITS.joint_names), read_pairs(folder, LIMITS.joint_names)
    assert [p.trajectory_id for p in got.pairs] == [p.trajectory_id for p in expected.pairs]
    assert got.label == expected.label and got.warnings() == expected.warnings()
    for a, b in zip(expected.pairs, got.pairs):
        np.testing.assert_array_equal(a.real.state, b.real.state)


def test_an_unclosed_file_with_an_index_is_read_with_a_warning(split, tmp_path):
    folder, files = split
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    last = copy / os.path.basename(files[-1])
    last.rename(str(last) + ".active")                 # e.g. after 'rosbag reindex'
    recording = read_pairs(str(copy / "pairs.bag"), LIMITS.joint_names)
    assert recording.unclosed == (str(last) + ".active",) and recording.unreadable == {}
    assert recording.warnings()[0] == f"{last}.active was not closed by its recorder (killed?); " \
                                      f"read as it is"
    assert len(recording.pairs) == 12


def test_only_an_unreadable_unclosed_file_is_an_error(split, tmp_path):
    _, files = split
    data = open(files[0], "rb").read()
    active = tmp_path / "pairs.bag.active"              # a recorder killed without --split
    active.write_bytes(data[:len(data) // 2])
    for given in (str(tmp_path / "pairs.bag"), str(active)):
        with pytest.raises(BagError, match="no index.*rosbag reindex .*pairs.bag.active"):
            read_pairs(given, LIMITS.joint_names)


# --- what a killed recorder leaves ----------------------------------------------------------

def test_a_killed_recording_keeps_its_complete_pairs(killed):
    folder, closed, active = killed
    recording = read_pairs(os.path.join(folder, "pairs.bag"), LIMITS.joint_names)
    assert recording.unclosed == (active,) and active in recording.unreadable
    assert [p.trajectory_id for p in recording.pairs] == [0, 1, 3, 4, 5, 6]
    assert recording.seconds == pytest.approx(6 * DURATION)
    lines = recording.warnings()
    assert len(lines) == 3
    assert lines[0].startswith(f"{active} was not closed by its recorder (killed?) and has no "
                               f"index: left out; 'rosbag reindex {active}'")
    assert lines[1].startswith("pair 2 (multi, 6.400-8.900 s) is incomplete: /real/joint_states "
                               "stops 0.5")
    assert lines[2] == ("pair 7 (single, 19.900-? s) is incomplete: START without END (the "
                        "recording stopped during it?)")


def test_dataset_warns_once_per_incomplete_pair_and_counts_them(killed, tmp_path):
    folder, _, active = killed
    out, js = str(tmp_path / "ds.npz"), str(tmp_path / "ds.json")
    proc = run_script("dataset", "--bag", os.path.join(folder, "pairs.bag"), "--out", out,
                      "--json", js)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 3
    assert warnings[0].startswith(f"warning: {active} was not closed")
    assert warnings[1].startswith("warning: pair 2 (multi")
    assert warnings[2].startswith("warning: pair 7 (single")
    assert "incomplete pairs 2 (left out), unclosed files 1; complete pairs 15.0 s" in proc.stdout
    figures = json.load(open(js))
    assert figures["incomplete_pairs"] == 2 and figures["unclosed_files"] == [active]
    assert figures["trajectories"] == 6 and figures["complete_pair_seconds"] == pytest.approx(15.0)


# --- coverage of a pair's window ------------------------------------------------------------

def test_coverage_problems():
    t = np.arange(0.0, 2.0001, 0.01)
    assert gap_tolerance(t) == pytest.approx(0.1)
    assert gap_tolerance(np.arange(0.0, 2.0, 0.05)) == pytest.approx(0.25)
    assert coverage_problem(t, 0.0, 2.0, 0.1) is None
    assert coverage_problem(t[t > 0.3], 0.0, 2.0, 0.1) == "starts 0.310 s after the pair's start"
    assert coverage_problem(t[t < 1.5], 0.0, 2.0, 0.1) == "stops 0.510 s before the pair's end"
    holed = t[(t < 0.8) | (t > 1.2)]                   # dropped samples inside: complete
    assert coverage_problem(holed, 0.0, 2.0, 0.1) is None
    assert coverage_problem(t[:0], 0.0, 2.0, 0.1) == "no samples"


def test_split_recorder_moves_an_earlier_recording_aside_and_deletes_nothing(tmp_path):
    """split_recorder -O NAME.bag: the files an earlier recording NAME left (and a NAME_<k>.bag
    that only looks like one) go into NAME.replaced-<time>/, then rosbag record runs (--help)."""
    import subprocess
    earlier = ["pairs_0.bag", "pairs_1.bag", "pairs_7.bag.active", "pairs.bag"]
    for name in earlier + ["other_0.bag"]:
        (tmp_path / name).write_bytes(b"x")
    done = subprocess.run(["rosrun", "panda_pairs", "split_recorder", "-O",
                           str(tmp_path / "pairs.bag"), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "moved what an earlier recording" in done.stdout
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("pairs.replaced-")]
    assert len(aside) == 1 and sorted(p.name for p in aside[0].iterdir()) == sorted(earlier)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["other_0.bag"]
