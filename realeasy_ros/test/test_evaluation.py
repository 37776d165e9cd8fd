"""Evaluation of Realeasy models like paper 000 Table II and Fig. 2, on a synthetic data set whose
stand-in side has a known torque offset; models are built directly (a dense layer with zero
weights and a bias outputs a constant residual), and the ``evaluate`` tool as a subprocess."""
import json

import numpy as np
import pytest
import torch

from panda_pairs import AlignedPair, Dataset, JointLimitScaler, gap_statistics, plot_torque_panels
from panda_sim2real import ConfigError, JointLimits
from realeasy_ros.evaluation import (evaluate_model, format_evaluation, per_joint_mse,
                                     trajectory_index)
from realeasy_ros.networks import ModelSpec, build_network
from realeasy_ros.model import RealeasyModel

from realeasy_tools import run_script

RATE = 100.0
OFFSET = np.array([0.5, 0.4, 0.3, 0.3, 0.2, 0.1, 0.1])    # N m, stand-in minus simulation
T = 60                                                      # samples per trajectory
SPLIT_PLAN = ("train", "train", "validation", "test", "test", "cartesian", "cartesian")
KIND_PLAN = ("multi", "single", "multi", "single", "multi", "cartesian", "cartesian")
LABEL = "reality stand-in"


@pytest.fixture(scope="module")
def limits():
    return JointLimits.from_yaml()


def synthetic_dataset(limits, splits=SPLIT_PLAN, kinds=KIND_PLAN, seed=0, rate=RATE):
    """Smooth random joint motions; the stand-in has the simulation's q and qd and its torque
    plus OFFSET and a little noise."""
    rng = np.random.default_rng(seed)
    scaler = JointLimitScaler.from_limits(limits)
    t = np.arange(T) / rate
    sims, reals = [], []
    for _ in splits:
        amp, freq = rng.uniform(0.05, 0.3, limits.dof), rng.uniform(0.3, 1.0, limits.dof)
        q = limits.home + amp * np.sin(2 * np.pi * freq * t[:, None])
        qd = amp * 2 * np.pi * freq * np.cos(2 * np.pi * freq * t[:, None])
        tau = 10.0 * np.sin(q) + 2.0 * qd
        sims.append(np.hstack([q, qd, tau]))
        reals.append(np.hstack([q, qd, tau + OFFSET + rng.normal(0, 1e-3, tau.shape)]))
    n = len(splits)
    return Dataset(
        sim=scaler.transform(np.concatenate(sims)).astype(np.float32),
        real=scaler.transform(np.concatenate(reals)).astype(np.float32),
        offsets=np.arange(n + 1, dtype=np.int64) * T,
        trajectory_ids=np.arange(10, 10 + n, dtype=np.int64), kinds=np.array(kinds, dtype=str),
        split=np.array(splits, dtype=str), shifts=np.zeros(n), scaler=scaler,
        joint_names=tuple(limits.joint_names), rate=rate, label=LABEL)


def offset_model(limits, architecture="precise", offset=OFFSET, hidden_size=21, warmup=5,
                 rate=RATE, joint_names=None):
    """A model whose residual is the constant torque ``offset`` (dense weights zero, bias the
    normalised offset), or zero with ``offset=None``."""
    spec = ModelSpec(architecture=architecture, hidden_size=hidden_size)
    network = build_network(spec)
    scaler = JointLimitScaler.from_limits(limits)
    with torch.no_grad():
        network.dense.weight.zero_()
        network.dense.bias.zero_()
        if offset is not None:
            network.dense.bias[2 * limits.dof:] = torch.as_tensor(
                offset / scaler.scale[2 * limits.dof:], dtype=torch.float32)
    network.eval()
    return RealeasyModel(network, spec, scaler, tuple(joint_names or limits.joint_names),
                         rate=rate, warmup_steps=warmup, metadata={})


@pytest.fixture(scope="module")
def dataset(limits):
    return synthetic_dataset(limits)


# --- per-joint MSE and the gap report --------------------------------------------------------

def test_per_joint_mse():
    real = np.zeros((4, 6))
    pred = np.tile([1.0, 2.0, 0.0, 3.0, 0.5, -1.0], (4, 1))
    pred[0, 0] = 3.0                                      # column 0: errors 3, 1, 1, 1
    mse = per_joint_mse(pred, real)
    assert list(mse) == ["position_mse", "velocity_mse", "torque_mse"]
    assert mse["position_mse"] == [3.0, 4.0]
    assert mse["velocity_mse"] == [0.0, 9.0] and mse["torque_mse"] == [0.25, 1.0]
    for bad in (np.zeros((4, 5)), np.zeros((3, 6)), np.zeros((0, 6))):
        with pytest.raises(ValueError):
            per_joint_mse(bad, bad if bad.shape[0] == 0 else real)


