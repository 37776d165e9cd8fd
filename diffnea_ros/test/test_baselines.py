"""The Table 1 baselines (MLP, DeLaN), the shared L_ID trainer and the random initialisation of
the DiffNEA parametrisations (paper 002 §4.1), on a 2-link arm and the iiwa."""
import numpy as np
import pytest
import torch

from diffnea_ros.algorithms import rnea
from diffnea_ros.experiments.baselines import HIDDEN, DeLaN, MLPInverseDynamics, make_baseline
from diffnea_ros.identification import (FitConfig, diffnea_predictor, fit, module_predictor,
                                        predictor_nmse)
from diffnea_ros.errors import DiffneaError
from diffnea_ros.identification import Samples, consistency_of
from diffnea_ros.learnable import LearnableDynamics
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.parametrisation import PARAMETRISATIONS
from diffnea_ros.experiments.random_init import randomise_dynamics, randomise_parametrisation
from diffnea_ros.experiments.sine_tracking import kuka_urdf_path

TWO_LINK = """<robot name="two_link">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0.2 0 0"/><mass value="2.0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial></link>
  <link name="lower"><inertial><origin xyz="0.15 0 0"/><mass value="1.0"/>
    <inertia ixx="0.005" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="50" velocity="5"/>
    <dynamics damping="0.1"/></joint>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="lower"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="50" velocity="5"/>
    <dynamics damping="0.1"/></joint>
</robot>"""


@pytest.fixture(scope="module")
def arm():
    return RigidBodyModel.from_urdf(TWO_LINK)


@pytest.fixture(scope="module")
def samples(arm):
    """Smooth motions of the 2-link arm and their true torques."""
    t = torch.linspace(0.0, 8.0, 600, dtype=torch.float64)[:, None]
    w = torch.tensor([[1.3, 2.1]], dtype=torch.float64)
    amp = torch.tensor([[1.0, 1.4]], dtype=torch.float64)
    q, qd, qdd = amp * torch.sin(w * t), amp * w * torch.cos(w * t), -amp * w ** 2 * torch.sin(w * t)
    with torch.no_grad():
        tau = rnea(arm, q, qd, qdd)
    return Samples(q, qd, qdd, tau)


def random_states(n, dof, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, dof, dtype=torch.float64, generator=g) for _ in range(3)]


def test_networks_have_the_paper_sizes(samples):
    mlp = MLPInverseDynamics(2, samples)
    widths = [m.out_features for m in mlp.net if isinstance(m, torch.nn.Linear)]
    assert tuple(widths[:-1]) == HIDDEN == (32, 64, 32) and widths[-1] == 2
    assert all(isinstance(m, torch.nn.Tanh) for m in list(mlp.net)[1:-1:2])
    delan = DeLaN(7, Samples(*[torch.zeros(4, 7, dtype=torch.float64)] * 4))
    assert [m.out_features for m in delan.l_net if isinstance(m, torch.nn.Linear)] == [32, 64, 32, 28]
    assert [m.out_features for m in delan.v_net if isinstance(m, torch.nn.Linear)] == [32, 64, 32, 1]


def test_delan_mass_matrix_is_symmetric_positive_definite(samples):
    dof = 7
    data = Samples(*random_states(64, dof, 0), torch.randn(64, dof, dtype=torch.float64))
    for seed in range(3):
        delan = DeLaN(dof, data, seed=seed)
        q = 3.0 * torch.randn(200, dof, dtype=torch.float64)
        with torch.no_grad():
            h = delan.mass_matrix(q)
        assert torch.allclose(h, h.transpose(-1, -2), atol=0.0)
        assert bool((torch.linalg.eigvalsh(h) > 0).all())


def test_delan_torque_is_h_qdd_plus_coriolis_plus_gravity_by_finite_differences():
    dof, eps = 3, 1e-6
    q, qd, qdd = random_states(4, dof, 1)
    delan = DeLaN(dof, Samples(q, qd, qdd, torch.randn(4, dof, dtype=torch.float64)), seed=2)
    with torch.no_grad():
        tau = delan(q, qd, qdd)
        h = delan.mass_matrix(q)
        # Ḣ qd by a central difference along qd; ∂(qdᵀ H qd)/∂q and g = ∂V/∂q per coordinate
        h_dot = (delan.mass_matrix(q + eps * qd) - delan.mass_matrix(q - eps * qd)) / (2 * eps)
        dquad, gravity = torch.zeros_like(q), torch.zeros_like(q)
        for k in range(dof):
            e = torch.zeros(dof, dtype=torch.float64)
            e[k] = eps
            quad = [torch.einsum("bi,bij,bj->b", qd, delan.mass_matrix(q + s * e), qd)
                    for s in (1, -1)]
            dquad[:, k] = (quad[0] - quad[1]) / (2 * eps)
            gravity[:, k] = (delan.potential(q + e) - delan.potential(q - e)) / (2 * eps)
        coriolis = torch.einsum("bij,bj->bi", h_dot, qd) - 0.5 * dquad
        expected = (torch.einsum("bij,bj->bi", h, qdd) + coriolis + gravity
                    + delan.damping() * qd)
    assert torch.allclose(tau, expected, rtol=1e-6, atol=1e-6)
    # the Coriolis term matters in this check (it is not a zero-velocity case)
    assert coriolis.abs().max() > 1e-3


