"""Online identification (paper 002 §4.1.2) from a sample stream, without ROS: learning from
torques of a known model, streaming Savitzky-Golay derivatives, bad samples, non-finite steps,
thread safety, URDF/YAML export."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
import torch
import yaml

from diffnea_ros.algorithms import rnea
from diffnea_ros.errors import DiffneaError
from diffnea_ros.identification import Samples, evaluate_nmse
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.joint_stream import InvalidSample, JointStateMapper, StreamingDerivatives
from diffnea_ros.online_identifier import OnlineConfig, OnlineIdentifier
from diffnea_ros.urdf import load_robot, lock_joints, with_inertials

pybullet_data = pytest.importorskip("pybullet_data")
IIWA = os.path.join(pybullet_data.getDataPath(), "kuka_iiwa", "model.urdf")
PANDA = os.path.join(pybullet_data.getDataPath(), "franka_panda", "panda.urdf")
RATE = 250.0
# Table 1's excitation (periods [s], amplitudes [rad]), four times faster: 20 s excite all joints
PERIODS = np.array([23.0, 19.0, 17.0, 13.0, 11.0, 7.0, 5.0]) / 4.0
AMPLITUDES = 1.5 * np.array([0.7, 0.5, 0.5, 0.5, 0.65, 0.65, 0.7])


@pytest.fixture(scope="module")
def iiwa():
    return load_robot(IIWA)


def sines(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    w = 2.0 * np.pi / PERIODS
    phase = w * t[:, None]
    return AMPLITUDES * np.sin(phase), AMPLITUDES * w * np.cos(phase), -AMPLITUDES * w ** 2 * np.sin(phase)


@pytest.fixture(scope="module")
def stream(iiwa):
    """20 s at 250 Hz of the true iiwa (the URDF's values) tracking sines: t, q, qd, qdd, tau."""
    t = 1.0 + np.arange(int(20 * RATE)) / RATE
    q, qd, qdd = sines(t)
    model = RigidBodyModel(iiwa)
    tau = rnea(model, *(torch.from_numpy(x) for x in (q, qd, qdd))).numpy()
    return t, q, qd, qdd, tau


def perturbed(description, seed=0):
    """The same robot with masses, inertias (x 0.6..1.4) and CoMs (+- 2 cm) perturbed."""
    rng = np.random.default_rng(seed)
    n = len(description.bodies)
    mass = np.array([b.mass for b in description.bodies]) * rng.uniform(0.6, 1.4, n)
    com = np.array([b.com for b in description.bodies]) + rng.normal(0.0, 0.02, (n, 3))
    inertia = np.array([b.inertia for b in description.bodies]) * rng.uniform(0.6, 1.4, (n, 1, 1))
    return with_inertials(description, mass, com, inertia)


def feed(identifier, stream, stop=None):
    t, q, qd, _, tau = stream
    for k in range(len(t) if stop is None else stop):
        identifier.add(t[k], q[k], qd[k], tau[k], tag=k)


def true_nmse(identifier, stream):
    """Mean NMSE over joints on the whole stream with the exact accelerations."""
    _, q, qd, qdd, tau = stream
    return float(np.mean(evaluate_nmse(identifier.dynamics, Samples.from_arrays(q, qd, qdd, tau))))


def test_online_batches_then_replay_lower_the_nmse(iiwa, stream):
    identifier = OnlineIdentifier(perturbed(iiwa), OnlineConfig(parametrisation="cov", replay=False))
    before = true_nmse(identifier, stream)
    feed(identifier, stream)
    kinds = []
    while (kind := identifier.step()) != "idle":
        kinds.append(kind)
    # paper 002 §4.1.2: every finished sample once, in sequential batches of 256
    samples = identifier.snapshot().samples
    assert kinds == ["new"] * (samples // 256)
    online = true_nmse(identifier, stream)
    assert online < 0.6 * before, (before, online)
    for _ in range(60):
        assert identifier.step(replay=True) == "replay"
    replayed = true_nmse(identifier, stream)
    assert replayed < 0.05 * before, (before, online, replayed)
    snap = identifier.snapshot()
    assert snap.consistent and snap.updates == len(kinds) + 60
    assert snap.nmse.shape == (7,) and np.all(np.isfinite(snap.nmse))
    # what it predicts for the stream's samples (causal qdd) got better too
    predictions = identifier.drain_predictions()
    assert [tag for tag, _ in predictions] == list(range(len(stream[0])))
    assert identifier.drain_predictions() == []
    _, q, qd, qdd, tau = stream
    late = slice(200, None)   # after the first causal window
    predicted = np.array([p for _, p in predictions])
    exact = identifier.predict(q, qd, qdd)
    error = np.mean((predicted[late] - tau[late]) ** 2, axis=0) / tau.var(axis=0)
    assert np.mean(error) < 0.05 * before
    # the causal qdd costs little accuracy against the exact one on smooth sines
    np.testing.assert_allclose(predicted[late], exact[late], atol=0.02 * np.abs(tau).max())


def test_streaming_derivatives_are_zero_phase_and_segmented():
    dt = 1.0 / RATE
    derivatives = StreamingDerivatives(dof=7, window_seconds=0.1)   # 25 samples
    t = 5.0 + np.arange(1000) * dt
    t[600:] += 1.0                   # a gap of 1 s: a second segment
    q, qd, qdd = sines(t)
    blocks = []
    for k in range(len(t)):
        _, qdd_causal, block = derivatives.push(t[k], q[k], None, q[k])
        if block is not None:
            blocks.append(block)
        if k in (100, 500):          # causal: the fit at the newest sample lags a little
            assert np.abs(qdd_causal - qdd[k]).max() < 0.08 * np.abs(qdd).max()
    assert derivatives.segments == 2
    got_t = np.concatenate([b.t for b in blocks])
    index = np.searchsorted(t, got_t)
    np.testing.assert_array_equal(t[index], got_t)
    half = derivatives.window // 2
    # exactly the samples with a whole centred window: none across the gap, the first
    # segment's last ones finished when the second began, the stream's tail still waiting
    first = np.arange(half, 600 - half)
    np.testing.assert_array_equal(index[:len(first)], first)
    second = index[len(first):]
    assert second[0] == 600 + half and np.all(np.diff(second) == 1) and second[-1] < 1000 - half
    np.testing.assert_allclose(np.concatenate([b.qdd for b in blocks]), qdd[index],
                               atol=0.006 * np.abs(qdd).max())   # vs 8 % causal
    np.testing.assert_allclose(np.concatenate([b.qd for b in blocks]), qd[index],
                               atol=1e-5 * np.abs(qd).max())
    # a stamp going backwards starts a segment; a repeated one is refused
    derivatives.push(1.0, q[0], None, q[0])
    assert derivatives.segments == 3
    with pytest.raises(InvalidSample, match="repeats"):
        derivatives.push(1.0, q[0], None, q[0])


def test_bad_samples_are_rejected_and_leave_no_trace(iiwa, stream):
    identifier = OnlineIdentifier(iiwa, OnlineConfig(replay=False))
    names = identifier.joint_names
    t, q, qd, _, tau = stream
    good = (list(q[0]), list(qd[0]), list(tau[0]))
    bad = {
        "missing joint": (names[:6], [v[:6] for v in good], "missing joint"),
        "repeated": ((*names[:6], names[0]), good, "repeated"),
        "length": (names, (good[0], good[1][:5], good[2]), "velocity has 5 values"),
        "nan": (names, (good[0][:2] + [np.nan] + good[0][3:], good[1], good[2]),
                f"position of {names[2]}"),
        "inf": (names, (good[0], good[1], good[2][:6] + [np.inf]), f"effort of {names[6]}"),
    }
    for case, (msg_names, values, expected) in bad.items():
        with pytest.raises(InvalidSample, match=expected):
            identifier.add_joint_state(t[0], msg_names, *values)
    with pytest.raises(InvalidSample, match="stamp"):
        identifier.add(0.0, q[0], qd[0], tau[0])
    with pytest.raises(InvalidSample, match="shape"):
        identifier.add(t[0], q[0][:6], qd[0], tau[0])
    counts = identifier.counts()
    assert counts["rejected"] == counts["received"] == len(bad) + 2
    assert identifier.drain_predictions() == []
    # joints by name: reversed order and an extra joint map onto the model's order; an empty
    # velocity means "not measured" (Savitzky-Golay velocities instead)
    identifier.add_joint_state(t[0], ["finger", *reversed(names)], [0.3, *q[0][::-1]], [],
                               [0.0, *tau[0][::-1]], tag="a")
    (tag, predicted), = identifier.drain_predictions()
    assert tag == "a"
    np.testing.assert_allclose(predicted, identifier.predict(q[0], np.zeros(7), np.zeros(7))[0])
    with pytest.raises(InvalidSample, match="repeats"):
        identifier.add(t[0], q[0], qd[0], tau[0])


def test_non_finite_loss_skips_the_step(iiwa, stream):
    identifier = OnlineIdentifier(iiwa, OnlineConfig(replay=False))
    t, q, qd, _, tau = stream
    huge = np.full(7, 1e200)        # finite, but its square overflows: loss = inf
    for k in range(600):
        identifier.add(t[k], q[k], qd[k], huge)
    before = {k: v.clone() for k, v in identifier.dynamics.state_dict().items()}
    assert identifier.step() == "skipped"
    assert identifier.counts()["skipped_updates"] == 1 and identifier.counts()["updates"] == 0
    for key, value in identifier.dynamics.state_dict().items():
        assert torch.equal(value, before[key]), key
    assert identifier.snapshot().finite


def test_snapshots_and_predictions_while_training(iiwa, stream):
    identifier = OnlineIdentifier(perturbed(iiwa, seed=1), OnlineConfig(parametrisation="tri"))
    identifier.start(replay_rate=200.0)
    errors, snapshots, predicted = [], [], []

    def producer():
        try:
            feed(identifier, stream, stop=3000)
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=producer)
    thread.start()
    try:
        deadline = time.monotonic() + 8.0
        def busy():
            counts = identifier.counts()
            all_new_done = counts["new_updates"] == identifier.snapshot().samples // 256
            return thread.is_alive() or counts["replay_updates"] < 20 or not all_new_done

        while busy() and time.monotonic() < deadline:
            snapshots.append(identifier.snapshot())
            predicted.extend(identifier.drain_predictions())
            time.sleep(0.01)
    finally:
        thread.join()
        identifier.stop()
    predicted.extend(identifier.drain_predictions())
    assert not errors and identifier.last_error is None
    assert [tag for tag, _ in predicted] == list(range(3000))
    assert all(np.isfinite(p).all() for _, p in predicted)
    updates = [s.updates for s in snapshots]
    assert updates == sorted(updates) and updates[-1] > 0
    counts = identifier.counts()
    # new data first: every finished sample was trained on once, in order
    assert counts["new_updates"] == identifier.snapshot().samples // 256 > 0
    assert counts["unused_samples"] == 0
    assert counts["replay_updates"] >= 20
    for snap in snapshots:          # tri: every snapshot physically consistent and finite
        assert snap.consistent and snap.finite
        assert all(np.isfinite(link.inertia).all() and link.mass > 0 for link in snap.links)


def test_write_urdf_round_trip(iiwa, stream, tmp_path):
    identifier = OnlineIdentifier(perturbed(iiwa), OnlineConfig(friction=True))
    feed(identifier, stream, stop=1500)
    while identifier.step(replay=False) != "idle":
        pass
    snap = identifier.snapshot()
    urdf_path, yaml_path = identifier.write(str(tmp_path / "iiwa_identified.urdf"))
    assert yaml_path == str(tmp_path / "iiwa_identified.yaml")
    written = load_robot(urdf_path)
    assert written.joint_names == iiwa.joint_names
    for link in snap.links:
        body = written.bodies[written.body_index(link.name)]
        assert body.mass == link.mass
        np.testing.assert_array_equal(body.com, link.com)
        np.testing.assert_allclose(body.inertia, link.inertia, rtol=0, atol=1e-15)
    np.testing.assert_array_equal([written.bodies[i].damping for i in written.joint_body],
                                  snap.damping)
    with open(yaml_path) as f:
        data = yaml.safe_load(f)
    assert data["metadata"]["updates"] == snap.updates and data["metadata"]["consistent"]
    np.testing.assert_array_equal(data["friction"]["phi1"], snap.friction.phi1)
    # bad paths: a clear error, nothing written
    for path, expected in ((str(tmp_path / "x.yaml"), "end in .urdf"),
                           (str(tmp_path / "no" / "x.urdf"), "does not exist")):
        with pytest.raises(DiffneaError, match=expected):
            identifier.write(path)
    assert sorted(os.listdir(tmp_path)) == ["iiwa_identified.urdf", "iiwa_identified.yaml"]
    # a relative path is resolved against the working directory
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert identifier.write("rel.urdf")[0] == str(tmp_path / "rel.urdf")
    finally:
        os.chdir(cwd)


def test_locked_fingers_are_kept_in_the_written_urdf(tmp_path):
    panda = load_robot(PANDA)
    fingers = [n for n in panda.joint_names if "finger" in n]
    identifier = OnlineIdentifier(lock_joints(panda, fingers))
    assert identifier.dof == 7 and not set(fingers) & set(identifier.joint_names)
    urdf_path, _ = identifier.write(str(tmp_path / "panda.urdf"))
    assert load_robot(urdf_path).joint_names == panda.joint_names


def test_mapper_and_config_errors():
    mapper = JointStateMapper(["a", "b"])
    q, qd, tau = mapper.arrays(["b", "a"], [2.0, 1.0], [], [4.0, 3.0])
    assert q.tolist() == [1.0, 2.0] and qd is None and tau.tolist() == [3.0, 4.0]
    with pytest.raises(InvalidSample, match="effort has 1 values for 2"):
        mapper.arrays(["a", "b"], [1.0, 2.0], [], [1.0])
    with pytest.raises(DiffneaError, match="unknown parametrisation"):
        OnlineConfig(parametrisation="chol").validate()
    with pytest.raises(DiffneaError, match="learning_rate"):
        OnlineConfig(learning_rate=float("nan")).validate()
    with pytest.raises(DiffneaError, match="batch_size"):
        OnlineConfig(batch_size=0).validate()
