"""Training of the Realeasy networks (paper 000 §IV-A, §IV-D): windowing, the training loop on a
small synthetic data set, and the ``train`` tool."""
import dataclasses
import importlib.machinery
import importlib.util
import json
import os

import numpy as np
import pytest
import torch

from realeasy_ros import training
from panda_pairs import Dataset, JointLimitScaler, assign_splits
from panda_sim2real import ConfigError, JointLimits
from realeasy_ros.model import load_model
from realeasy_ros.training import (TrainingConfig, WindowSampler, train_model, validation_loss,
                                   window_length)
from realeasy_tools import SCRIPTS, run_script

RATE = 100.0
LABEL = "synthetic stand-in"
TORQUE_OFFSET = np.array([5.0, 4.0, 3.0, 3.0, 1.0, 1.0, 1.0])   # N m, real minus sim
DAMPING = 3.0                                                   # N m s/rad, real minus sim
# small and quick, with the paper's loss (equal weights: the checks below recompute it unweighted),
# input dropout and constant learning rate
TINY = dict(hidden_size=12, epochs=12, batches_per_epoch=10, batch_size=8, learning_rate=1e-2,
            patience=100, weighting="equal", dropout=0.1, lr_decay=None)

torch.set_num_threads(1)   # small networks: threads only contend on the shared machine


def synthetic_dataset(n=12, steps=150, seed=0):
    """``n`` trajectories of ~``steps`` steps of smooth random joint motion; the "real" torque
    is the simulated one plus a constant offset and a velocity-dependent term."""
    limits = JointLimits.from_yaml()
    scaler = JointLimitScaler.from_limits(limits)
    rng = np.random.default_rng(seed)
    sims, reals = [], []
    for _ in range(n):
        t = np.arange(steps + int(rng.integers(-20, 21)))[:, None] / RATE
        f, a = rng.uniform(0.3, 1.0, 7), rng.uniform(0.1, 0.4, 7)
        phase = 2 * np.pi * f * t + rng.uniform(0, 2 * np.pi, 7)
        q, qd = limits.home + a * np.sin(phase), a * 2 * np.pi * f * np.cos(phase)
        tau = 10.0 * np.sin(q) + 2.0 * qd
        sims.append(np.hstack([q, qd, tau]))
        reals.append(np.hstack([q, qd, tau + TORQUE_OFFSET + DAMPING * qd]))
    lengths = [len(s) for s in sims]
    kinds = np.array(["multi"] * n)
    return Dataset(sim=scaler.transform(np.concatenate(sims)).astype(np.float32),
                   real=scaler.transform(np.concatenate(reals)).astype(np.float32),
                   offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                   trajectory_ids=np.arange(n, dtype=np.int64), kinds=kinds,
                   split=assign_splits(kinds, seed), shifts=np.zeros(n), scaler=scaler,
                   joint_names=tuple(limits.joint_names), rate=RATE, label=LABEL)


@pytest.fixture(scope="module")
def dataset():
    return synthetic_dataset()


# --- windowing (§IV-D) -------------------------------------------------------------------------

def test_window_length_rule():
    assert window_length([100, 200], 0.8, 50) == 80          # fraction of the shortest
    assert window_length([300, 70], 0.8, 50) == 56
    assert window_length([60, 300], 0.8, 50) == 50           # at least min_window ...
    assert window_length([40, 300], 0.8, 50) == 40           # ... capped at the shortest
    assert window_length([200], 1.0, 50) == 200


def _trajectories(seed=0, n=6):
    rng = np.random.default_rng(seed)
    out = []
    for length in rng.integers(60, 200, n):
        sim = rng.random((length, 21)).astype(np.float32)
        out.append((sim, sim + 1.0))
    return out


