"""Offline bag correction (paper 000 eq. 9, Algorithms 1-2) on the synthetic pair bag of
test_dataset_tools: every input message is copied, each valid sim message gets one corrected twin
on /sim/joint_states_realistic; the ``correct`` tool as a subprocess."""
import hashlib
import json

import genpy
import numpy as np
import pytest
import rosbag
import torch

from panda_sim2real import EVENTS, JointLimits
from realeasy_ros.correction import (REALISTIC_TOPIC, SIM_TOPIC, InvalidSample, correct_bag,
                                     segments, state_from_msg)
from panda_pairs import BagError, JointLimitScaler
from realeasy_ros.networks import ModelSpec, build_network
from realeasy_ros.model import RealeasyModel

from realeasy_tools import run_script
from test_dataset_tools import TORQUE_OFFSET, _joint_state, write_pair_bag

RATE = 100.0
LAG = 0.002     # bag time minus header stamp in _bad_stream_bag


@pytest.fixture(scope="module")
def limits():
    return JointLimits.from_yaml()


def make_model(limits, architecture, rate=RATE, warmup=5, offset=None, seed=0):
    """Random weights (seeded) or, with ``offset``, a constant torque residual."""
    torch.manual_seed(seed)
    spec = ModelSpec(architecture=architecture, hidden_size=8)
    network = build_network(spec)
    scaler = JointLimitScaler.from_limits(limits)
    if offset is not None:
        with torch.no_grad():
            network.dense.weight.zero_()
            network.dense.bias.zero_()
            network.dense.bias[14:] = torch.as_tensor(offset / scaler.scale[14:])
    network.eval()
    return RealeasyModel(network, spec, scaler, tuple(limits.joint_names), rate=rate,
                         warmup_steps=warmup, metadata={})


@pytest.fixture(scope="module")
def bag_path(tmp_path_factory, limits):
    return write_pair_bag(str(tmp_path_factory.mktemp("bag") / "pairs.bag"), limits)


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def read_all(path):
    """(topic, bag time ns, serialized bytes) of every message, and the topics' headers."""
    with rosbag.Bag(path) as bag:
        rows = [(topic, t.to_nsec(), raw[1]) for topic, raw, t in bag.read_messages(raw=True)]
        headers = {c.topic: c.header for c in bag._connections.values()}
    return rows, headers


def sim_stream(path, limits):
    """Independent reading of the valid sim samples (sorted stamps, states) and START stamps."""
    stamps, states, starts = [], [], []
    with rosbag.Bag(path) as bag:
        for topic, msg, _ in bag.read_messages(topics=[SIM_TOPIC, EVENTS]):
            if topic == EVENTS:
                if msg.event == 0:
                    starts.append(msg.header.stamp.to_sec())
                continue
            index = {n: i for i, n in enumerate(msg.name)}
            if not all(n in index for n in limits.joint_names):
                continue
            order = [index[n] for n in limits.joint_names]
            state = np.concatenate([np.asarray(v, dtype=float)[order]
                                    for v in (msg.position, msg.velocity, msg.effort)])
            if np.all(np.isfinite(state)):
                stamps.append(msg.header.stamp.to_sec())
                states.append(state)
    order = np.argsort(stamps)
    return np.asarray(stamps)[order], np.asarray(states)[order], np.sort(starts)


def realistic(path):
    """(bag time, header stamp, names, state) of the corrected messages."""
    out = []
    with rosbag.Bag(path) as bag:
        for _, msg, t in bag.read_messages(topics=[REALISTIC_TOPIC]):
            out.append((t.to_sec(), msg.header.stamp.to_sec(), list(msg.name),
                        np.concatenate([msg.position, msg.velocity, msg.effort])))
    return out


def test_segments():
    stamps = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.5, 4.0])
    assert segments(stamps, np.array([1.0, 3.0, 9.0])) == [(0, 5), (5, 7)]
    assert segments(stamps, np.zeros(0)) == [(0, 7)]
    assert segments(stamps, np.array([-1.0, 0.7])) == [(0, 2), (2, 7)]
    assert segments(np.zeros(0), np.array([1.0])) == []


