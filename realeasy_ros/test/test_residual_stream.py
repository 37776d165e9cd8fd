"""The live-stream layer of the residual publisher: joint mapping by name, bad samples rejected
without touching the hidden state, warm-up and resets (paper 000 Algorithms 2-3)."""
import numpy as np
import pytest
import torch

from panda_sim2real import JointLimits
from realeasy_ros.networks import ModelSpec, build_network
from realeasy_ros.model import RealeasyModel
from panda_pairs import JointLimitScaler
from realeasy_ros.residual_stream import (InvalidJointState, JointStateLayout, LatencyStats,
                                          ResidualStream)

WARMUP = 4


@pytest.fixture(scope="module")
def limits():
    return JointLimits.from_yaml()


@pytest.fixture(scope="module")
def model(limits):
    torch.manual_seed(3)
    spec = ModelSpec(hidden_size=8)
    return RealeasyModel(build_network(spec), spec, JointLimitScaler.from_limits(limits),
                         limits.joint_names, 100.0, WARMUP, {})


def samples(limits, n=30, seed=0):
    rng = np.random.default_rng(seed)
    q = limits.home + rng.normal(0, 0.2, (n, 7))
    qd = rng.normal(0, 0.5, (n, 7))
    tau = rng.normal(0, 5.0, (n, 7))
    return np.arange(n) * 0.01, q, qd, tau


def test_layout_maps_by_name(limits):
    layout = JointStateLayout(limits.joint_names)
    out = np.zeros(21)
    names = list(reversed(limits.joint_names)) + ["panda_finger_joint1"]
    q = np.arange(7.0)
    layout.fill(names, list(q[::-1]) + [9.0], list(10 + q[::-1]) + [9.0],
                list(20 + q[::-1]) + [9.0], out)
    np.testing.assert_array_equal(out, np.concatenate([q, 10 + q, 20 + q]))
    layout.fill(limits.joint_names, q, q, q, out)       # the model's order: the fast path
    np.testing.assert_array_equal(out, np.concatenate([q, q, q]))


@pytest.mark.parametrize("case,expected", [
    ("missing", "missing joint(s) panda_joint7"),
    ("length", "velocity has 5 values for 7 joint names"),
    ("nan", "NaN/Inf in position of panda_joint3"),
    ("inf", "NaN/Inf in effort of panda_joint1"),
    ("duplicate", "duplicate joint names"),
])
def test_layout_names_the_problem(limits, case, expected):
    layout = JointStateLayout(limits.joint_names)
    names, q = list(limits.joint_names), np.zeros(7)
    qd, tau = q.copy(), q.copy()
    if case == "missing":
        names, q, qd, tau = names[:6], q[:6], qd[:6], tau[:6]
    elif case == "length":
        qd = qd[:5]
    elif case == "nan":
        q[2] = np.nan
    elif case == "inf":
        tau[0] = -np.inf
    elif case == "duplicate":
        names[1] = names[0]
    with pytest.raises(InvalidJointState, match=expected.replace("(", r"\(").replace(")", r"\)")):
        layout.fill(names, q, qd, tau, np.zeros(21))


def test_bad_samples_leave_the_hidden_state_alone(limits, model):
    t, q, qd, tau = samples(limits)
    clean, noisy = ResidualStream(model), ResidualStream(model)
    for k in range(len(t)):
        if k in (3, 10, 17):
            bad_q = q[k].copy()
            bad_q[0] = np.nan
            with pytest.raises(InvalidJointState):
                noisy.process(t[k], limits.joint_names, bad_q, qd[k], tau[k])
        clean.process(t[k], limits.joint_names, q[k], qd[k], tau[k])
        noisy.process(t[k], limits.joint_names, q[k], qd[k], tau[k])
        np.testing.assert_array_equal(clean.corrected, noisy.corrected)
    assert noisy.counters.rejected == 3 and noisy.counters.messages == len(t) + 3
    assert noisy.counters.warmup == WARMUP and noisy.counters.corrected == len(t) - WARMUP