def test_delan_coriolis_does_no_work():
    """qdᵀ (Ḣ − 2C) qd = 0 implies qdᵀ c = ½ qdᵀ Ḣ qd: c = Ḣ qd − ½ ∂(qdᵀ H qd)/∂q has it."""
    dof, eps = 4, 1e-6
    q, qd, _ = random_states(5, dof, 3)
    delan = DeLaN(dof, Samples(q, qd, q, q), seed=0)
    _, coriolis, _ = delan.terms(q, qd)
    with torch.no_grad():
        h_dot = (delan.mass_matrix(q + eps * qd) - delan.mass_matrix(q - eps * qd)) / (2 * eps)
        power = (qd * coriolis).sum(-1)
        expected = 0.5 * torch.einsum("bi,bij,bj->b", qd, h_dot, qd)
    assert torch.allclose(power, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind", ["mlp", "delan"])
def test_baselines_reduce_the_training_loss(kind, arm, samples):
    network = make_baseline(kind, arm.dof, samples, seed=0)
    result = fit(list(network.parameters()), module_predictor(network, samples), samples,
                 FitConfig(epochs=15, batch_size=64, learning_rate=1e-2, stop_nmse=None))
    assert not result.diverged
    assert result.nmse_after.mean() < 0.3 * result.nmse_before.mean()
    assert np.allclose(result.nmse_after, predictor_nmse(module_predictor(network, samples),
                                                         samples))


def test_fit_counts_epochs_like_identify(arm, samples):
    """0 epochs when the start already meets the threshold, otherwise the first epoch at which
    every joint's NMSE is <= stop_nmse, and training stops there."""
    truth = LearnableDynamics(arm, "cov")
    result = fit(list(truth.parameters()), diffnea_predictor(truth, samples), samples,
                 FitConfig(epochs=5, stop_nmse=0.1))
    assert result.epochs_to_threshold == 0 and result.epochs == 0 and not result.history
    network = make_baseline("mlp", arm.dof, samples, seed=1)
    result = fit(list(network.parameters()), module_predictor(network, samples), samples,
                 FitConfig(epochs=60, batch_size=64, stop_nmse=0.1))
    assert result.epochs_to_threshold is not None and result.epochs == result.epochs_to_threshold
    assert np.all(np.array(result.history[-1]["train_nmse"]) <= 0.1)
    assert all(np.any(np.array(h["train_nmse"]) > 0.1) for h in result.history[:-1])


def test_online_fit_records_nmse_after_every_sequential_batch(arm, samples):
    network = make_baseline("mlp", arm.dof, samples, seed=0)
    result = fit(list(network.parameters()), module_predictor(network, samples), samples,
                 FitConfig(epochs=1, online=True, stop_nmse=None))
    assert [p["samples"] for p in result.online_curve] == [256, 512, 600]


# ----------------------------------------------------------------------------- random start
def raw(dynamics):
    return {k: v.detach().clone() for k, v in dynamics.parametrisation.named_parameters()}


@pytest.mark.parametrize("kind", PARAMETRISATIONS)
def test_random_initialisation_is_seeded_and_ignores_the_urdf_values(kind, arm):
    a = raw(randomise_dynamics(LearnableDynamics(arm, kind), 3))
    b = raw(randomise_dynamics(LearnableDynamics(arm, kind), 3))
    c = raw(randomise_dynamics(LearnableDynamics(arm, kind), 4))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)
    # a model with other nominal inertials gets the same random start: no ground truth leaks
    heavier = RigidBodyModel.from_urdf(TWO_LINK.replace('value="2.0"', 'value="7.0"'))
    d = raw(randomise_dynamics(LearnableDynamics(heavier, kind), 3))
    assert all(torch.equal(a[k], d[k]) for k in a)
    start = randomise_dynamics(LearnableDynamics(heavier, kind), 3)
    assert torch.allclose(start.damping(), torch.full((2,), 1e-3, dtype=torch.float64))
    mass = start.inertials().mass[start.link_index]
    assert not torch.allclose(mass, torch.tensor([7.0, 1.0], dtype=torch.float64))