def test_windows_are_sub_intervals_of_the_batch_trajectories():
    trajectories = _trajectories()
    sampler = WindowSampler(trajectories, batch_size=4, window_fraction=0.8, min_window=30,
                            seed=1)
    later_start, lengths_seen = False, set()
    for _ in range(30):
        state = sampler.rng.bit_generator.state
        chosen, starts, length = sampler.draw()
        sampler.rng.bit_generator.state = state          # sample() draws the same batch
        x, y = sampler.sample()
        assert x.dtype == torch.float32 and x.shape == y.shape == (4, length, 21)
        assert length == window_length(sampler.lengths[chosen], 0.8, 30)
        for b, (i, s) in enumerate(zip(chosen, starts)):
            sim, real = trajectories[i]
            assert 0 <= s and s + length <= len(sim)
            np.testing.assert_array_equal(x[b].numpy(), sim[s:s + length])
            np.testing.assert_array_equal(y[b].numpy(), real[s:s + length])
            later_start |= int(s) > 0
        lengths_seen.add(length)
    assert later_start                                   # not always the beginning
    assert len(lengths_seen) > 1                         # a mix of window lengths


def test_sampler_is_deterministic_for_a_seed():
    trajectories = _trajectories()
    a, b, c = (WindowSampler(trajectories, 5, seed=s) for s in (3, 3, 4))
    for _ in range(5):
        (xa, ya), (xb, yb), (xc, _) = a.sample(), b.sample(), c.sample()
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    assert not (xa.shape == xc.shape and torch.equal(xa, xc))


def test_sampler_draws_with_replacement_when_trajectories_are_few():
    x, _ = WindowSampler(_trajectories(n=2), batch_size=7, seed=0).sample()
    assert x.shape[0] == 7
    with pytest.raises(ConfigError):
        WindowSampler([], batch_size=2)


# --- configuration -----------------------------------------------------------------------------

@pytest.mark.parametrize("change", [
    {"architecture": "gru"}, {"hidden_size": 0}, {"epochs": 1.5}, {"batch_size": True},
    {"dropout": 1.0}, {"window_fraction": 0.0}, {"window_fraction": 1.2},
    {"learning_rate": -1e-3}, {"learning_rate": float("nan")}, {"warmup_seconds": -0.1},
    {"device": "tpu"}, {"max_minutes": 0.0}, {"grad_clip": 0.0}, {"lr_decay": 1.0},
    {"seed": -1}, {"weighting": "inverse"}, {"position_weight": -1.0}, {"position_weight": 0.0, "velocity_weight": 0.0,
                                               "torque_weight": 0.0}, {"input_size": 20}])
def test_config_rejects_bad_values(change):
    with pytest.raises(ConfigError) as info:
        TrainingConfig(**change)
    assert "\n" not in str(info.value)


def test_config_defaults_and_warmup():
    config = TrainingConfig()
    assert (config.architecture, config.hidden_size, config.num_layers) == ("realtime", 64, 2)
    assert config.warmup_steps(100.0) == 20 and config.warmup_steps(1000.0) == 200
    assert TrainingConfig(architecture="precise").warmup_steps(100.0) == 0
    assert config.resolve_device().type in ("cpu", "cuda")
    torch.testing.assert_close(config.loss_weights(), torch.ones(21))


# --- presets ------------------------------------------------------------------------------------

TUNED_VALUES = dict(hidden_size=64, num_layers=2, dropout=0.0, weighting="gap", batch_size=32,
                    batches_per_epoch=50, learning_rate=3e-3, lr_decay=0.5, lr_decay_patience=5,
                    patience=30, epochs=400, window_fraction=0.8, position_weight=1.0,
                    velocity_weight=1.0, torque_weight=1.0, warmup_seconds=0.2)
PAPER_VALUES = dict(TUNED_VALUES, hidden_size=21, dropout=0.1, weighting="equal", batch_size=16,
                    lr_decay=None, patience=15, epochs=200)


def _values(config, names):
    return {name: getattr(config, name) for name in names}