def test_precise_correction_copies_and_corrects_per_trajectory(bag_path, limits, tmp_path):
    before = sha256(bag_path)
    model = make_model(limits, "precise")
    out = str(tmp_path / "corrected.bag")
    summary = correct_bag(bag_path, model, out)
    assert sha256(bag_path) == before

    rows_in, headers_in = read_all(bag_path)
    rows_out, headers_out = read_all(out)
    copied = [r for r in rows_out if r[0] != REALISTIC_TOPIC]
    assert sorted(copied) == sorted(rows_in)                   # every message, same bag time
    for name, header in headers_in.items():
        assert headers_out[name] == header                     # same connection header
    assert headers_out[REALISTIC_TOPIC]["type"] == b"sensor_msgs/JointState"
    assert headers_out[REALISTIC_TOPIC]["callerid"] == b"/realeasy_correct"

    stamps, states, starts = sim_stream(bag_path, limits)
    assert summary.messages_copied == len(rows_in)
    assert summary.skipped == 2 and summary.sim_messages == len(stamps) + 2
    assert summary.corrected == len(stamps) and summary.warmup_messages == 0
    corrected = realistic(out)
    assert len(corrected) == len(stamps)
    assert all(bag_t == stamp for bag_t, stamp, _, _ in corrected)   # the source's bag time
    assert all(names == list(limits.joint_names) for _, _, names, _ in corrected)
    np.testing.assert_array_equal(sorted(c[1] for c in corrected), stamps)
    got = np.array([c[3] for c in sorted(corrected, key=lambda c: c[1])])

    # segments: one per START (12 trajectories and the unpaired one), samples before the first
    # START join the first; the network runs on each as one sequence
    cut = np.searchsorted(stamps, starts[1:], side="left")
    pieces = np.split(np.arange(len(stamps)), cut)
    assert summary.sequences == len(pieces) == 13
    expected = np.concatenate([model.correct(states[p]) for p in pieces])
    np.testing.assert_allclose(got, expected, atol=1e-9)
    whole = model.correct(states)                 # the bidirectional output depends on the cut
    assert np.abs(whole - expected).max() > 1e-6


def test_realtime_correction_runs_the_whole_stream(bag_path, limits, tmp_path):
    model = make_model(limits, "realtime", warmup=5)
    out = str(tmp_path / "realtime.bag")
    summary = correct_bag(bag_path, model, out)
    assert summary.sequences == 1 and summary.warmup_messages == 5
    stamps, states, _ = sim_stream(bag_path, limits)
    got = np.array([c[3] for c in sorted(realistic(out), key=lambda c: c[1])])
    np.testing.assert_allclose(got, model.correct(states), atol=1e-9)
    np.testing.assert_array_equal(got[:5], states[:5])        # warm-up once, at the start
    assert np.abs(got[5:] - states[5:]).max() > 1e-6


def test_offset_model_moves_sim_torques_to_the_stand_in(bag_path, limits, tmp_path):
    out = str(tmp_path / "offset.bag")
    correct_bag(bag_path, make_model(limits, "precise", offset=TORQUE_OFFSET), out)
    _, states, _ = sim_stream(bag_path, limits)
    got = np.array([c[3] for c in sorted(realistic(out), key=lambda c: c[1])])
    np.testing.assert_allclose(got[:, 14:] - states[:, 14:], np.tile(TORQUE_OFFSET, (len(got), 1)),
                               atol=1e-5)
    np.testing.assert_array_equal(got[:, :14], states[:, :14])


def _bad_stream_bag(path, limits, rate=RATE, n=40):
    """A sim stream without events, recorded 2 ms after its stamps: shuffled joint order in
    every third message, plus three bad messages."""
    names, dof = list(limits.joint_names), limits.dof
    rng = np.random.default_rng(5)
    with rosbag.Bag(path, "w") as bag:
        for k in range(n):
            q, qd, tau = limits.home + 0.01 * k, rng.normal(size=dof), rng.normal(size=dof)
            order = rng.permutation(dof) if k % 3 == 0 else None
            stamp = 1.0 + k / rate
            bag.write(SIM_TOPIC, _joint_state(stamp, names, q, qd, tau, order=order),
                      genpy.Time.from_sec(stamp + LAG))
            if k in (10, 20, 30):
                bad = _joint_state(stamp + 0.5 / rate, names, q, qd, tau)
                if k == 10:
                    bad.position = list(bad.position) + [0.0]          # wrong length
                elif k == 20:
                    bad.name, bad.effort = bad.name[:-1], bad.effort[:-1]   # missing joint
                else:
                    bad.velocity = [float("nan")] * dof
                bag.write(SIM_TOPIC, bad, genpy.Time.from_sec(stamp + 0.5 / rate + LAG))
    return path


