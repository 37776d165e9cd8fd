"""The prior on the inertials (prior.py) and the choice of its weight on held-out data
(identification.identify, issue 38), on the iiwa whose true model differs from its URDF."""
import numpy as np
import pytest
import torch

from diffnea_ros import PANDA_BOUNDS_FILE
from diffnea_ros.errors import DataError, DiffneaError
from diffnea_ros.identification import IdentificationConfig, PriorChoice, Samples, identify
from diffnea_ros.learnable import LearnableDynamics
from diffnea_ros.prior import PRIOR_COM_SCALE, InertialPrior, PriorTensors, prior_penalty
from test_identification import nominal_and_truth_samples, true_model


def test_the_published_panda_model_is_read_as_a_prior():
    prior = InertialPrior.from_yaml(PANDA_BOUNDS_FILE)
    assert {f"panda_link{i}" for i in range(1, 8)} <= set(prior.links) and "Gaz" in prior.source
    mass, com, inertia = prior.links["panda_link2"]
    assert mass == pytest.approx(0.646926) and com[1] == pytest.approx(-2.872e-2)
    np.testing.assert_allclose(inertia, inertia.T)
    assert inertia[0, 1] == pytest.approx(-0.003925) and inertia[1, 1] == pytest.approx(0.02811)


@pytest.mark.parametrize("text, message", [
    ("source: x\nlinks: {a: {mass: 0, com: [0, 0, 0], inertia: [1, 1, 1, 0, 0, 0]}}", "link a"),
    ("source: x\nlinks: {a: {mass: 1, com: [0, 0], inertia: [1, 1, 1, 0, 0, 0]}}", "link a"),
    ("source: x\nlinks: {a: {mass: 1, com: [0, 0, 0], inertia: [1, 1, .nan, 0, 0, 0]}}", "link a"),
    ("source: x\nlinks: {a: {mass: 1, com: [0, 0, 0]}}", "inertia"),
    ("links: {}", "source"),
])
def test_a_malformed_prior_is_refused_with_its_entry(tmp_path, text, message):
    path = tmp_path / "prior.yaml"
    path.write_text(text)
    with pytest.raises(DiffneaError, match=message):
        InertialPrior.from_yaml(str(path))


def test_the_penalty_is_zero_at_the_prior_and_one_for_a_bound_sized_step():
    """R = 0 at the prior; a mass off by m0, a com off by PRIOR_COM_SCALE or an inertia off by
    tr(I0)/3 on one diagonal entry cost 1 each; a link the prior lacks costs nothing."""
    inertia0 = np.diag([0.02, 0.03, 0.04])
    prior = InertialPrior({"a": (2.0, np.array([0.0, 0.1, 0.0]), inertia0)}, "test")
    tensors = PriorTensors.of(["a", "unknown"], prior)
    mass = torch.tensor([2.0, 5.0], dtype=torch.float64)
    com = torch.tensor([[0.0, 0.1, 0.0], [1.0, 1.0, 1.0]], dtype=torch.float64)
    inertia = torch.stack([torch.as_tensor(inertia0), torch.eye(3, dtype=torch.float64)])
    assert float(prior_penalty(mass, com, inertia, tensors)) == 0.0
    steps = [(mass + torch.tensor([2.0, 0.0], dtype=torch.float64), com, inertia),
             (mass, com + torch.tensor([[PRIOR_COM_SCALE, 0, 0], [0, 0, 0]], dtype=torch.float64), inertia)]
    bigger = inertia.clone()
    bigger[0, 0, 0] += np.trace(inertia0) / 3.0
    steps.append((mass, com, bigger))
    for m, c, i in steps:
        assert float(prior_penalty(m, c, i, tensors)) == pytest.approx(1.0)
    with pytest.raises(DiffneaError, match="none of the learnt links"):
        PriorTensors.of(["unknown"], prior)


def prior_at(model, scale: float = 1.0) -> InertialPrior:
    """``model``'s inertials as a prior, every mass and inertia scaled by ``scale``."""
    inertials = LearnableDynamics(model, "cov").link_inertials()
    return InertialPrior({n: (scale * float(m), np.asarray(c), scale * np.asarray(i))
                          for n, (m, c, i) in inertials.items()}, f"x{scale}")


