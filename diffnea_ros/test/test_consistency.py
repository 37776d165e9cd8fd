"""Physical-consistency check (paper 002 §3): one hand-made case per failure kind."""
import json

import numpy as np
import pytest
import torch

from diffnea_ros.consistency import ConsistencyReport, check_consistency
from diffnea_ros.errors import ConsistencyError, DiffneaError

NAMES = ["base_link", "upper_link", "lower_link"]


def good():
    mass = np.array([1.0, 0.5, 0.2])
    com = np.array([[0.0, 0.0, 0.1], [0.0, 0.0, 0.05], [0.01, 0.0, 0.0]])
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    inertia = np.stack([np.diag([0.01, 0.02, 0.025]),
                        rot @ np.diag([1e-3, 2e-3, 2.5e-3]) @ rot.T,
                        np.diag([1e-4, 1e-4, 1e-4])])
    return mass, com, inertia


def only_failure(report, index, check):
    """Exactly ``check`` fails, and only for link ``index``."""
    for i, link in enumerate(report.links):
        failing = [c for c in ("finite", "mass_positive", "inertia_symmetric",
                               "inertia_positive_definite", "triangle_inequality")
                   if not getattr(link, c)]
        assert failing == ([check] if i == index else []), (i, failing)


def test_consistent_links():
    report = check_consistency(*good(), names=NAMES)
    assert isinstance(report, ConsistencyReport)
    assert report.consistent and report.inconsistent_links() == ()
    assert report.format() == "all 3 links are physically consistent"
    assert [link.name for link in report.links] == NAMES
    np.testing.assert_allclose(report.links[1].principal_moments, [1e-3, 2e-3, 2.5e-3])
    report.raise_if_inconsistent()


@pytest.mark.parametrize("mass_value", [0.0, -0.3])
def test_non_positive_mass(mass_value):
    mass, com, inertia = good()
    mass[1] = mass_value
    report = check_consistency(mass, com, inertia, names=NAMES)
    only_failure(report, 1, "mass_positive")
    assert not report.consistent
    assert [link.name for link in report.inconsistent_links()] == ["upper_link"]
    assert f"upper_link: mass {mass_value:.6g} kg is not positive" in report.format()


def test_asymmetric_inertia():
    mass, com, inertia = good()
    inertia[2, 0, 1] = 1e-5          # the symmetric part stays PD and triangle-valid
    report = check_consistency(mass, com, inertia, names=NAMES)
    only_failure(report, 2, "inertia_symmetric")
    assert "lower_link: inertia is not symmetric" in report.format()
    assert report.links[2].asymmetry == pytest.approx(1e-5)


def test_symmetry_tolerance_is_relative():
    mass, com, inertia = good()
    inertia[0, 0, 1] = 1e-13         # 1e-11 relative to 0.025: numerical noise
    assert check_consistency(mass, com, inertia).consistent
    assert not check_consistency(mass, com, inertia, tol=1e-12).consistent


def test_not_positive_definite():
    mass, com, inertia = good()
    inertia[0] = np.diag([-1e-3, 0.02, 0.02])   # a negative moment also breaks eq. 8
    report = check_consistency(mass, com, inertia, names=NAMES)
    link = report.links[0]
    assert not link.inertia_positive_definite and not link.triangle_inequality
    assert link.mass_positive and link.inertia_symmetric and link.finite
    assert "base_link: inertia is not positive definite" in report.format()


def test_singular_inertia_is_not_positive_definite():
    """A rod with exactly zero axial moment: triangle holds (0 + a = a) but not PD."""
    mass, com, inertia = good()
    inertia[0] = np.diag([0.0, 0.02, 0.02])
    only_failure(check_consistency(mass, com, inertia), 0, "inertia_positive_definite")
    inertia[0] = np.diag([-1e-18, 0.02, 0.02])   # rounding noise does not pass as PD either
    assert not check_consistency(mass, com, inertia).links[0].inertia_positive_definite


