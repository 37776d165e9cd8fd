"""The C++ real-time Realeasy step (paper 000 Algorithms 2-3): realeasy_ros.realtime and the
binding realeasy_ros._realtime_lstm, against the torch network it is built from."""
from __future__ import annotations

import copy
import subprocess

import numpy as np
import pytest
import torch

from panda_sim2real import ConfigError, JointLimits
from realeasy_ros.networks import ModelSpec, build_network
from realeasy_ros.model import RealeasyModel
from panda_pairs import JointLimitScaler
from realeasy_ros.realtime import RealtimeResidual
from realeasy_ros._realtime_lstm import RealtimeLstm

SPECS = [ModelSpec(), ModelSpec(hidden_size=32, num_layers=3), ModelSpec(hidden_size=8, num_layers=1)]
STEPS = 300


@pytest.fixture(scope="module")
def limits() -> JointLimits:
    return JointLimits.from_yaml()


@pytest.fixture(scope="module")
def scaler(limits) -> JointLimitScaler:
    return JointLimitScaler.from_limits(limits)


def make_model(spec: ModelSpec, scaler: JointLimitScaler, warmup: int = 0,
               seed: int = 0) -> RealeasyModel:
    torch.manual_seed(seed)
    network = build_network(spec).eval()
    with torch.no_grad():    # larger than the default init, so the gates leave their linear range
        for p in network.parameters():
            p.mul_(3.0)
    return RealeasyModel(network, spec, scaler, scaler.joint_names, 100.0, warmup)


def states(scaler: JointLimitScaler, steps: int = STEPS, seed: int = 1) -> np.ndarray:
    """A smooth random walk of physical states inside (and a little beyond) the limits."""
    rng = np.random.default_rng(seed)
    walk = 0.5 + np.cumsum(rng.normal(0.0, 0.05, (steps, scaler.lower.size)), axis=0)
    return scaler.inverse_transform(np.clip(walk, -0.1, 1.1))


def assert_within(actual: np.ndarray, expected: np.ndarray, relative: float,
                  scale: np.ndarray) -> None:
    """|actual - expected| <= relative * scale, per column."""
    error = np.abs(actual - expected) / scale
    assert error.max() <= relative, f"max error {error.max():.3g} of scale > {relative:g}"


def run(realtime: RealtimeResidual, xs: np.ndarray):
    """(corrected, residual, applied) of update() over xs."""
    corrected, residual = np.empty_like(xs), np.empty_like(xs)
    applied = np.empty(len(xs), dtype=bool)
    c, r = np.empty(xs.shape[1]), np.empty(xs.shape[1])
    for t, x in enumerate(xs):
        applied[t] = realtime.update(np.ascontiguousarray(x), c, r)
        corrected[t], residual[t] = c, r
    return corrected, residual, applied


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"H{s.hidden_size}L{s.num_layers}")
def test_step_equals_torch_forward_over_a_sequence(spec, scaler):
    model = make_model(spec, scaler)
    xs = states(scaler)
    _, residual, applied = run(RealtimeResidual(model), xs)
    assert applied.all()
    expected = model.residual(xs, warmup=False)      # float32 torch forward of the whole sequence
    assert np.abs(expected).max() > 1e-2 * scaler.scale.max()     # not a trivially small output
    assert_within(residual, expected, 1e-5, scaler.scale)
    # against the same network in float64 the C++ step agrees to rounding
    network64 = copy.deepcopy(model.network).double()
    with torch.no_grad():
        exact = network64(torch.from_numpy(scaler.transform(xs))[None])[0].numpy() * scaler.scale
    assert_within(residual, exact, 1e-11, scaler.scale)


