"""LearnableDynamics, the L_ID training loop and the `identify` tool on synthetic iiwa data."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from diffnea_ros.algorithms import rnea
from diffnea_ros.identification import (FitConfig, IdentificationConfig, Samples, diffnea_predictor,
                                         evaluate_nmse, fit, identify)
from diffnea_ros.learnable import LearnableDynamics, default_learnable_links
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.urdf import load_robot, with_inertials

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "identify")


def iiwa_path() -> str:
    import pybullet_data

    return os.path.join(pybullet_data.getDataPath(), "kuka_iiwa", "model.urdf")


def true_model() -> RigidBodyModel:
    """The iiwa with heavier links, shifted coms and other inertias than its URDF: the 'robot'
    whose data the URDF's model must learn."""
    description = load_robot(iiwa_path())
    rng = np.random.default_rng(7)
    mass = np.array([b.mass for b in description.bodies]) * rng.uniform(0.7, 1.3, len(description.bodies))
    com = np.array([b.com for b in description.bodies]) + rng.normal(0, 0.02, (len(description.bodies), 3))
    inertia = np.array([b.inertia for b in description.bodies]) * rng.uniform(0.6, 1.4)
    return RigidBodyModel(with_inertials(description, mass, com, inertia))


def sine_samples(model: RigidBodyModel, seconds: float = 12.0, rate: float = 100.0,
                 damping: float = 0.3) -> tuple[np.ndarray, ...]:
    t = np.arange(0.0, seconds, 1.0 / rate)
    periods = np.array([23.0, 19.0, 17.0, 13.0, 11.0, 7.0, 5.0]) / 4.0
    amplitude = np.array([0.7, 0.5, 0.5, 0.5, 0.65, 0.65, 0.7]) * 1.5
    w = 2 * np.pi / periods
    q = amplitude * np.sin(w * t[:, None])
    qd = amplitude * w * np.cos(w * t[:, None])
    qdd = -amplitude * w ** 2 * np.sin(w * t[:, None])
    tau = rnea(model, *(torch.from_numpy(x) for x in (q, qd, qdd)),
               damping=torch.full((7,), damping, dtype=torch.float64)).numpy()
    return t, q, qd, qdd, tau


def nominal_and_truth_samples() -> tuple[RigidBodyModel, Samples, Samples]:
    """The iiwa's URDF model and the true model's sine-tracking samples, split 900 / rest."""
    torch.set_num_threads(1)
    _, q, qd, qdd, tau = sine_samples(true_model())
    samples = Samples.from_arrays(q, qd, qdd, tau)
    return (RigidBodyModel.from_urdf(iiwa_path()), samples.subset(torch.arange(0, 900)),
            samples.subset(torch.arange(900, len(samples))))


def test_learnable_dynamics_starts_at_the_urdf():
    model = RigidBodyModel.from_urdf(iiwa_path())
    dynamics = LearnableDynamics(model, "cov", friction=True)
    _, q, qd, qdd, _ = sine_samples(model, seconds=1.0)
    args = [torch.from_numpy(x) for x in (q, qd, qdd)]
    expected = rnea(model, *args, damping=dynamics.damping().detach())
    torch.testing.assert_close(dynamics(*args).detach(), expected + dynamics.friction_torque(args[1]).detach())
    assert torch.all(dynamics.damping() > 0)
    assert torch.all(dynamics.friction_torque(torch.zeros(1, 7, dtype=torch.float64)) == 0)
    assert "lbr_iiwa_link_0" not in default_learnable_links(model)   # fixed to the root


@pytest.mark.parametrize("kind", ["spd", "tri", "cov"])
def test_identification_recovers_the_dynamics(kind):
    nominal, train, heldout = nominal_and_truth_samples()
    config = IdentificationConfig(parametrisation=kind, epochs=40, learning_rate=2e-2, seed=0)
    result = identify(nominal, train, heldout, config)
    if kind == "spd":   # SPD guarantees a positive definite inertia, not the triangle inequality
        assert all(link.inertia_positive_definite for link in result.consistency.links)
    else:
        assert result.consistency.consistent
    assert np.all(result.nmse_heldout_after < 0.1 * result.nmse_heldout_before)
    assert np.all(result.nmse_heldout_after < 0.02)
    damping = result.dynamics.damping().detach().numpy()
    np.testing.assert_allclose(damping, 0.3, atol=0.15)


def test_identification_recovers_a_torque_offset():
    torch.set_num_threads(1)
    truth = true_model()
    _, q, qd, qdd, tau = sine_samples(truth)
    bias = np.array([0.3, -0.5, 0.2, -0.1, 0.15, -0.05, 0.08])
    samples = Samples.from_arrays(q, qd, qdd, tau + bias)
    train, heldout = samples.subset(torch.arange(0, 900)), samples.subset(torch.arange(900, len(samples)))
    nominal = RigidBodyModel.from_urdf(iiwa_path())
    config = IdentificationConfig(parametrisation="cov", epochs=40, learning_rate=2e-2, seed=0)
    without = identify(nominal, train, heldout, config)
    result = identify(nominal, train, heldout, IdentificationConfig(**{**config.__dict__, "offset": True}))
    offset = np.array(list(result.dynamics.joint_torque_offset().values()))
    # joints 2 and 4 carry the arm's weight: a constant there is partly explained by the
    # gravity terms (the inertials), the others' offsets are identifiable on their own
    free = [0, 2, 4, 5, 6]
    np.testing.assert_allclose(offset[free], bias[free], atol=0.1)
    assert np.mean(result.nmse_heldout_after) < np.mean(without.nmse_heldout_after)
    assert without.dynamics.joint_torque_offset() == {}