def test_gap_statistics_unchanged():
    rng = np.random.default_rng(2)
    pairs = [AlignedPair(i, "multi", np.arange(n) / RATE, rng.normal(size=(n, 21)),
                         rng.normal(size=(n, 21)), 0.01, 3) for i, n in enumerate((20, 35, 11))]
    stats = gap_statistics(pairs, "my stand-in")
    diff = np.concatenate([p.sim - p.real for p in pairs])        # the former implementation
    mse = np.mean(diff * diff, axis=0)
    assert list(stats) == ["position_mse", "velocity_mse", "torque_mse", "trajectories", "label"]
    assert stats["position_mse"] == mse[:7].tolist()
    assert stats["velocity_mse"] == mse[7:14].tolist()
    assert stats["torque_mse"] == mse[14:].tolist()
    assert stats["trajectories"] == 3 and stats["label"] == "my stand-in"
    with pytest.raises(ValueError):
        gap_statistics([])


# --- evaluate_model ------------------------------------------------------------------------------

def test_evaluate_model_structure_and_offset_correction(limits, dataset):
    result = evaluate_model(offset_model(limits, "precise"), dataset)
    assert set(result) == {"test", "cartesian", "label", "model", "warmup_note", "notes"}
    assert result["label"] == LABEL and result["notes"] == []
    assert result["model"] == {"architecture": "precise", "hidden_size": 21, "num_layers": 2,
                               "rate": RATE, "warmup_steps": 0, "warmup_seconds": 0.0}
    assert "needs no warm-up" in result["warmup_note"]
    for split, n in (("test", 2), ("cartesian", 2)):
        block = result[split]
        assert set(block) == {"sim", "realeasy", "trajectories", "samples", "reduction"}
        assert block["trajectories"] == n and block["samples"] == n * T
        for source in ("sim", "realeasy"):
            assert all(len(block[source][k]) == 7
                       for k in ("position_mse", "velocity_mse", "torque_mse"))
        np.testing.assert_allclose(block["sim"]["torque_mse"], OFFSET**2, rtol=0.02)
        assert max(block["realeasy"]["torque_mse"]) < 1e-5
        assert min(block["reduction"]["torque"]) > 100.0
        # q and qd are equal on both sides and not corrected: no finite factor
        assert block["reduction"]["position"] == [None] * 7
    json.dumps(result, allow_nan=False)                      # plain JSON, no NaN/Infinity
    zero = evaluate_model(offset_model(limits, "precise", offset=None), dataset)
    assert zero["test"]["realeasy"] == zero["test"]["sim"]   # no residual, no change


def test_evaluate_all_and_empty_splits(limits, dataset):
    model = offset_model(limits, "precise")
    result = evaluate_model(model, dataset, splits=("all",))
    assert result["all"]["trajectories"] == len(dataset) and result["all"]["samples"] == len(dataset) * T
    few = synthetic_dataset(limits, splits=("train", "test"), kinds=("multi", "multi"))
    result = evaluate_model(model, few, splits=("test", "cartesian"))
    assert result["cartesian"] is None and result["test"]["trajectories"] == 1
    assert any("cartesian" in note for note in result["notes"])
    assert "cartesian: no trajectories" in format_evaluation(result)
    with pytest.raises(ConfigError, match="no trajectories in the split"):
        evaluate_model(model, few, splits=("validation", "cartesian"))
    with pytest.raises(ConfigError, match="unknown"):
        evaluate_model(model, few, splits=("testing",))


def test_realtime_warmup_steps_count_as_simulation(limits, dataset):
    model = offset_model(limits, "realtime", warmup=5)
    result = evaluate_model(model, dataset, splits=("test",))
    assert result["model"]["warmup_steps"] == 5 and result["model"]["warmup_seconds"] == 0.05
    assert "5 warm-up steps" in result["warmup_note"] and "Algorithm 2" in result["warmup_note"]
    pairs = dataset.trajectories("test", normalised=False)
    expected = []
    for sim, _ in pairs:
        corrected = sim.copy()
        corrected[5:, 14:] += OFFSET                        # the simulator's values first
        np.testing.assert_array_equal(model.correct(sim)[:5], sim[:5])
        expected.append(corrected)
    want = per_joint_mse(np.concatenate(expected), np.concatenate([r for _, r in pairs]))
    np.testing.assert_allclose(result["test"]["realeasy"]["torque_mse"], want["torque_mse"],
                               rtol=1e-4)
    # five of sixty samples keep the full offset: MSE ~ 5/60 offset^2
    np.testing.assert_allclose(result["test"]["realeasy"]["torque_mse"], OFFSET**2 * 5 / T,
                               rtol=0.05)