@pytest.mark.parametrize("kind", ["spd", "tri", "cov"])
def test_random_starts_of_the_constrained_parametrisations_are_consistent(kind):
    iiwa = RigidBodyModel.from_urdf(kuka_urdf_path())
    for seed in range(20):
        dynamics = randomise_dynamics(LearnableDynamics(iiwa, kind), seed)
        inertials = dynamics.inertials()
        index = dynamics.link_index
        assert bool((inertials.mass[index] > 0).all())
        assert bool((torch.linalg.eigvalsh(inertials.inertia[index]) > 0).all())
        if kind != "spd":   # SPD does not promise the triangle inequality (paper §3.3)
            assert consistency_of(dynamics).consistent, (seed, consistency_of(dynamics).format())


def test_random_nostr_start_need_not_be_consistent():
    """The unconstrained draw (paper eq. 3) gives non-physical inertias: a check that can fail."""
    iiwa = RigidBodyModel.from_urdf(kuka_urdf_path())
    assert not all(consistency_of(randomise_dynamics(LearnableDynamics(iiwa, "nostr"), s))
                   .consistent for s in range(5))


def test_l4dc_draws_widen_nostr_inertia_and_take_uniform_square_root_masses(arm):
    """--draws l4dc: NoStr's θ_IC ~ N(0, 1) (10 x the released code's 0.1), the constrained
    masses from θ_√m ~ U(0, 1); an unknown name is refused."""
    generator = torch.Generator().manual_seed(0)
    wide = torch.cat([raw(randomise_dynamics(LearnableDynamics(arm, "nostr"), s, "l4dc"))["theta_I"]
                      .flatten() for s in range(40)])
    narrow = torch.cat([raw(randomise_dynamics(LearnableDynamics(arm, "nostr"), s))["theta_I"]
                        .flatten() for s in range(40)])
    assert 0.8 < float(wide.std()) < 1.2 and 0.08 < float(narrow.std()) < 0.12
    roots = torch.cat([raw(randomise_dynamics(LearnableDynamics(arm, "cov"), s, "l4dc"))["theta_sqrt_m"]
                       for s in range(40)])
    assert bool((roots >= 0).all() and (roots <= 1).all())
    normal = torch.cat([raw(randomise_dynamics(LearnableDynamics(arm, "cov"), s))["theta_sqrt_m"]
                        for s in range(40)])
    assert bool((normal < 0).any())
    with pytest.raises(DiffneaError, match="unknown random draws"):
        randomise_parametrisation(LearnableDynamics(arm, "cov").parametrisation, generator, "paper")


@pytest.mark.parametrize("kind", ["cov", "tri"])
def test_diffnea_learns_the_arm_from_a_random_start_and_stays_consistent(kind, arm, samples):
    dynamics = randomise_dynamics(LearnableDynamics(arm, kind), 0)
    result = fit(list(dynamics.parameters()), diffnea_predictor(dynamics, samples), samples,
                 FitConfig(epochs=150, batch_size=64, stop_nmse=0.1))
    assert result.epochs_to_threshold is not None and result.epochs_to_threshold > 0
    assert consistency_of(dynamics).consistent
    with torch.no_grad():   # the regressor path equals the RNEA of the learnt model
        direct = dynamics(samples.q, samples.qd, samples.qdd)
    assert np.allclose(predictor_nmse(lambda i: direct[i], samples), result.nmse_after)


def test_a_com_kept_at_the_urdf_stays_there_while_the_mass_is_learnt(arm, samples):
    """learn_com=False (the authors' L4DC configurations): θ_h gets no gradient, the links keep
    the URDF's CoM, mass and inertia are learnt, and the regressor path still equals the RNEA."""
    kept = randomise_dynamics(LearnableDynamics(arm, "cov", learn_com=False), 0, "l4dc")
    learnt = randomise_dynamics(LearnableDynamics(arm, "cov"), 0, "l4dc")
    index = kept.link_index
    urdf_com = arm.nominal_com[index]
    mass_before = kept.inertials().mass[index].detach().clone()
    assert not torch.allclose(learnt.inertials().com[index], urdf_com)
    config = FitConfig(epochs=3, batch_size=64, stop_nmse=None)
    for dynamics in (kept, learnt):
        fit(list(dynamics.parameters()), diffnea_predictor(dynamics, samples), samples, config)
    assert kept.parametrisation.theta_h.grad is None
    assert learnt.parametrisation.theta_h.grad is not None
    assert torch.equal(kept.inertials().com[index], urdf_com)
    assert not torch.allclose(kept.inertials().mass[index], mass_before)
    with torch.no_grad():
        direct = kept(samples.q, samples.qd, samples.qdd)
        cached = diffnea_predictor(kept, samples)(torch.arange(len(samples)))
    assert torch.allclose(direct, cached, rtol=1e-9, atol=1e-9)


