"""Plausible inertials (issue 38): the Panda's bounds file, the penalty, the report of each
parameter against its bounds, and identification that stays inside them."""
import dataclasses

import numpy as np
import pytest
import torch

from diffnea_ros.errors import DiffneaError
from diffnea_ros.identification import IdentificationConfig, evaluate_nmse, identify, inside_bounds
from diffnea_ros.learnable import LearnableDynamics
from diffnea_ros.plausibility import (INSET, BoundTensors, LinkBounds, PlausibilityBounds,
                                      bound_penalty, check_plausibility, principal_moments,
                                      project_into_bounds)
from test_identification import nominal_and_truth_samples


def test_the_panda_bounds_hold_every_published_link_inside():
    bounds = PlausibilityBounds.from_yaml()
    assert {f"panda_link{i}" for i in range(1, 8)} <= set(bounds.links) and "Gaz" in bounds.source
    for b in bounds.links.values():
        assert b.mass_min < b.reference < b.mass_max
        assert np.all(b.com_min < b.com_max)


HEAD = "source: x\ncom_margin: 0.05\ninertia_factor: [0.2, 5]\n"
LINK = "inertia: [1, 1, 1, 0, 0, 0]"


@pytest.mark.parametrize("text, message", [
    (HEAD + f"mass_factor: [1.2, 2]\nlinks: {{a: {{mass: 1, com: [0, 0, 0], {LINK}}}}}", "0 < low"),
    (HEAD + f"mass_factor: [0.5, 2]\nlinks: {{a: {{mass: 1, com: [0, 0], {LINK}}}}}", "com of 3"),
    (HEAD + "mass_factor: [0.5, 2]\nlinks: {a: {mass: 1, com: [0, 0, 0], inertia: [1, 1, -1, 0, 0, 0]}}",
     "positive definite"),
    ("source: x\nmass_factor: [0.5, 2]\nlinks: {}", "com_margin"),
])
def test_a_malformed_bounds_file_is_refused_with_its_name(tmp_path, text, message):
    path = tmp_path / "b.yaml"
    path.write_text(text)
    with pytest.raises(DiffneaError, match=message):
        PlausibilityBounds.from_yaml(str(path))


def box(mass, low=0.5, high=2.0, margin=0.05, moments=(0.0, 0.0, 0.0)):
    """Bounds about ``mass``; principal moments at least ``moments`` (default: unbounded)."""
    return LinkBounds(low * mass, high * mass, np.full(3, -margin), np.full(3, margin), mass,
                      np.array(moments, dtype=float), np.full(3, np.inf))


def test_a_parameter_outside_its_bounds_is_reported():
    bounds = PlausibilityBounds({"a": box(1.0), "b": box(2.0)}, "test")
    inside = check_plausibility({"a": (1.2, np.zeros(3), np.eye(3)), "b": (3.0, np.zeros(3), np.eye(3))},
                                bounds)
    assert inside.plausible and "within its bounds" in inside.format()
    bounds.links["d"] = box(1.0, moments=(0.1, 0.1, 0.1))
    report = check_plausibility({"a": (2.5, np.zeros(3), np.eye(3)),
                                 "b": (3.0, np.array([0.0, 0.08, 0.0]), np.eye(3)),
                                 "c": (99.0, np.zeros(3), np.eye(3)),
                                 "d": (1.0, np.zeros(3), np.diag([1e-4, 0.2, 0.2]))}, bounds)
    assert not report.plausible
    lines = report.format().splitlines()
    assert len(lines) == 3
    assert "a mass 2.5 kg outside [0.5, 2]" in lines[0] and "b centre of mass" in lines[1]
    assert "d principal moments [0.0001, 0.2, 0.2]" in lines[2]
    as_dict = {link["name"]: link for link in report.to_dict()["links"]}
    assert not as_dict["a"]["mass_ok"] and as_dict["a"]["com_ok"]
    assert as_dict["c"]["bounded"] is False and as_dict["c"]["mass_ok"]      # no bounds: not judged