def test_model_must_fit_the_data(limits, dataset):
    with pytest.raises(ConfigError, match="50 Hz.*100 Hz"):
        evaluate_model(offset_model(limits, rate=50.0), dataset)
    reversed_names = tuple(reversed(limits.joint_names))
    with pytest.raises(ConfigError, match="model is for joints"):
        evaluate_model(offset_model(limits, joint_names=reversed_names), dataset)


def test_format_evaluation(limits, dataset):
    text = format_evaluation(evaluate_model(offset_model(limits, "precise"), dataset))
    lines = text.splitlines()
    assert LABEL in lines[0] and "not a real robot" in lines[0] and "Table II" in lines[0]
    rows = [line for line in lines if line.startswith("torque")]
    assert len(rows) == 6                      # sim, Realeasy, factor for each of two splits
    assert "Simulation + Realeasy (precise)" in rows[1] and "reduction" in rows[2]
    assert "2.50e-01" in rows[0]               # the offset of joint 1 squared
    assert "test: 2 trajectories" in text and "cartesian: 2 trajectories" in text


def test_plot_and_trajectory_choice(limits, dataset, tmp_path):
    index = trajectory_index(dataset, ("test", "cartesian"))
    assert dataset.split[index] == "test" and dataset.kinds[index] == "multi"
    assert trajectory_index(dataset, ("all",)) == index
    assert dataset.split[trajectory_index(dataset, ("cartesian",))] == "cartesian"
    assert trajectory_index(dataset, ("cartesian",), trajectory_id=10) == 0
    with pytest.raises(ConfigError, match="trajectory 99"):
        trajectory_index(dataset, ("test",), trajectory_id=99)
    sim, real = dataset.trajectories("test", normalised=False)[0]
    path = str(tmp_path / "fig2.png")
    plot_torque_panels(np.arange(T) / RATE, sim, real, path, LABEL, "title",
                       corrected=offset_model(limits).correct(sim))
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


# --- the evaluate tool -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory, limits, dataset):
    folder = tmp_path_factory.mktemp("evaluate")
    data = str(folder / "data.npz")
    dataset.save(data)
    paths = {"data": data, "good": str(folder / "model.pt"), "names": str(folder / "names.pt"),
             "corrupt": str(folder / "corrupt.pt"), "missing": str(folder / "none.pt"),
             "no_data": str(folder / "none.npz")}
    offset_model(limits, "precise", hidden_size=8).save(paths["good"])   # other hidden size
    offset_model(limits, joint_names=[f"j{i}" for i in range(7)]).save(paths["names"])
    with open(paths["corrupt"], "wb") as f:
        f.write(np.random.default_rng(1).bytes(3000))
    return paths


def test_evaluate_script(files, tmp_path):
    js, png = str(tmp_path / "eval.json"), str(tmp_path / "eval.png")
    proc = run_script("evaluate", "--data", files["data"], "--model", files["good"],
                      "--json", js, "--plot", png)
    assert proc.returncode == 0, proc.stderr
    assert "Table II" in proc.stdout and "Simulation + Realeasy (precise)" in proc.stdout
    figures = json.load(open(js))
    assert {"test", "cartesian", "label", "model", "warmup_note", "notes"} <= set(figures)
    assert figures["model"]["hidden_size"] == 8 and figures["label"] == LABEL
    assert min(figures["test"]["reduction"]["torque"]) > 100.0
    assert figures["plotted_trajectory"] == {"id": 14, "kind": "multi", "split": "test"}
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("case", ["missing", "corrupt", "names", "no_data", "trajectory"])
def test_evaluate_script_errors(case, files, tmp_path):
    model = files["good"] if case in ("no_data", "trajectory") else files[case]
    data = files["no_data"] if case == "no_data" else files["data"]
    extra = ("--trajectory", "1234") if case == "trajectory" else ()
    proc = run_script("evaluate", "--data", data, "--model", model, "--json",
                      str(tmp_path / "x.json"), "--plot", str(tmp_path / "x.png"), *extra)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluate: error: "), proc.stderr
    expected = {"missing": model, "corrupt": model, "names": "model is for joints",
                "no_data": data, "trajectory": "trajectory 1234"}[case]
    assert expected in lines[0]
    assert not (tmp_path / "x.json").exists()