def test_sequential_batches_do_not_depend_on_the_seed(arm, samples):
    """FitConfig(shuffle=False) trains on the batches in the data's order: the seed, which only
    shuffles, changes nothing; shuffled batches differ between seeds."""
    def trained(seed, shuffle):
        dynamics = randomise_dynamics(LearnableDynamics(arm, "spd"), 0)
        fit(list(dynamics.parameters()), diffnea_predictor(dynamics, samples), samples,
            FitConfig(epochs=2, batch_size=64, stop_nmse=None, shuffle=shuffle, seed=seed))
        return torch.cat([p.detach().flatten() for p in dynamics.parameters()])

    assert torch.equal(trained(0, False), trained(1, False))
    assert not torch.allclose(trained(0, True), trained(1, True))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_from_the_l4dc_start_a_constrained_parametrisation_learns_in_fewer_epochs_than_nostr(
        seed, arm, samples):
    """Paper 002 Table 1's ordering on the 2-link arm, from the authors' L4DC draws with the CoM
    kept (their configurations): Cov reaches NMSE <= 0.1 in fewer epochs than NoStr. (On this
    small arm the ordering also holds with the CoM learnt; on the iiwa it does not: README.)"""
    def epochs(kind):
        dynamics = randomise_dynamics(LearnableDynamics(arm, kind, learn_com=False), seed, "l4dc")
        result = fit(list(dynamics.parameters()), diffnea_predictor(dynamics, samples), samples,
                     FitConfig(epochs=300, batch_size=64, stop_nmse=0.1, seed=seed))
        assert result.epochs_to_threshold is not None
        return result.epochs_to_threshold

    assert epochs("cov") < epochs("nostr")


def test_keep_best_ends_on_the_epoch_with_the_lowest_final_objective(arm, samples):
    """A penalty that pulls every parameter 5 away from its start in the second half of the
    training (and is 0 at progress 1, in the final objective) makes the later epochs worse: the
    kept parameters are those of the lowest final objective (the start included), their NMSE the
    one recorded for that epoch; without keep_best the last epoch's stay."""
    results = {}
    for keep in (True, False):
        dynamics = randomise_dynamics(LearnableDynamics(arm, "cov"), 0)
        parameters = list(dynamics.parameters())
        away = [p.detach() + 5.0 for p in parameters]

        def pull(progress: float) -> torch.Tensor:
            weight = 1e3 if 0.5 < progress < 1.0 else 0.0
            return weight * sum(((p - a) ** 2).sum() for p, a in zip(parameters, away))
        results[keep] = fit(parameters, diffnea_predictor(dynamics, samples), samples,
                            FitConfig(epochs=8, batch_size=64, stop_nmse=None, keep_best=keep), None, pull)
    kept, last = results[True], results[False]
    objectives = [h["objective"] for h in kept.history]
    assert [h["objective"] for h in last.history] == objectives   # the same run
    start = randomise_dynamics(LearnableDynamics(arm, "cov"), 0)
    start_objective = float(((diffnea_predictor(start, samples)(torch.arange(len(samples))).detach()
                              - samples.tau) ** 2).sum(dim=1).mean())
    best = min(range(len(objectives) + 1),
               key=lambda e: start_objective if e == 0 else objectives[e - 1])
    assert 0 < best < len(objectives), objectives    # the test needs a best epoch before the last
    assert kept.kept_epoch == best, objectives
    np.testing.assert_allclose(kept.nmse_after, kept.history[best - 1]["train_nmse"], rtol=1e-12)
    np.testing.assert_allclose(last.nmse_after, last.history[-1]["train_nmse"], rtol=1e-12)
    assert last.kept_epoch == len(objectives)


def test_lr_decay_shrinks_the_last_epochs_steps(arm, samples):
    """With lr_decay the rate falls along a cosine to lr_decay x learning_rate in the last epoch:
    Adam's steps, about the rate each, move the parameters about that much less."""
    def moves(decay: float) -> list[float]:
        dynamics = randomise_dynamics(LearnableDynamics(arm, "cov"), 0)
        snapshots = []

        def progress(epochs):
            for epoch in epochs:
                snapshots.append(torch.cat([p.detach().flatten().clone() for p in dynamics.parameters()]))
                yield epoch
            snapshots.append(torch.cat([p.detach().flatten().clone() for p in dynamics.parameters()]))
        fit(list(dynamics.parameters()), diffnea_predictor(dynamics, samples), samples,
            FitConfig(epochs=3, batch_size=64, stop_nmse=None, lr_decay=decay), progress)
        return [float((b - a).abs().max()) for a, b in zip(snapshots, snapshots[1:])]
    constant, decayed = moves(1.0), moves(1e-3)
    assert decayed[0] == constant[0]                      # the first epoch at the full rate
    assert decayed[2] < 0.01 * constant[2]                # the last at 1e-3 x it