def test_presets_tuned_is_the_default_and_paper_the_papers():
    assert training.DEFAULT_PRESET == "tuned" and set(training.PRESETS) == {"tuned", "paper"}
    assert training.PRESETS["tuned"] == TrainingConfig()
    assert _values(TrainingConfig(), TUNED_VALUES) == TUNED_VALUES
    assert _values(training.preset_config("paper"), PAPER_VALUES) == PAPER_VALUES
    assert training.preset_overrides(training.PRESETS["paper"], "paper") == {}
    changed = dataclasses.replace(training.PRESETS["paper"], epochs=3, architecture="precise",
                                  seed=4)
    assert training.preset_overrides(changed, "paper") == {"epochs": 3}   # seed etc.: no preset's
    with pytest.raises(ConfigError) as info:
        training.preset_config("fast")
    assert str(info.value) == "preset must be one of tuned, paper, got 'fast'"


def test_training_records_the_preset(dataset):
    config = TrainingConfig(**dict(TINY, epochs=1, batches_per_epoch=1))
    meta = train_model(dataset, config, preset_name="paper").metadata
    assert meta["preset"] == "paper"
    assert meta["preset_overrides"] == {"hidden_size": 12, "epochs": 1, "batches_per_epoch": 1,
                                        "batch_size": 8, "learning_rate": 1e-2, "patience": 100}
    assert train_model(dataset, config).metadata["preset"] is None   # a config made by hand


def test_gap_weights_equalise_the_columns():
    rng = np.random.default_rng(0)
    gap = np.full(21, 1e-2)
    gap[3], gap[20] = 1e-4, 1e-8          # a small gap and one below the floor
    trajectories = []
    for _ in range(4):
        x = rng.uniform(0, 1, (500, 21))
        trajectories.append((x, x + rng.normal(0, 1, (500, 21)) * np.sqrt(gap)))
    weights = training.gap_weights(trajectories).numpy()
    measured = np.mean(np.concatenate([(y - x) ** 2 for x, y in trajectories]), axis=0)
    np.testing.assert_allclose(weights[:20] * measured[:20], 1.0, rtol=1e-5)
    assert weights[3] == pytest.approx(100 * weights[0], rel=0.1)
    assert weights[20] == pytest.approx(1.0 / (1e-3 * measured.max()), rel=1e-5)   # the floor
    with pytest.raises(ConfigError, match="no gap"):
        training.gap_weights([(x, x) for x, _ in trajectories])


def test_gap_weighting_trains_and_is_recorded(dataset):
    config = TrainingConfig(**dict(TINY, weighting="gap", epochs=3, batches_per_epoch=5))
    result = train_model(dataset, config)
    meta = result.metadata
    assert meta["config"]["weighting"] == "gap"
    assert meta["best_validation_loss"] < meta["initial_validation_loss"]


# --- training ----------------------------------------------------------------------------------

def _no_correction_loss(dataset, warmup):
    """Validation loss of a zero residual: the sim-to-real gap itself."""
    return float(np.mean(np.concatenate(
        [((r - s)[warmup:] ** 2).ravel() for s, r in dataset.trajectories("validation")])))