def test_online_mode_records_a_curve():
    truth = true_model()
    _, q, qd, qdd, tau = sine_samples(truth, seconds=6.0)
    samples = Samples.from_arrays(q, qd, qdd, tau)
    result = identify(RigidBodyModel.from_urdf(iiwa_path()), samples, None,
                      IdentificationConfig(parametrisation="cov", epochs=1, online=True))
    assert [c["samples"] for c in result.online_curve] == [256, 512, 600]
    assert np.mean(result.online_curve[-1]["nmse"]) < np.mean(result.nmse_train_before)


def run_identify(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120)


def write_npz(path, seconds=12.0, names=None, still=False):
    t, q, qd, _, tau = sine_samples(true_model(), seconds=seconds)
    if still:
        q[:, 3] = 0.1
    names = names or list(load_robot(iiwa_path()).joint_names)
    np.savez(path, t=t, q=q, qd=qd, tau=tau, joint_names=np.array(names))


def test_identify_tool_writes_a_loadable_urdf(tmp_path):
    data = tmp_path / "data.npz"
    write_npz(data)
    out, report = tmp_path / "iiwa_identified.urdf", tmp_path / "report.json"
    result = run_identify("--data", str(data), "--urdf", iiwa_path(), "--param", "cov", "--epochs", "15",
                          "--lr", "0.02", "--out", str(out), "--json", str(report), "--quiet")
    assert result.returncode == 0, result.stderr
    figures = json.loads(report.read_text())
    assert figures["consistent"]
    assert np.mean(figures["nmse_heldout_after"]) < 0.2 * np.mean(figures["nmse_heldout_before"])
    identified = load_robot(str(out))
    assert identified.joint_names == load_robot(iiwa_path()).joint_names
    assert (tmp_path / "iiwa_identified.yaml").exists()


@pytest.mark.parametrize("case, message", [
    ("missing_urdf", "URDF not found"),
    ("missing_data", "data file not found"),
    ("foreign_joints", "not movable joints of the URDF"),
    ("still_joint", "never move"),
    ("corrupt_bag", "cannot read bag"),
])
def test_identify_tool_bad_input(tmp_path, case, message):
    data, urdf = tmp_path / "data.npz", iiwa_path()
    if case == "missing_urdf":
        write_npz(data)
        urdf = str(tmp_path / "nope.urdf")
    elif case == "foreign_joints":
        write_npz(data, names=[f"joint_{i}" for i in range(7)])
    elif case == "still_joint":
        write_npz(data, still=True)
    elif case == "corrupt_bag":
        data = tmp_path / "data.bag"
        data.write_bytes(os.urandom(4096))
    result = run_identify("--data", str(data), "--urdf", urdf, "--out", str(tmp_path / "o.urdf"), "--quiet")
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert not (tmp_path / "o.urdf").exists()


@pytest.mark.parametrize("option, value, message", [
    ("--lr-decay", "0", "--lr-decay must be in (0, 1]"), ("--lr-decay", "1.5", "--lr-decay must be in (0, 1]"),
    ("--lr-decay", "nan", "--lr-decay must be in (0, 1]"),
    ("--prior-weights", "0,-1", "weights must be comma-separated numbers >= 0"),
    ("--prior-weights", "0,x", "weights must be comma-separated numbers >= 0"),
    ("--prior", "missing.yaml", "prior"),
])
def test_identify_tool_refuses_bad_fit_options(tmp_path, option, value, message):
    write_npz(tmp_path / "data.npz")
    result = run_identify("--data", str(tmp_path / "data.npz"), "--urdf", iiwa_path(), "--out",
                          str(tmp_path / "o.urdf"), option, value, "--quiet")
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert not (tmp_path / "o.urdf").exists()


def test_a_diverging_run_stops_with_the_last_finite_parameters():
    truth = true_model()
    _, q, qd, qdd, tau = sine_samples(truth, seconds=3.0)
    tau[280:290] = np.inf   # torques no model can fit: the loss becomes Inf in the second batch
    samples = Samples.from_arrays(q, qd, qdd, np.nan_to_num(tau, posinf=1e308))
    nominal = RigidBodyModel.from_urdf(iiwa_path())
    result = identify(nominal, samples, None, IdentificationConfig(parametrisation="nostr", epochs=3,
                                                                     online=True))
    assert result.diverged
    for value in result.dynamics.parameters():
        assert torch.all(torch.isfinite(value))
    assert np.all(np.isfinite(evaluate_nmse(result.dynamics, samples.subset(torch.arange(0, 100)))))