def test_bad_sim_messages_are_skipped_and_counted(limits, tmp_path):
    path = _bad_stream_bag(str(tmp_path / "bad.bag"), limits)
    model = make_model(limits, "realtime", warmup=2)
    summary = correct_bag(path, model, str(tmp_path / "out.bag"))
    assert summary.sim_messages == 43 and summary.skipped == 3 and summary.corrected == 40
    stamps, states, _ = sim_stream(path, limits)     # its reader skips only 2 (missing, NaN)
    keep = np.array([not np.isclose(s, 1.0 + 10.5 / RATE) for s in stamps])
    corrected = sorted(realistic(str(tmp_path / "out.bag")), key=lambda c: c[1])
    np.testing.assert_allclose([c[0] - c[1] for c in corrected], LAG, atol=2e-9)  # source's times
    got = np.array([c[3] for c in corrected])
    np.testing.assert_allclose(got, model.correct(states[keep]), atol=1e-9)
    with rosbag.Bag(path) as bag:
        invalid = 0
        for _, msg, _ in bag.read_messages():
            try:
                state_from_msg(msg, limits.joint_names)
            except InvalidSample:
                invalid += 1
    assert invalid == 3


def test_rate_mismatch_and_same_file_are_refused(bag_path, limits, tmp_path):
    before = sha256(bag_path)
    with pytest.raises(BagError, match="100 Hz.*the model at 50 Hz"):
        correct_bag(bag_path, make_model(limits, "precise", rate=50.0), str(tmp_path / "x.bag"))
    with pytest.raises(BagError, match="is the input bag"):
        correct_bag(bag_path, make_model(limits, "precise"), bag_path)
    assert sha256(bag_path) == before and not (tmp_path / "x.bag").exists()
    # a 97 Hz stream is within 5 % of 100 Hz
    path = _bad_stream_bag(str(tmp_path / "slow.bag"), limits, rate=97.0)
    assert correct_bag(path, make_model(limits, "realtime"), str(tmp_path / "s.bag")).corrected == 40
    corrected_once = str(tmp_path / "s.bag")
    with pytest.raises(BagError, match="already has /sim/joint_states_realistic"):
        correct_bag(corrected_once, make_model(limits, "realtime"), str(tmp_path / "t.bag"))


# --- the correct tool ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tool_files(tmp_path_factory, limits, bag_path):
    folder = tmp_path_factory.mktemp("tool")
    paths = {"model": str(folder / "model.pt"), "slow": str(folder / "slow.pt"),
             "truncated": str(folder / "truncated.bag"), "random": str(folder / "random.bag")}
    make_model(limits, "precise").save(paths["model"])
    make_model(limits, "precise", rate=50.0).save(paths["slow"])
    data = open(bag_path, "rb").read()
    open(paths["truncated"], "wb").write(data[:len(data) // 2])
    open(paths["random"], "wb").write(np.random.default_rng(3).bytes(20000))
    return paths


def test_correct_script(bag_path, tool_files, tmp_path):
    before = sha256(bag_path)
    out, js = str(tmp_path / "out.bag"), str(tmp_path / "out.json")
    proc = run_script("correct", "--bag", bag_path, "--model", tool_files["model"], "--out", out,
                      "--json", js)
    assert proc.returncode == 0, proc.stderr
    assert REALISTIC_TOPIC in proc.stdout and "skipped 2" in proc.stdout
    figures = json.load(open(js))
    assert figures["skipped"] == 2 and figures["sequences"] == 13
    assert figures["corrected"] == figures["sim_messages"] - 2 == len(realistic(out))
    assert sha256(bag_path) == before
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("case", ["truncated", "random", "missing", "rate", "same"])
def test_correct_script_errors(case, bag_path, tool_files, tmp_path):
    before = sha256(bag_path)
    bag = {"truncated": tool_files["truncated"], "random": tool_files["random"],
           "missing": str(tmp_path / "none.bag")}.get(case, bag_path)
    model = tool_files["slow"] if case == "rate" else tool_files["model"]
    out = bag_path if case == "same" else str(tmp_path / "out.bag")
    proc = run_script("correct", "--bag", bag, "--model", model, "--out", out)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("correct: error: "), proc.stderr
    expected = {"rate": "the model at 50 Hz", "same": "is the input bag"}.get(case, bag)
    assert expected in lines[0]
    assert sha256(bag_path) == before
    if case != "same":
        assert not (tmp_path / "out.bag").exists() and not list(tmp_path.glob("*.tmp"))