@pytest.mark.parametrize("architecture", ["precise", "realtime"])
def test_training_lowers_the_validation_loss(dataset, architecture):
    config = TrainingConfig(architecture=architecture, **TINY)
    epochs = []
    result = train_model(dataset, config, progress=epochs.append)
    meta, history = result.metadata, result.history
    warmup = 20 if architecture == "realtime" else 0
    assert [h["epoch"] for h in history] == list(range(13)) and epochs == history[1:]
    assert history[0]["train_loss"] is None
    assert meta["initial_validation_loss"] == history[0]["validation_loss"]
    assert meta["best_validation_loss"] == min(h["validation_loss"] for h in history)
    assert meta["best_validation_loss"] < 0.2 * meta["initial_validation_loss"]
    # it learnt the gap, not merely to output a small residual
    assert meta["best_validation_loss"] < 0.5 * _no_correction_loss(dataset, warmup)

    model = result.model
    assert model.architecture == architecture and model.warmup_steps == warmup
    assert model.rate == RATE and model.joint_names == dataset.joint_names
    assert model.scaler is dataset.scaler and not model.network.training
    assert meta["epochs_run"] == 12 and meta["stopped_early"] is None
    assert meta["trajectories"]["train"] == 9 and meta["data_label"] == LABEL
    assert meta["config"]["architecture"] == architecture and meta["seed"] == 0
    assert meta["device"] == "cpu" and meta["torch_version"] == torch.__version__
    # the returned weights are the best epoch's
    again = validation_loss(model.network, dataset.trajectories("validation"),
                            torch.ones(21), warmup)
    assert again == pytest.approx(meta["best_validation_loss"], rel=1e-5)


def test_training_is_deterministic_for_a_seed(dataset):
    small = dict(TINY, epochs=2, batches_per_epoch=3)
    a, b, c = (train_model(dataset, TrainingConfig(seed=s, **small)) for s in (5, 5, 6))
    strip = [{k: v for k, v in h.items() if k != "seconds"} for h in a.history]
    assert strip == [{k: v for k, v in h.items() if k != "seconds"} for h in b.history]
    for k, v in a.model.network.state_dict().items():
        assert torch.equal(v, b.model.network.state_dict()[k])
    assert a.history[-1]["train_loss"] != c.history[-1]["train_loss"]


def test_early_stopping_keeps_the_best_epoch(dataset, monkeypatch):
    losses = iter([1.0, 0.5, 0.4, 0.6, 0.7, 0.45, 0.3])
    monkeypatch.setattr(training, "validation_loss", lambda *args: next(losses))
    logged = []
    result = train_model(dataset, TrainingConfig(**dict(TINY, patience=3, batches_per_epoch=1)),
                         log=logged.append)
    meta = result.metadata
    assert meta["best_epoch"] == 2 and meta["best_validation_loss"] == 0.4
    assert meta["epochs_run"] == 5 and "no validation improvement for 3" in meta["stopped_early"]
    assert logged and "stopped early" in logged[-1]


def test_time_budget_stops_training(dataset):
    config = TrainingConfig(**dict(TINY, max_minutes=1e-6))
    meta = train_model(dataset, config).metadata
    assert meta["epochs_run"] == 1 and "time budget" in meta["stopped_early"]


def _replace(dataset, **changes):
    return dataclasses.replace(dataset, **changes)


def test_training_refuses_unusable_data(dataset):
    config = TrainingConfig(**TINY)

    def error(data, cfg=config):
        with pytest.raises(ConfigError) as info:
            train_model(data, cfg)
        assert "\n" not in str(info.value)
        return str(info.value)

    empty = _replace(dataset, sim=dataset.sim[:0], real=dataset.real[:0],
                     offsets=np.zeros(1, np.int64), trajectory_ids=dataset.trajectory_ids[:0],
                     kinds=dataset.kinds[:0], split=dataset.split[:0], shifts=dataset.shifts[:0])
    assert "empty" in error(empty)
    no_validation = np.where(dataset.split == "validation", "test", dataset.split)
    assert "no validation" in error(_replace(dataset, split=no_validation))
    assert "no train" in error(_replace(dataset, split=np.full(len(dataset), "validation")))
    assert "misaligned" in error(_replace(dataset, real=dataset.real[:-3]))
    nan = dataset.real.copy()
    nan[5, 3] = np.nan
    assert "non-finite" in error(_replace(dataset, real=nan))
    assert "input_size 42" in error(dataset, TrainingConfig(**dict(TINY, input_size=42)))
    long_warmup = TrainingConfig(**dict(TINY, warmup_seconds=5.0))
    assert "shorter than the warm-up" in error(dataset, long_warmup)


