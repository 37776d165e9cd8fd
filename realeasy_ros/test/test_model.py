"""The Realeasy networks (paper 000 §IV-C, Algorithms 1-3), the MSrE loss (§IV-A, eq. 9-10) and
the model file (safe loading: no code runs from a model file)."""
import os
import pickle

import numpy as np
import pytest
import torch

from panda_sim2real import ConfigError, JointLimits
from realeasy_ros.networks import (ModelSpec, PreciseRealeasy, RealtimeRealeasy, build_network,
                                channel_weights, msre_loss)
from realeasy_ros.model import FORMAT, RealeasyModel, load_model
from panda_pairs import JointLimitScaler


@pytest.fixture(scope="module")
def limits():
    return JointLimits.from_yaml()


def _model(architecture="realtime", hidden=21, seed=0, limits=None):
    torch.manual_seed(seed)
    spec = ModelSpec(architecture, hidden_size=hidden)
    limits = limits or JointLimits.from_yaml()
    return RealeasyModel(build_network(spec).eval(), spec, JointLimitScaler.from_limits(limits),
                         tuple(limits.joint_names), 100.0, 20,
                         {"best_epoch": 3, "config": {"seed": 0, "max_minutes": None}})


def _states(limits, steps=40, seed=0):
    """Physical states (steps, 21) inside the joint limits."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.2, 0.8, size=(steps, 21))
    return JointLimitScaler.from_limits(limits).inverse_transform(s)


# --- networks ----------------------------------------------------------------------------------

@pytest.mark.parametrize("architecture", ["precise", "realtime"])
def test_output_shape_is_batch_time_21(architecture):
    net = build_network(ModelSpec(architecture)).eval()
    assert net(torch.rand(3, 17, 21)).shape == (3, 17, 21)


def test_default_sizes_follow_the_paper():
    spec = ModelSpec()
    assert (spec.architecture, spec.input_size, spec.hidden_size, spec.num_layers) == \
        ("realtime", 21, 21, 2)
    realtime = RealtimeRealeasy(spec)
    assert realtime.lstm.num_layers == 2 and realtime.lstm.hidden_size == 21
    assert not realtime.lstm.bidirectional
    assert realtime.dense.in_features == 21 and realtime.dense.out_features == 21


def test_precise_concatenates_then_sums():
    net = PreciseRealeasy(ModelSpec("precise", hidden_size=8)).eval()
    assert len(net.layers) == 2 and all(layer.bidirectional for layer in net.layers)
    assert net.layers[0].input_size == 21
    assert net.layers[1].input_size == 16          # [h_f^0, h_b^0] concatenated: 2H
    assert net.dense.in_features == 8              # h^1 = h_f^1 + h_b^1: H
    x = torch.rand(2, 11, 21)
    h, _ = net.layers[1](net.layers[0](x)[0])
    np.testing.assert_allclose(net(x).detach(), net.dense(h[..., :8] + h[..., 8:]).detach(),
                               rtol=0, atol=1e-6)


def test_precise_sees_the_future_realtime_does_not():
    x = torch.rand(1, 30, 21)
    later = x.clone()
    later[0, 20:] += 0.5
    for architecture, depends in (("precise", True), ("realtime", False)):
        torch.manual_seed(1)
        net = build_network(ModelSpec(architecture)).eval()
        changed = not torch.allclose(net(x)[0, :20], net(later)[0, :20])
        assert changed == depends, architecture


def test_realtime_step_equals_forward():
    torch.manual_seed(2)
    net = RealtimeRealeasy(ModelSpec()).eval()
    x = torch.rand(2, 25, 21)
    whole = net(x)
    state, steps = None, []
    for t in range(x.shape[1]):
        out, state = net.step(x[:, t], state)
        steps.append(out)
    np.testing.assert_allclose(torch.stack(steps, 1).detach(), whole.detach(), rtol=0, atol=1e-6)
    single, state = net.step(x[0, 0])                # unbatched (21,) input
    assert single.shape == (21,) and state[0].shape == (2, 1, 21)
    np.testing.assert_allclose(single.detach(), whole[0, 0].detach(), rtol=0, atol=1e-6)


def test_spec_rejects_bad_values():
    for kwargs in ({"architecture": "cnn"}, {"hidden_size": 0}, {"num_layers": 1.5},
                   {"dropout": 1.0}):
        with pytest.raises(ValueError):
            ModelSpec(**kwargs)
    with pytest.raises(ValueError):
        ModelSpec.from_dict({"architecture": "realtime", "colour": "red"})


# --- loss --------------------------------------------------------------------------------------

def test_msre_loss_is_the_mse_of_y_minus_corrected_x():
    g = torch.Generator().manual_seed(3)
    x, y, r = (torch.rand(2, 9, 21, generator=g) for _ in range(3))
    manual = ((y - (x + r)) ** 2).mean()
    assert torch.isclose(msre_loss(x, y, r), manual)
    assert torch.isclose(msre_loss(x, y, r, weights=channel_weights()), manual)
    assert torch.isclose(msre_loss(x, y, r, weights=3.0 * channel_weights()), manual)
    assert float(msre_loss(x, x + r, r)) == 0.0


def test_msre_weights_are_normalised_per_channel():
    x = torch.zeros(1, 4, 21)
    r = torch.zeros(1, 4, 21)
    y = torch.zeros(1, 4, 21)
    y[..., 14:] = 1.0                                  # only the torques differ
    plain = float(msre_loss(x, y, r))                  # 7 of 21 columns: 1/3
    assert plain == pytest.approx(1.0 / 3.0)
    torque_only = float(msre_loss(x, y, r, weights=channel_weights(0.0, 0.0, 1.0)))
    assert torque_only == pytest.approx(1.0)           # weights mean 1/3 -> torques count 3x
    assert float(msre_loss(x, y, r, weights=channel_weights(1.0, 1.0, 0.0))) == 0.0
    w = channel_weights(1.0, 2.0, 3.0)
    assert w.shape == (21,) and float(w[0]) == 1.0 and float(w[7]) == 2.0 and float(w[20]) == 3.0
    for bad in ((0.0, 0.0, 0.0), (-1.0, 1.0, 1.0), (float("nan"), 1.0, 1.0)):
        with pytest.raises(ValueError):
            channel_weights(*bad)


def test_msre_mask_excludes_steps():
    x = torch.zeros(2, 6, 21)
    r = torch.zeros(2, 6, 21)
    y = torch.zeros(2, 6, 21)
    y[:, :2] = 100.0                                   # huge error in the (masked) warm-up
    y[:, 2:] = 0.5
    mask = torch.ones(2, 6)
    mask[:, :2] = 0.0
    assert float(msre_loss(x, y, r, mask=mask)) == pytest.approx(0.25)
    assert float(msre_loss(x, y, r)) > 1000.0
    with pytest.raises(ValueError, match="no time step"):
        msre_loss(x, y, r, mask=torch.zeros(2, 6))


# --- model file --------------------------------------------------------------------------------

@pytest.mark.parametrize("architecture", ["precise", "realtime"])
def test_model_file_round_trip(architecture, limits, tmp_path):
    model = _model(architecture, hidden=12, limits=limits)
    path = str(tmp_path / "m.pt")
    model.save(path)
    loaded = load_model(path, architecture=architecture)
    assert loaded.spec == model.spec and loaded.joint_names == model.joint_names
    assert loaded.rate == 100.0 and loaded.warmup_steps == 20
    assert loaded.metadata == model.metadata
    assert loaded.data_label == "unknown data"
    loaded.metadata["data_label"] = "reality stand-in"
    assert loaded.data_label == "reality stand-in"
    np.testing.assert_array_equal(loaded.scaler.lower, model.scaler.lower)
    np.testing.assert_array_equal(loaded.scaler.upper, model.scaler.upper)
    assert loaded.scaler.joint_names == model.scaler.joint_names
    states = _states(limits)
    np.testing.assert_array_equal(loaded.correct(states), model.correct(states))
    assert not os.path.exists(path + ".tmp")


def test_realtime_residual_is_zero_during_warmup(limits):
    model = _model("realtime", limits=limits)
    residual = model.residual(_states(limits))
    assert residual.shape == (40, 21)
    assert np.all(residual[:20] == 0.0) and np.any(residual[20:] != 0.0)
    assert np.any(model.residual(_states(limits), warmup=False)[:20] != 0.0)


class _Payload:
    """Unpickling this object would create the marker file: a model file must never do that."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _error(path, **kwargs):
    with pytest.raises(ConfigError) as info:
        load_model(str(path), **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_load_model_refuses_bad_files(limits, tmp_path):
    assert "not found" in _error(tmp_path / "missing.pt")
    junk = tmp_path / "junk.pt"
    for data in (b"this is not a model file\n" * 20, bytes(range(256))):
        junk.write_bytes(data)
        assert str(junk) in _error(junk)

    good = tmp_path / "good.pt"
    _model(limits=limits).save(str(good))
    payload = torch.load(str(good), weights_only=True)

    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    torch.save(dict(payload, metadata={"note": _Payload(str(marker))}), str(evil))
    assert "refused" in _error(evil)
    assert not marker.exists()
    # a raw pickle (not a torch zip) carrying the payload is refused as well
    raw = tmp_path / "evil.pkl"
    with open(raw, "wb") as f:
        pickle.dump({"format": FORMAT, "note": _Payload(str(marker))}, f, protocol=4)
    assert "safe loader stopped" in _error(raw) and "weights_only` set to `False" not in _error(raw)
    assert not marker.exists()
    torch.load(str(evil), weights_only=False)          # the payload is live: plain
    assert marker.exists()                             # unpickling runs it

    def variant(name, **changes):
        path = tmp_path / name
        torch.save(dict(payload, **changes), str(path))
        return path

    assert FORMAT in _error(variant("format.pt", format="something/else"))
    assert "version" in _error(variant("version.pt", version=99))
    other = _model(hidden=8, limits=limits).network.state_dict()
    assert "size mismatch" in _error(variant("hidden.pt", state_dict=other))
    assert "precise" in _error(good, architecture="precise")
    nan_state = {k: torch.full_like(v, float("nan")) for k, v in payload["state_dict"].items()}
    assert "non-finite" in _error(variant("nan.pt", state_dict=nan_state))
    incomplete = {k: v for k, v in payload.items() if k != "scaler_lower"}
    path = tmp_path / "incomplete.pt"
    torch.save(incomplete, str(path))
    assert "scaler_lower" in _error(path)


def test_check_compatible(limits):
    model = _model(limits=limits)
    model.check_compatible(limits.joint_names)
    with pytest.raises(ConfigError, match="model is for joints"):
        model.check_compatible(list(reversed(limits.joint_names)))
    with pytest.raises(ConfigError):
        model.check_compatible(limits.joint_names[:6])