def test_the_penalty_is_zero_inside_and_pushes_back_from_outside():
    tensors = BoundTensors.of(["a", "free"], PlausibilityBounds({"a": box(1.0)}, "test"))
    com = torch.zeros(2, 3, dtype=torch.float64)
    inertia = torch.eye(3, dtype=torch.float64).repeat(2, 1, 1)
    inside = bound_penalty(torch.tensor([1.5, 50.0], dtype=torch.float64), com, inertia, tensors)
    assert inside.item() == 0.0
    mass = torch.tensor([3.0, 50.0], dtype=torch.float64, requires_grad=True)
    far = com.clone()
    far[0, 2] = 0.07
    far.requires_grad_(True)
    value = bound_penalty(mass, far, inertia, tensors)
    mass_max, com_max = 2.0 - INSET * 1.5, 0.05 - INSET * 0.1        # the box, inset
    np.testing.assert_allclose(value.item(), (3.0 - mass_max) ** 2 + ((0.07 - com_max) / 0.01) ** 2)
    value.backward()
    assert mass.grad[0] > 0 and mass.grad[1] == 0 and far.grad[0, 2] > 0
    # a principal moment below its bound is pushed up
    tensors = BoundTensors.of(["a"], PlausibilityBounds({"a": box(1.0, moments=(0.1, 0.1, 0.1))}, "test"))
    thin = torch.diag(torch.tensor([0.01, 0.2, 0.2], dtype=torch.float64))[None].requires_grad_(True)
    value = bound_penalty(torch.ones(1, dtype=torch.float64), torch.zeros(1, 3, dtype=torch.float64),
                          thin, tensors)
    np.testing.assert_allclose(value.item(), ((0.1 * (1 + INSET) - 0.01) / 0.1) ** 2)
    value.backward()
    assert thin.grad[0, 0, 0] < 0            # descent raises the thin moment


def test_identification_with_bounds_keeps_every_mass_inside():
    """Bounds that exclude what identification finds without them (one link's mass must be
    10-30 % lower): with them every mass ends inside and the fit still explains the torques."""
    nominal, train, heldout = nominal_and_truth_samples()
    config = IdentificationConfig(parametrisation="cov", epochs=40, learning_rate=2e-2, seed=0)
    free = identify(nominal, train, heldout, config)
    found = free.dynamics.link_inertials()
    links = {n: box(m, 0.5, 1.5, 0.2) for n, (m, _, _) in found.items()}
    squeezed = "lbr_iiwa_link_3"
    m3 = found[squeezed][0]
    links[squeezed] = LinkBounds(0.7 * m3, 0.9 * m3, np.full(3, -0.2), np.full(3, 0.2), m3)
    bounds = PlausibilityBounds(links, "test")
    assert not check_plausibility(found, bounds).plausible
    bounded = identify(nominal, train, heldout, dataclasses.replace(config, bounds=bounds))
    assert bounded.plausibility is not None and bounded.plausibility.plausible, \
        bounded.plausibility.format()
    assert np.all(bounded.nmse_heldout_after < 0.5 * bounded.nmse_heldout_before)


def test_a_placeholder_link_is_moved_into_its_bounds_before_the_fit():
    """PyBullet's Panda fingers: 0.1 kg, 0.1 kg m^2 moments, against bounds of grams and 1e-5 kg
    m^2. The projection lands inside every bound and keeps the inertia physical (the triangle
    inequality), its axes unchanged; a link inside its bounds is left as it is."""
    bounds = LinkBounds(0.0075, 0.024, np.array([-0.05, -0.05, -0.03]), np.array([0.05, 0.05, 0.07]),
                        0.015, np.array([1e-6, 2.4e-6, 2.4e-6]) * 0.2, np.array([1e-6, 2.4e-6, 2.4e-6]) * 5)
    rotation = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))[0]
    placeholder = rotation @ np.diag([0.1, 0.1, 0.1]) @ rotation.T
    mass, com, inertia = project_into_bounds(0.1, np.array([0.0, 0.0, 0.3]), placeholder, bounds)
    check = check_plausibility({"finger": (mass, com, inertia)}, PlausibilityBounds({"finger": bounds}, "t"))
    assert check.plausible, check.format()
    small, middle, large = principal_moments(inertia)
    assert large <= small + middle + 1e-15
    kept = (0.015, np.array([0.0, 0.0, 0.02]), np.diag([2.4e-6, 2.4e-6, 1e-6]))
    for a, b in zip(project_into_bounds(*kept, bounds), kept):
        np.testing.assert_allclose(a, b)


def test_the_fit_starts_inside_the_bounds_and_reports_the_given_models_error():
    nominal, train, heldout = nominal_and_truth_samples()
    found = {n: (float(m), c, i) for n, (m, c, i) in LearnableDynamics(nominal, "cov").link_inertials().items()}
    squeezed = "lbr_iiwa_link_3"
    links = {n: box(m, 0.5, 1.5, 0.2) for n, (m, _, _) in found.items()}
    links[squeezed] = LinkBounds(0.3 * found[squeezed][0], 0.5 * found[squeezed][0],
                                 np.full(3, -0.2), np.full(3, 0.2), found[squeezed][0])
    bounds = PlausibilityBounds(links, "test")
    start = inside_bounds(nominal, list(found), bounds)
    assert check_plausibility(LearnableDynamics(start, "cov").link_inertials(), bounds).plausible
    config = IdentificationConfig(parametrisation="cov", epochs=1, seed=0, bounds=bounds)
    result = identify(nominal, train, heldout, config)
    np.testing.assert_allclose(result.nmse_heldout_before,
                               evaluate_nmse(LearnableDynamics(nominal, "cov"), heldout), rtol=1e-9)