def test_the_held_out_data_choose_a_weight_for_a_right_prior_and_none_for_a_wrong_one():
    """A prior at the true model is chosen with weight and brings the held-out error down; one
    with three times the true masses and inertias is not chosen at the largest weight; a weight
    list needs held-out samples."""
    nominal, train, heldout = nominal_and_truth_samples()
    # too little data for the model alone: 2 s of noisy torques (10 % of their spread)
    noise = torch.Generator().manual_seed(0)
    train = train.subset(torch.arange(0, 200))
    train = Samples(train.q, train.qd, train.qdd, train.tau + 0.1 * train.tau.std(dim=0)
                    * torch.randn(train.tau.shape, generator=noise, dtype=train.tau.dtype))
    weights = (0.0, 1e-3, 1e-1)
    results = {}
    for name, prior in (("right", prior_at(true_model())), ("wrong", prior_at(true_model(), 3.0))):
        config = IdentificationConfig(parametrisation="cov", epochs=40, learning_rate=2e-2, seed=0, prior=prior,
                                      prior_weights=weights)
        results[name] = identify(nominal, train, heldout, config)
    right, wrong = results["right"].prior_choice, results["wrong"].prior_choice
    assert right.weights == wrong.weights == weights
    assert right.chosen > 0.0 and min(right.heldout_nmse_mean) < 0.85 * right.heldout_nmse_mean[0]
    assert wrong.chosen < 1e-1 and wrong.heldout_nmse_mean[2] > wrong.heldout_nmse_mean[0]
    chosen = results["right"]
    assert np.mean(chosen.nmse_heldout_after) == pytest.approx(min(right.heldout_nmse_mean))
    config = IdentificationConfig(parametrisation="cov", epochs=1, prior=prior_at(nominal))
    with pytest.raises(DataError, match="needs held-out samples"):
        identify(nominal, train, None, config)
    with pytest.raises(DataError, match="finite and >= 0"):
        identify(nominal, train, heldout, IdentificationConfig(epochs=1, prior=prior_at(nominal),
                                                               prior_weights=(0.0, -1.0)))


def test_the_file_s_com_margin_is_the_prior_s_com_scale(tmp_path):
    """A com off by the file's com_margin costs 1, as a mass off by its size does."""
    link = "links: {a: {mass: 2, com: [0, 0, 0], inertia: [0.1, 0.1, 0.1, 0, 0, 0]}}"
    path = tmp_path / "prior.yaml"
    path.write_text(f"source: x\ncom_margin: 0.1\n{link}")
    prior = InertialPrior.from_yaml(str(path))
    assert prior.com_scale == 0.1 and InertialPrior.from_yaml(PANDA_BOUNDS_FILE).com_scale == 0.05
    tensors = PriorTensors.of(["a"], prior)
    inertia = torch.as_tensor(np.diag([0.1, 0.1, 0.1]))[None]
    com = torch.tensor([[0.1, 0.0, 0.0]], dtype=torch.float64)
    mass = torch.tensor([2.0], dtype=torch.float64)
    assert float(prior_penalty(mass, com, inertia, tensors)) == pytest.approx(1.0)
    path.write_text(f"source: x\ncom_margin: -1\n{link}")
    with pytest.raises(DiffneaError, match="com_margin"):
        InertialPrior.from_yaml(str(path))


def test_a_model_prior_leaves_out_links_it_cannot_scale_by():
    """A nominal URDF's massless links and links with a zero or indefinite inertia (a Panda's
    hand frame, say) are left out: the penalty of the rest stays finite."""
    com = np.zeros(3)
    prior = InertialPrior.of_model({"massless": (0.0, com, np.eye(3)),
                                    "no_inertia": (0.5, com, np.zeros((3, 3))),
                                    "indefinite": (0.5, com, np.diag([1.0, 1.0, -1.0])),
                                    "good": (1.0, com, 0.01 * np.eye(3))}, "nominal")
    assert set(prior.links) == {"good"}
    names = ["massless", "no_inertia", "indefinite", "good"]
    tensors = PriorTensors.of(names, prior)
    mass = torch.ones(4, dtype=torch.float64)
    value = prior_penalty(mass, torch.zeros(4, 3, dtype=torch.float64),
                          torch.eye(3, dtype=torch.float64).expand(4, 3, 3), tensors)
    assert torch.isfinite(value) and float(value) > 0.0


def test_only_a_finite_held_out_score_chooses_the_weight():
    choice = PriorChoice.of("x", (0.0, 1e-3, 1e-2), (0.5, float("nan"), 0.4))
    assert choice.chosen == 1e-2 and choice.chosen_index == 2
    assert PriorChoice.of("x", (0.0, 1e-3), (float("inf"), 0.9)).chosen == 1e-3
    with pytest.raises(DataError, match="non-finite held-out NMSE"):
        PriorChoice.of("x", (0.0, 1e-3), (float("nan"), float("inf")))