@pytest.mark.parametrize("spec", SPECS[:2], ids=lambda s: f"H{s.hidden_size}L{s.num_layers}")
def test_step_equals_torch_step_state_by_state(spec, scaler):
    model = make_model(spec, scaler, seed=3)
    network64 = copy.deepcopy(model.network).double()
    realtime = RealtimeResidual(model)
    corrected, residual = np.empty(spec.input_size), np.empty(spec.input_size)
    state = None
    with torch.no_grad():
        for x in states(scaler, 60, seed=4):
            realtime.update(x, corrected, residual)
            out, state = network64.step(torch.from_numpy(scaler.transform(x)), state)
            h, c = realtime.hidden_state
            assert h.shape == c.shape == (spec.num_layers, spec.hidden_size)
            np.testing.assert_allclose(h, state[0][:, 0].numpy(), rtol=0, atol=1e-12)
            np.testing.assert_allclose(c, state[1][:, 0].numpy(), rtol=0, atol=1e-12)
            np.testing.assert_allclose(residual, out.numpy() * scaler.scale, rtol=1e-12,
                                       atol=1e-12)


def test_warmup_passes_the_state_through_then_corrects_and_reset_restarts(scaler):
    warmup = 7
    model = make_model(ModelSpec(), scaler, warmup=warmup)
    xs = states(scaler, 40)
    realtime = RealtimeResidual(model)
    assert realtime.warmup_steps == warmup and realtime.steps == 0 and not realtime.warmed_up
    corrected, residual, applied = run(realtime, xs)
    assert realtime.steps == len(xs) and realtime.warmed_up
    assert not applied[:warmup].any() and applied[warmup:].all()
    np.testing.assert_array_equal(corrected[:warmup], xs[:warmup])        # Algorithm 2: x_t as is
    np.testing.assert_array_equal(residual[:warmup], 0.0)
    np.testing.assert_array_equal(corrected[warmup:], xs[warmup:] + residual[warmup:])
    assert np.abs(residual[warmup:]).min() > 0.0
    assert_within(corrected, model.correct(xs), 1e-5, scaler.scale)
    # the hidden state filled during warm-up is the one the corrections use
    full = model.residual(xs, warmup=False)
    assert_within(residual[warmup:], full[warmup:], 1e-5, scaler.scale)

    realtime.reset()
    assert realtime.steps == 0 and not realtime.warmed_up
    assert not realtime.hidden_state[0].any() and not realtime.hidden_state[1].any()
    again = run(realtime, xs)
    for first, second in zip((corrected, residual, applied), again):
        np.testing.assert_array_equal(first, second)


def test_no_warmup_corrects_from_the_first_step_and_in_place(scaler):
    model = make_model(ModelSpec(), scaler, warmup=0)
    realtime = RealtimeResidual(model)
    assert realtime.warmed_up
    x = states(scaler, 1)[0]
    inplace, residual = x.copy(), np.empty(21)
    assert realtime.update(inplace, inplace, residual)            # corrected_out may be x
    np.testing.assert_allclose(inplace, model.correct(x[None])[0], rtol=0,
                               atol=1e-5 * scaler.scale.max())
    assert realtime.joint_names == scaler.joint_names and realtime.dof == 7


def test_precise_model_is_refused(scaler):
    with pytest.raises(ConfigError, match="realtime"):
        RealtimeResidual(make_model(ModelSpec(architecture="precise"), scaler))


def test_bad_arrays_raise_value_error_and_leave_the_state_alone(scaler):
    realtime = RealtimeResidual(make_model(ModelSpec(), scaler, warmup=2))
    x, corrected, residual = states(scaler, 1)[0].copy(), np.empty(21), np.empty(21)
    realtime.update(x, corrected, residual)
    h_before, c_before = realtime.hidden_state
    read_only = np.empty(21)
    read_only.flags.writeable = False
    good = {"x": x, "corrected_out": corrected, "residual_out": residual}
    bad_arrays = {
        "float32": x.astype(np.float32), "short": x[:20], "long": np.zeros(22),
        "2-D": x.reshape(3, 7), "strided": np.zeros(42)[::2], "big-endian": x.astype(">f8"),
        "list": list(x), "int": x.astype(np.int64), "read-only": read_only, "None": None,
    }
    for slot in good:
        for what, bad in bad_arrays.items():
            if what == "read-only" and slot == "x":
                continue                       # a read-only input is fine
            args = dict(good, **{slot: bad})
            with pytest.raises(ValueError):
                realtime.update(**args)
                pytest.fail(f"{slot} {what} accepted")
            assert realtime.steps == 1, (slot, what)
    with pytest.raises(ValueError, match="own"):
        realtime.update(x, corrected, x)
    h_after, c_after = realtime.hidden_state
    np.testing.assert_array_equal(h_before, h_after)
    np.testing.assert_array_equal(c_before, c_after)
    realtime.update(read_only, corrected, residual)               # read-only x is accepted
    assert realtime.steps == 2