# --- the train tool ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def data_files(tmp_path_factory, dataset):
    folder = tmp_path_factory.mktemp("train")
    files = {"good": str(folder / "good.npz"), "empty": str(folder / "empty.npz"),
             "misaligned": str(folder / "misaligned.npz"), "missing": str(folder / "none.npz")}
    dataset.save(files["good"])
    _replace(dataset, sim=dataset.sim[:0], real=dataset.real[:0], offsets=np.zeros(1, np.int64),
             trajectory_ids=dataset.trajectory_ids[:0], kinds=dataset.kinds[:0],
             split=dataset.split[:0], shifts=dataset.shifts[:0]).save(files["empty"])
    _replace(dataset, real=dataset.real[:-10]).save(files["misaligned"])
    return files


def test_train_script_writes_a_loadable_model(data_files, tmp_path):
    out, js = str(tmp_path / "m.pt"), str(tmp_path / "m.json")
    proc = run_script("train", "--data", data_files["good"], "--model", "precise", "--out", out,
                      "--epochs", "2", "--batches-per-epoch", "3", "--hidden", "8",
                      "--batch-size", "4", "--weights", "1,1,2", "--device", "cpu", "--threads", "1",
                      "--json", js)
    assert proc.returncode == 0, proc.stderr
    assert "best epoch" in proc.stdout and f"data: {LABEL}" in proc.stdout
    model = load_model(out, architecture="precise")
    assert model.spec.hidden_size == 8 and model.rate == RATE
    figures = json.load(open(js))
    assert [h["epoch"] for h in figures["history"]] == [0, 1, 2]
    assert figures["best_epoch"] == model.metadata["best_epoch"]
    assert figures["config"]["torque_weight"] == 2.0 and figures["data_label"] == LABEL
    assert figures["preset"] == "tuned" and model.metadata["preset"] == "tuned"
    assert figures["preset_overrides"] == {"epochs": 2, "batches_per_epoch": 3, "hidden_size": 8,
                                           "batch_size": 4, "torque_weight": 2.0}


@pytest.mark.parametrize("case, expected", [
    ("missing", "not found"), ("empty", "empty"), ("misaligned", "inconsistent"),
    ("bad-model", "invalid choice")])