def test_identify_tool_on_a_pair_bag_writes_the_simulators_config(tmp_path):
    """--pairs with --split-from: the robot's stream of the training split only; --sim-config:
    panda_sim2real's identified config, which the simulator loads."""
    from panda_pairs import CollectionRequest, Dataset, run_collection
    from panda_sim2real import RobotConfig, nominal_urdf_path
    bag, dataset = str(tmp_path / "pairs.bag"), str(tmp_path / "dataset.npz")
    run_collection(CollectionRequest(out=bag, trajectories=6, seed=5, kinds=("multi",), show_progress=False))
    done = subprocess.run(["rosrun", "panda_pairs", "dataset", "--bag", bag, "--out", dataset, "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    split = Dataset.load(dataset)
    train = {int(t) for t, s in zip(split.trajectory_ids, split.split) if s == "train"}
    out, sim, report = tmp_path / "id.urdf", tmp_path / "sim.yaml", tmp_path / "id.json"
    result = run_identify("--pairs", bag, "--split-from", dataset, "--urdf", nominal_urdf_path(),
                          "--epochs", "2", "--offset", "--physics-rate", "2000", "--prior", "nominal",
                          "--prior-weights", "0,0.01", "--out", str(out),
                          "--sim-config", str(sim), "--json", str(report), "--quiet")
    assert result.returncode == 0, result.stderr
    figures = json.loads(report.read_text())
    assert figures["trajectory_ids"] == sorted(train) and figures["physics_rate"] == 2000
    assert figures["trajectories"] == len(train) and figures["label"] == "reality stand-in"
    assert 0 <= figures["kept_epoch"] <= figures["epochs"] == 2
    prior = figures["prior"]
    assert prior["weights"] == [0.0, 0.01] and prior["chosen"] in prior["weights"]
    assert np.mean(figures["nmse_heldout_after"]) == pytest.approx(min(prior["heldout_nmse_mean"]))
    config = RobotConfig.from_yaml(str(sim))
    assert config.urdf == str(out) and config.physics_rate == 2000
    assert config.label == "simulation (identified)"
    offset = [figures["torque_offset"][n] for n in figures["joint_names"]]
    np.testing.assert_allclose(config.torque_sensor.offset, offset)
    bad = run_identify("--pairs", bag, "--split-from", dataset, "--split", "nonexistent", "--urdf",
                       nominal_urdf_path(), "--out", str(tmp_path / "x.urdf"), "--quiet")
    assert bad.returncode == 2 and "no trajectory in split 'nonexistent'" in bad.stderr
    assert not (tmp_path / "x.urdf").exists()


def test_a_start_with_a_non_finite_objective_is_not_kept():
    """keep_best keeps the best finite epoch when the start's objective is NaN (here the
    predictor's first evaluation, the start's, is NaN)."""
    q = torch.linspace(-1.0, 1.0, 64, dtype=torch.float64)[:, None]
    samples = Samples(q, q, q, 2.0 * q)
    weight = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    calls = {"n": 0}

    def predict(index: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        out = weight * samples.q[index]
        return out * float("nan") if calls["n"] == 1 else out
    result = fit([weight], predict, samples, FitConfig(epochs=20, learning_rate=0.1, stop_nmse=None,
                                                       keep_best=True))
    assert not result.diverged and result.kept_epoch > 0
    assert float(weight.detach()) > 1.0 and np.all(np.isfinite(result.nmse_after))


def test_online_mode_ends_on_its_last_epoch():
    """Online identification (paper 002 §4.1.2) neither keeps a best epoch nor decays the rate."""
    _, q, qd, qdd, tau = sine_samples(true_model(), seconds=3.0)
    samples = Samples.from_arrays(q, qd, qdd, tau)
    result = identify(RigidBodyModel.from_urdf(iiwa_path()), samples, None,
                      IdentificationConfig(parametrisation="cov", epochs=3, online=True,
                                           learning_rate=0.2, keep_best=True))
    assert result.epochs == 3 and result.kept_epoch == 3


def test_a_regressor_cache_is_shared_by_dynamics_of_one_model():
    """diffnea_predictor with a cache made by another LearnableDynamics of the same model gives
    the torques of the dynamics it is given (identify shares one cache over its fits)."""
    model = RigidBodyModel.from_urdf(iiwa_path())
    _, q, qd, qdd, tau = sine_samples(model, seconds=1.0)
    samples = Samples.from_arrays(q, qd, qdd, tau)
    donor, dynamics = LearnableDynamics(model, "cov"), LearnableDynamics(model, "cov")
    with torch.no_grad():
        for p in dynamics.parameters():
            p.add_(0.05)
    cache = donor.regressor_cache(samples.q, samples.qd, samples.qdd)
    predicted = diffnea_predictor(dynamics, samples, cache)(torch.arange(len(samples)))
    torch.testing.assert_close(predicted, dynamics(samples.q, samples.qd, samples.qdd))
    assert not torch.allclose(predicted, donor(samples.q, samples.qd, samples.qdd))