def _weights(F=21, H=21, L=2):
    rng = np.random.default_rng(0)
    return dict(weight_ih=[rng.normal(size=(4 * H, F if k == 0 else H)) for k in range(L)],
                weight_hh=[rng.normal(size=(4 * H, H)) for _ in range(L)],
                bias_ih=[rng.normal(size=4 * H) for _ in range(L)],
                bias_hh=[rng.normal(size=4 * H) for _ in range(L)],
                dense_weight=rng.normal(size=(F, H)), dense_bias=rng.normal(size=F),
                lower=rng.normal(size=F), scale=rng.uniform(1.0, 2.0, size=F))


def test_binding_constructor_checks_shapes():
    lstm = RealtimeLstm(**_weights(F=6, H=5, L=3))
    assert (lstm.input_size, lstm.hidden_size, lstm.num_layers) == (6, 5, 3)
    out = np.empty(6)
    lstm.step(np.ones(6), out)
    assert np.isfinite(out).all() and np.abs(np.array(lstm.h)).max() > 0
    lstm.reset()
    assert not np.array(lstm.h).any() and not np.array(lstm.c).any()

    w = _weights()
    broken = {
        "weight_hh of layer 1 must be 84 x 21": dict(weight_hh=[w["weight_hh"][0], np.ones((84, 20))]),
        "weight_ih of layer 1 must be 84 x 21": dict(weight_ih=[w["weight_ih"][0], np.ones((84, 42))]),
        "bias_ih of layer 0 must have 84": dict(bias_ih=[np.ones(80), w["bias_ih"][1]]),
        "one entry per layer": dict(bias_hh=w["bias_hh"][:1]),
        "at least one LSTM layer": dict(weight_ih=[], weight_hh=[], bias_ih=[], bias_hh=[]),
        "dense_weight must be 21 x 21": dict(dense_weight=np.ones((20, 21))),
        "dense_bias must have 21": dict(dense_bias=np.ones(22)),
        "lower must have 21": dict(lower=np.ones(7)),
        "scale .* positive": dict(scale=np.r_[np.ones(20), 0.0]),
        "non-finite": dict(dense_bias=np.r_[np.ones(20), np.nan]),
        "float64": dict(lower=np.ones(21, dtype=np.float32)),
        "dimension": dict(dense_weight=np.ones(21)),
    }
    for message, change in broken.items():
        with pytest.raises(ValueError, match=message):
            RealtimeLstm(**dict(w, **change))


def test_model_that_does_not_fit_the_scaler_is_a_config_error(scaler):
    model = make_model(ModelSpec(input_size=6, hidden_size=4), scaler)
    with pytest.raises(ConfigError, match="lower must have 6"):
        RealtimeResidual(model)


def test_cpp_step_allocates_nothing_and_matches_the_naive_equations():
    """realtime_lstm_check (built by catkin from test/realtime_lstm_check.cpp) counts heap
    allocations during step() and compares it with a naive eq. (2)-(7)."""
    from catkin.find_in_workspaces import find_in_workspaces
    found = find_in_workspaces(["libexec"], project="realeasy_ros", path="realtime_lstm_check",
                               first_match_only=True)
    assert found, "realtime_lstm_check is not built: run 'make workspace' and 'source env.sh'"
    done = subprocess.run(found, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stdout + done.stderr