def test_train_script_fails_with_one_line(case, expected, data_files, tmp_path):
    data = data_files["good" if case == "bad-model" else case]
    model = "transformer" if case == "bad-model" else "realtime"
    proc = run_script("train", "--data", data, "--model", model, "--out", str(tmp_path / "m.pt"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("train: error: ") and expected in lines[0], lines
    assert not (tmp_path / "m.pt").exists()


def _train_tool():
    """The train script as a module (its parser without a subprocess)."""
    loader = importlib.machinery.SourceFileLoader("train_tool", os.path.join(SCRIPTS, "train"))
    spec = importlib.util.spec_from_loader("train_tool", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _parse(*options):
    tool = _train_tool()
    argv = ["--data", "d.npz", "--model", "realtime", "--out", "m.pt", *options]
    return tool.build_parser(tool._chosen_preset(argv)).parse_args(argv)


ARGS = {"hidden": "hidden_size", "layers": "num_layers", "dropout": "dropout",
        "weighting": "weighting", "batch_size": "batch_size",
        "batches_per_epoch": "batches_per_epoch", "lr": "learning_rate", "lr_decay": "lr_decay",
        "patience": "patience", "epochs": "epochs", "warmup_seconds": "warmup_seconds"}


@pytest.mark.parametrize("options, preset, values", [
    ((), "tuned", TUNED_VALUES), (("--preset", "tuned"), "tuned", TUNED_VALUES),
    (("--preset", "paper"), "paper", PAPER_VALUES), (("--preset=paper",), "paper", PAPER_VALUES),
    (("--pres", "paper"), "paper", PAPER_VALUES)])
def test_train_tool_defaults_come_from_the_preset(options, preset, values):
    args = _parse(*options)
    assert args.preset == preset
    assert {field: getattr(args, arg) for arg, field in ARGS.items()} == \
        {field: values[field] for field in ARGS.values()}
    assert args.weights == (1.0, 1.0, 1.0)


def test_train_tool_explicit_options_override_the_preset():
    args = _parse("--hidden", "32", "--preset", "paper", "--lr-decay", "0.3", "--dropout", "0")
    assert (args.preset, args.hidden, args.lr_decay, args.dropout) == ("paper", 32, 0.3, 0.0)
    # the rest: the paper's
    assert (args.weighting, args.batch_size, args.patience) == ("equal", 16, 15)
    args = _parse("--lr-decay", "none", "--weighting", "equal", "--epochs", "7")
    assert (args.lr_decay, args.weighting, args.epochs, args.hidden) == (None, "equal", 7, 64)


def test_train_tool_help_shows_the_presets(capsys):
    proc = run_script("train", "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "default tuned" in text and "(default 64)" in text
    assert ("tuned (default): --hidden 64 --layers 2 --dropout 0 --weighting gap --weights 1,1,1 "
            "--batch-size 32 --batches-per-epoch 50 --lr 0.003 --lr-decay 0.5 --patience 30 "
            "--epochs 400") in text
    assert ("paper: --hidden 21 --layers 2 --dropout 0.1 --weighting equal --weights 1,1,1 "
            "--batch-size 16 --batches-per-epoch 50 --lr 0.003 --lr-decay none --patience 15 "
            "--epochs 200") in text
    with pytest.raises(SystemExit) as info:
        _train_tool().main(["--preset", "paper", "--help"])
    paper = " ".join(capsys.readouterr().out.split())
    assert info.value.code == 0 and "(default 21)" in paper and "defaults shown: paper's" in paper


def test_train_tool_unknown_preset_fails_with_one_line(data_files, tmp_path):
    proc = run_script("train", "--data", data_files["good"], "--model", "realtime",
                      "--out", str(tmp_path / "m.pt"), "--preset", "fast")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("train: error: argument --preset: invalid choice: "
                                                   "'fast'"), lines
    assert not (tmp_path / "m.pt").exists()


@pytest.mark.parametrize("options, expected", [
    (("--preset",), "argument --preset: expected one argument"),
    (("--p", "paper"), "ambiguous option: --p could match --preset, --patience"),
    (("--lr-decay", "slow"), "expected a factor or 'none'")])
def test_train_tool_bad_options_give_one_line(options, expected, data_files, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        _train_tool().main(["--data", data_files["good"], "--model", "realtime",
                            "--out", str(tmp_path / "m.pt"), *options])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and err.startswith("train: error: ") and expected in err
    assert not (tmp_path / "m.pt").exists()


@pytest.mark.parametrize("preset", [None, "paper"])
def test_train_tool_records_the_preset(preset, data_files, tmp_path, capsys):
    out, js = str(tmp_path / "m.pt"), str(tmp_path / "m.json")
    options = () if preset is None else ("--preset", preset)
    assert _train_tool().main(["--data", data_files["good"], "--model", "realtime", "--out", out,
                               "--epochs", "1", "--batches-per-epoch", "1", "--device", "cpu",
                               "--json", js, *options]) == 0
    name = preset or "tuned"
    values = PAPER_VALUES if preset == "paper" else TUNED_VALUES
    overrides = {"epochs": 1, "batches_per_epoch": 1}
    assert f"preset: {name} with epochs 1, batches_per_epoch 1" in capsys.readouterr().out
    figures = json.load(open(js))
    assert figures["preset"] == name and figures["preset_overrides"] == overrides
    assert _values(TrainingConfig(**figures["config"]), values) == dict(values, **overrides)
    meta = load_model(out, architecture="realtime").metadata
    assert meta["preset"] == name and meta["preset_overrides"] == overrides
    assert meta["config"]["hidden_size"] == values["hidden_size"]