def test_warmup_passes_the_state_through_then_corrects(limits, model):
    t, q, qd, tau = samples(limits)
    stream = ResidualStream(model)
    expected = model.correct(np.concatenate([q, qd, tau], axis=1))
    for k in range(len(t)):
        applied = stream.process(t[k], limits.joint_names, q[k], qd[k], tau[k])
        x = np.concatenate([q[k], qd[k], tau[k]])
        assert applied == (k >= WARMUP)
        if k < WARMUP:
            np.testing.assert_array_equal(stream.corrected, x)
            np.testing.assert_array_equal(stream.residual, 0.0)
        np.testing.assert_allclose(stream.corrected, expected[k], atol=1e-4 * np.abs(x).max())


def test_time_jump_backwards_resets(limits, model):
    t, q, qd, tau = samples(limits, n=12)
    stream = ResidualStream(model)
    for k in range(len(t)):
        stream.process(t[k], limits.joint_names, q[k], qd[k], tau[k])
    first = stream.corrected.copy()
    assert stream.process(0.0, limits.joint_names, q[0], qd[0], tau[0]) is False
    assert stream.counters.resets == 1
    fresh = ResidualStream(model)
    fresh.process(0.0, limits.joint_names, q[0], qd[0], tau[0])
    np.testing.assert_array_equal(stream.corrected, fresh.corrected)
    assert not np.array_equal(first, stream.corrected)


def test_latency_stats_ring_buffer():
    stats = LatencyStats(capacity=100)
    assert stats.summary()["samples"] == 0
    for k in range(250):
        stats.add((k % 100) * 1e-6)
    summary = stats.summary()
    assert summary["samples"] == 100 and stats.count == 250
    assert summary["median_us"] == pytest.approx(49.5)
    assert summary["max_us"] == pytest.approx(99.0)
    with pytest.raises(ValueError):
        LatencyStats(capacity=0)


def test_bounds_of_a_measured_state_reject_without_touching_the_hidden_state(limits, model):
    t, q, qd, tau = samples(limits)
    clean = ResidualStream(model, limits.bounds(measured=True))
    noisy = ResidualStream(model, limits.bounds(measured=True))
    beyond = {"velocity": 2.5 * limits.velocity, "effort": -2.5 * limits.effort,
              "position": limits.position_max + 0.2}
    for k in range(len(t)):
        if k in (4, 9, 15):
            field = ("velocity", "effort", "position")[(4, 9, 15).index(k)]
            values = {"position": q[k].copy(), "velocity": qd[k].copy(), "effort": tau[k].copy()}
            values[field][k % 7] = beyond[field][k % 7]
            with pytest.raises(InvalidJointState, match=f"panda_joint{k % 7 + 1}") as caught:
                noisy.process(t[k], limits.joint_names, values["position"], values["velocity"],
                              values["effort"])
            assert caught.value.reason == "bounds"
        clean.process(t[k], limits.joint_names, q[k], qd[k], tau[k])
        noisy.process(t[k], limits.joint_names, q[k], qd[k], tau[k])
        np.testing.assert_array_equal(clean.corrected, noisy.corrected)
    assert noisy.counters.rejected == 3
    # a measured state may pass its limits a little (overshoot, a collision torque)
    fast = limits.velocity * 1.5
    hard = limits.effort * 1.5
    noisy.process(t[-1] + 0.01, limits.joint_names, limits.position_max + 0.05, fast, hard)
    assert noisy.counters.rejected == 3


def test_the_fuzz_tests_model_adds_its_torque_residual_whatever_the_state(limits):
    """test/fuzz.test expects the corrected torque of a good state to be the torque plus
    EFFORT_RESIDUAL (make_fuzz_model.py); the other residuals come from the LSTM."""
    from make_fuzz_model import EFFORT_RESIDUAL, fuzz_model
    model = fuzz_model()
    model.warmup_steps = 0
    stream = ResidualStream(model, limits.bounds(measured=True))
    t, q, qd, tau = samples(limits, n=40, seed=4)
    for k in range(len(t)):
        stream.process(t[k], limits.joint_names, q[k], qd[k], tau[k])
        np.testing.assert_allclose(stream.residual[14:], EFFORT_RESIDUAL, atol=1e-5)
    assert np.all(np.abs(stream.residual[:14]) > 1e-3)