def test_triangle_inequality():
    mass, com, inertia = good()
    inertia[1] = np.diag([1e-3, 1e-3, 2.5e-3])   # PD, but 1 + 1 < 2.5
    report = check_consistency(mass, com, inertia, names=NAMES)
    only_failure(report, 1, "triangle_inequality")
    assert "upper_link: principal moments 0.001, 0.001, 0.0025 violate the triangle" \
        in report.format()


def test_triangle_equality_and_tolerance():
    mass, com, inertia = good()
    inertia[1] = np.diag([1e-3, 1e-3, 2e-3])          # a flat disc: equality is admissible
    assert check_consistency(mass, com, inertia).consistent
    inertia[1] = np.diag([1e-3, 1e-3, 2e-3 * (1 + 1e-12)])   # within the relative tol
    assert check_consistency(mass, com, inertia).consistent
    inertia[1] = np.diag([1e-3, 1e-3, 2e-3 * (1 + 1e-6)])    # beyond it
    only_failure(check_consistency(mass, com, inertia), 1, "triangle_inequality")


def test_non_finite_values():
    mass, com, inertia = good()
    com[2, 1] = np.nan
    report = check_consistency(mass, com, inertia, names=NAMES)
    only_failure(report, 2, "finite")
    assert "lower_link: values are not finite" in report.format()
    inertia[0, 1, 1] = np.inf
    link = check_consistency(mass, com, inertia).links[0]
    assert not (link.finite or link.inertia_symmetric or link.inertia_positive_definite
                or link.triangle_inequality)
    assert link.mass_positive


def test_report_names_every_failing_link_and_only_those():
    mass, com, inertia = good()
    mass[0] = -1.0
    inertia[2] = np.diag([1e-4, 1e-4, 3e-4])
    text = check_consistency(mass, com, inertia, names=NAMES).format()
    lines = text.splitlines()
    assert lines[0] == "2 of 3 links are physically inconsistent:"
    assert lines[1].startswith("  base_link: mass -1 kg")
    assert lines[2].startswith("  lower_link: principal moments")
    assert "upper_link" not in text


def test_default_names_and_raise():
    mass, com, inertia = good()
    mass[2] = 0.0
    report = check_consistency(mass, com, inertia)
    assert report.inconsistent_links()[0].name == "link 2"
    with pytest.raises(ConsistencyError, match="link 2: mass 0 kg is not positive"):
        report.raise_if_inconsistent()


def test_to_dict_is_json():
    mass, com, inertia = good()
    mass[1] = -1.0
    inertia[0, 0, 0] = np.nan
    data = json.loads(json.dumps(check_consistency(mass, com, inertia, names=NAMES).to_dict(),
                                 allow_nan=False))
    assert data["consistent"] is False and data["tol"] == 1e-9
    assert [link["name"] for link in data["links"]] == NAMES
    assert data["links"][0]["principal_moments"] == [None, None, None]
    assert data["links"][1]["ok"] is False and data["links"][1]["mass_positive"] is False
    assert data["links"][1]["failures"] == ["mass -1 kg is not positive"]
    assert data["links"][2]["ok"] is True


def test_accepts_torch_and_lists():
    mass, com, inertia = good()
    torch_report = check_consistency(torch.tensor(mass, dtype=torch.float32),
                                     torch.tensor(com), torch.tensor(inertia, requires_grad=True),
                                     tol=1e-6)
    assert torch_report.consistent
    assert check_consistency(mass.tolist(), com.tolist(), inertia.tolist()).consistent


def test_bad_shapes_raise():
    mass, com, inertia = good()
    with pytest.raises(DiffneaError, match="com must have shape"):
        check_consistency(mass, com[:, :2], inertia)
    with pytest.raises(DiffneaError, match="inertia must have shape"):
        check_consistency(mass, com, inertia[:2])
    with pytest.raises(DiffneaError, match="2 names for 3 links"):
        check_consistency(mass, com, inertia, names=NAMES[:2])
