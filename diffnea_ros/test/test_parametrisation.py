"""The five inertial parametrisations of paper 002 §3 (eqs. 3-16): inversion, guarantees,
gradients and projection of inadmissible initial values."""
import math

import pytest
import torch
from torch.func import functional_call

from diffnea_ros.consistency import check_consistency
from diffnea_ros.errors import DiffneaError
from diffnea_ros.parametrisation import (PARAMETRISATIONS, SPD, Cov, InertialParametrisation,
                                         NoStr, Symm, Tri, make_parametrisation)

F64 = torch.float64
CLASSES = {"nostr": NoStr, "symm": Symm, "spd": SPD, "tri": Tri, "cov": Cov}
RAW_NAMES = {
    "nostr": {"theta_m": (), "theta_h": (3,), "theta_I": (9,)},
    "symm": {"theta_sqrt_m": (), "theta_h": (3,), "theta_I": (6,)},
    "spd": {"theta_sqrt_m": (), "theta_h": (3,), "theta_L": (6,)},
    "tri": {"theta_sqrt_m": (), "theta_h": (3,), "theta_raa": (3,), "theta_sqrt_J": (2,),
            "theta_a": ()},
    "cov": {"theta_sqrt_m": (), "theta_h": (3,), "theta_L": (6,)},
}


def random_rotations(n, gen):
    q = torch.randn(n, 4, generator=gen, dtype=F64)
    w, x, y, z = (q / q.norm(dim=-1, keepdim=True)).unbind(-1)
    return torch.stack([
        torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        torch.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        torch.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def consistent_inertials(n=24, seed=0):
    """Random admissible links (masses 0.1-5 kg, random rotations × admissible principal
    moments J_i = σ_j + σ_k, σ > 0), plus special cases: principal axes = link axes (θ_RAA = 0),
    a sphere, a rod, a near-disc, and a rotation by π (log map at its hard point)."""
    gen = torch.Generator().manual_seed(seed)
    sigma = 1e-4 + 0.05 * torch.rand(n, 3, generator=gen, dtype=F64)
    moments = sigma.sum(-1, keepdim=True) - sigma
    rot = random_rotations(n, gen)
    special = [  # (principal moments, rotation or None)
        ([0.01, 0.02, 0.025], torch.eye(3, dtype=F64)),                # θ_RAA = 0
        ([0.03, 0.03, 0.03], None),                                    # sphere
        ([2e-4, 0.04, 0.04], None),                                    # rod
        ([0.01, 0.01, 0.0199], None),                                  # near-disc
        ([0.011, 0.017, 0.023], torch.diag(torch.tensor([1.0, -1.0, -1.0], dtype=F64))),  # π
    ]
    for k, (values, r) in enumerate(special[:n]):
        moments[k] = torch.tensor(values, dtype=F64)
        if r is not None:
            rot[k] = r
    inertia = rot @ torch.diag_embed(moments) @ rot.transpose(-1, -2)
    inertia = 0.5 * (inertia + inertia.transpose(-1, -2))
    mass = 0.1 + 4.9 * torch.rand(n, generator=gen, dtype=F64)
    com = 0.2 * torch.randn(n, 3, generator=gen, dtype=F64)
    return mass, com, inertia


def max_err(a, b):
    return (a.to(F64) - b.to(F64)).abs().max().item()


# ----------------------------------------------------------------------------- inversion
@pytest.mark.parametrize("kind", PARAMETRISATIONS)
def test_round_trip_float64(kind):
    mass, com, inertia = consistent_inertials()
    module = make_parametrisation(kind, mass, com, inertia)
    assert isinstance(module, InertialParametrisation) and type(module) is CLASSES[kind]
    assert module.kind == kind
    assert module.projected_links == ()
    m, c, i = module()
    assert m.dtype == c.dtype == i.dtype == F64
    assert max_err(m, mass) < 1e-10
    assert max_err(c, com) < 1e-10
    assert max_err(i, inertia) < 1e-10


@pytest.mark.parametrize("kind", PARAMETRISATIONS)
def test_round_trip_float32_and_to(kind):
    mass, com, inertia = consistent_inertials(seed=1)
    module = make_parametrisation(kind, mass.float(), com.float(), inertia.float())
    assert all(p.dtype == torch.float32 for p in module.parameters())
    m, c, i = module()
    assert m.dtype == c.dtype == i.dtype == torch.float32
    assert max_err(m, mass) < 1e-5 and max_err(c, com) < 1e-5 and max_err(i, inertia) < 1e-6
    module64 = module.to(F64)
    assert all(p.dtype == F64 for p in module64.parameters())
    assert module64.mass_bias.dtype == module64.inertia_bias.dtype == F64
    assert max_err(module64()[2], inertia) < 1e-6


@pytest.mark.parametrize("kind", PARAMETRISATIONS)
def test_raw_parameters_are_named_parameters(kind):
    mass, com, inertia = consistent_inertials(n=5)
    module = make_parametrisation(kind, mass, com, inertia)
    params = dict(module.named_parameters())
    assert {name: tuple(p.shape[1:]) for name, p in params.items()} == RAW_NAMES[kind]
    assert all(p.shape[0] == 5 and p.requires_grad for p in params.values())
    assert [name for name, _ in module.named_buffers()] == ["mass_bias", "inertia_bias"]


def test_links_are_independent():
    """Vectorised forward: each link's result equals that of a one-link module."""
    mass, com, inertia = consistent_inertials(n=6, seed=3)
    for kind in PARAMETRISATIONS:
        whole = make_parametrisation(kind, mass, com, inertia, bias=1e-6)
        with torch.no_grad():
            for p in whole.parameters():
                p.add_(0.3 * torch.randn_like(p))
        outputs = whole()
        for k in (0, 4):
            single = CLASSES[kind](1, mass_bias=1e-6, inertia_bias=1e-6)
            single.load_state_dict({n: t[k:k + 1] for n, t in whole.state_dict().items()})
            for a, b in zip(single(), outputs):
                assert max_err(a[0], b[k]) < 1e-14


def test_unknown_kind_names_valid_ones():
    mass, com, inertia = consistent_inertials(n=2)
    with pytest.raises(DiffneaError) as err:
        make_parametrisation("cholesky", mass, com, inertia)
    for kind in PARAMETRISATIONS:
        assert kind in str(err.value)


def test_bad_inputs_raise():
    mass, com, inertia = consistent_inertials(n=3)
    with pytest.raises(DiffneaError, match="com must have shape"):
        make_parametrisation("cov", mass, com[:2], inertia)
    with pytest.raises(DiffneaError, match="inertia must have shape"):
        make_parametrisation("cov", mass, com, inertia[:, :2])
    bad = inertia.clone()
    bad[1, 0, 0] = float("nan")
    with pytest.raises(DiffneaError, match="link.* 1 .*not finite"):
        make_parametrisation("tri", mass, com, bad)
    with pytest.raises(DiffneaError, match="mass_bias"):
        make_parametrisation("spd", mass, com, inertia, bias=-1.0)
    module = make_parametrisation("spd", mass, com, inertia)
    with pytest.raises(DiffneaError, match="expected values for 3 links"):
        module.set_values(mass[:2], com[:2], inertia[:2])


def test_automatic_bias_is_relative_to_scale():
    """b = min(1e-6, 1e-3 · scale): 1e-6 for ordinary links, 0.1 % of a tiny link's values."""
    mass = torch.tensor([2.0, 1e-4], dtype=F64)
    com = torch.zeros(2, 3, dtype=F64)
    inertia = torch.stack([0.01 * torch.eye(3, dtype=F64), 1e-7 * torch.eye(3, dtype=F64)])
    module = make_parametrisation("cov", mass, com, inertia)
    assert torch.allclose(module.mass_bias, torch.tensor([1e-6, 1e-7], dtype=F64))
    assert torch.allclose(module.inertia_bias, torch.tensor([1e-6, 1e-10], dtype=F64))
    i = module()[2]
    assert max_err(i[0], inertia[0]) < 1e-15 and max_err(i[1], inertia[1]) < 1e-18
    fixed = make_parametrisation("cov", mass, com, inertia, bias=1e-8)
    assert torch.all(fixed.mass_bias == 1e-8) and torch.all(fixed.inertia_bias == 1e-8)


# ----------------------------------------------------------------------------- guarantees
def random_raw(kind, seeds=200, bias=1e-6):
    """One link per (seed, scale): raw parameters uniform in ±scale, scales 1e-8 ... 10."""
    scales = torch.tensor([1e-8, 1e-3, 0.1, 1.0, 10.0], dtype=F64)
    n = seeds * len(scales)
    module = CLASSES[kind](n, mass_bias=bias, inertia_bias=bias)
    gen = torch.Generator().manual_seed(1234)
    row_scale = scales.repeat(seeds)
    with torch.no_grad():
        for p in module.parameters():
            u = 2 * torch.rand(p.shape, generator=gen, dtype=F64) - 1
            p.copy_(u * row_scale.reshape((n,) + (1,) * (p.ndim - 1)))
    return module


@pytest.mark.parametrize("kind", ["tri", "cov"])
def test_tri_and_cov_are_always_fully_consistent(kind):
    m, c, i = random_raw(kind)()
    report = check_consistency(m.detach(), c.detach(), i.detach())
    assert report.consistent, report.format()


def test_spd_is_positive_definite_but_may_violate_triangle():
    m, c, i = random_raw("spd")()
    report = check_consistency(m.detach(), c.detach(), i.detach())
    for link in report.links:
        assert link.finite and link.mass_positive and link.inertia_symmetric
        assert link.inertia_positive_definite, link
    assert min(link.principal_moments[0] for link in report.links) >= 1e-6 * (1 - 1e-9)
    # §3.3: SPD does not enforce eq. 8 — the random sample contains violations.
    assert any(not link.triangle_inequality for link in report.links)


def test_symm_gives_positive_mass_and_symmetric_inertia_only():
    m, c, i = random_raw("symm")()
    report = check_consistency(m.detach(), c.detach(), i.detach())
    assert all(link.mass_positive and link.inertia_symmetric for link in report.links)
    assert torch.equal(i, i.transpose(-1, -2))
    assert any(not link.inertia_positive_definite for link in report.links)


def test_nostr_can_be_inconsistent_and_the_check_flags_it():
    m, c, i = random_raw("nostr")()
    report = check_consistency(m.detach(), c.detach(), i.detach())
    assert not report.consistent
    assert any(not link.mass_positive for link in report.links)
    assert any(not link.inertia_symmetric for link in report.links)
    assert any(not link.inertia_positive_definite for link in report.links)
    first_bad = report.inconsistent_links()[0].name
    assert f"  {first_bad}: " in report.format()


def test_tri_principal_moments_form_a_triangle():
    """Eq. 10: J3 is the third side of a triangle with sides J1, J2 and angle α."""
    module = random_raw("tri", seeds=20)
    j = module.principal_moments().detach()
    j1, j2, j3 = j.unbind(-1)
    alpha = math.pi * torch.sigmoid(module.theta_a.detach())
    assert torch.allclose(j3 ** 2, j1 ** 2 + j2 ** 2 - 2 * j1 * j2 * torch.cos(alpha),
                          rtol=1e-9, atol=1e-20)
    rot = module.rotation().detach()
    eye = torch.eye(3, dtype=F64).expand_as(rot)
    assert max_err(rot @ rot.transpose(-1, -2), eye) < 1e-12
    assert torch.allclose(torch.linalg.det(rot), torch.ones(len(rot), dtype=F64))


# ----------------------------------------------------------------------------- gradients
def raw_function(module):
    names = [name for name, _ in module.named_parameters()]

    def f(*values):
        m, c, i = functional_call(module, dict(zip(names, values)), ())
        return torch.cat([m, c.flatten(), i.flatten()])
    return f, tuple(p.detach().clone().requires_grad_(True) for p in module.parameters())


@pytest.mark.parametrize("kind", PARAMETRISATIONS)
def test_gradcheck(kind):
    mass, com, inertia = consistent_inertials(n=5, seed=2)   # includes θ_RAA = 0, sphere, rod
    f, params = raw_function(make_parametrisation(kind, mass, com, inertia))
    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("kind", PARAMETRISATIONS)
def test_gradients_finite_at_zero_raw_parameters(kind):
    """All raw parameters 0 except the mass: θ_RAA = 0, J1 = J2 = b, Cholesky factor 0."""
    module = CLASSES[kind](2)
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.zero_()
        (module.theta_m if kind == "nostr" else module.theta_sqrt_m).fill_(1.0)
    m, c, i = module()
    (m.sum() + c.sum() + i.sum()).backward()
    assert all(torch.isfinite(p.grad).all() for p in module.parameters())
    if kind != "nostr":
        f, params = raw_function(module)
        assert torch.autograd.gradcheck(f, params, eps=1e-7, atol=1e-6, rtol=1e-4)


def test_tri_gradients_finite_where_j3_nearly_vanishes():
    """J1 = J2 and α → 0 make J3 → 0; the sqrt of eq. 10 must still give finite gradients."""
    module = Tri(3, mass_bias=1e-6, inertia_bias=1e-6)
    with torch.no_grad():
        module.theta_sqrt_J.fill_(0.1)
        module.theta_a.copy_(torch.tensor([-10.0, -30.0, -60.0], dtype=F64))
    j = module.principal_moments()
    assert torch.all(j[:, 2] > 0)
    m, c, i = module()
    (m.sum() + c.sum() + i.pow(2).sum()).backward()
    assert all(torch.isfinite(p.grad).all() for p in module.parameters())


# ----------------------------------------------------------------------------- projection
def inadmissible_inertials():
    mass = torch.tensor([0.0, 1.0, 1.0, 1.0, -0.5, 2.0], dtype=F64)
    com = torch.tensor([[0.1, 0.0, 0.0]] * 6, dtype=F64)
    inertia = torch.stack([
        0.01 * torch.eye(3, dtype=F64),                                   # zero mass only
        torch.diag(torch.tensor([1e-3, 1e-3, 5e-3], dtype=F64)),         # triangle violated
        torch.diag(torch.tensor([-1e-3, 2e-3, 2e-3], dtype=F64)),        # not PD
        torch.zeros(3, 3, dtype=F64),                                     # point mass
        torch.tensor([[1e-2, 1e-3, 0], [0, 1e-2, 0], [0, 0, 1e-2]], dtype=F64),  # asymmetric
        torch.diag(torch.tensor([0.01, 0.02, 0.025], dtype=F64)),       # admissible
    ])
    return mass, com, inertia


@pytest.mark.parametrize("kind", ["spd", "tri", "cov"])
def test_projection_gives_finite_consistent_parameters(kind):
    mass, com, inertia = inadmissible_inertials()
    module = make_parametrisation(kind, mass, com, inertia)
    # link 1 is positive definite, hence admissible (kept exactly) for SPD
    assert module.projected_links == ((0, 2, 3, 4) if kind == "spd" else (0, 1, 2, 3, 4))
    assert all(torch.isfinite(p).all() for p in module.parameters())
    m, c, i = (t.detach() for t in module())
    report = check_consistency(m, c, i)
    if kind == "spd":   # SPD guarantees PD only; link 1 keeps its (PD) triangle violation
        assert all(l.mass_positive and l.inertia_positive_definite and l.inertia_symmetric
                   and l.finite for l in report.links)
        assert max_err(i[1], inertia[1]) < 1e-12
    else:
        assert report.consistent, report.format()
    assert max_err(c, com) < 1e-12                      # the CoM is kept
    assert max_err(m[1:4], mass[1:4]) < 1e-12 and m[0] > 0 and m[4] > 0
    assert max_err(m[5], mass[5]) < 1e-14 and max_err(i[5], inertia[5]) < 1e-14
    assert max_err(i[4], 0.5 * (inertia[4] + inertia[4].T)) < 1e-12   # symmetric part
    for k in range(3):
        grads = torch.autograd.grad(module()[k].sum(), list(module.parameters()),
                                    allow_unused=True)
        assert all(g is None or torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("kind", ["tri", "cov"])
def test_triangle_projection_is_the_documented_one(kind):
    """J = (1, 1, 5)e-3 is moved along (1, 1, -1) onto the slack plane J1 + J2 - J3 = 4b."""
    mass, com, inertia = inadmissible_inertials()
    module = make_parametrisation(kind, mass, com, inertia, bias=1e-6)
    moments = torch.linalg.eigvalsh(module()[2][1].detach())
    t = (4e-6 + 3e-3) / 3
    expected = torch.tensor([1e-3 + t, 1e-3 + t, 5e-3 - t], dtype=F64)
    assert max_err(moments, expected) < 1e-12
    assert abs(moments[0] + moments[1] - moments[2] - 4e-6) < 1e-12
    # not PD: the negative moment is raised to 4b
    moments = torch.linalg.eigvalsh(module()[2][2].detach())
    assert max_err(moments, torch.tensor([4e-6, 2e-3, 2e-3], dtype=F64)) < 1e-12


@pytest.mark.parametrize("kind", ["nostr", "symm"])
def test_zero_mass_projection_keeps_com_finite(kind):
    mass, com, inertia = inadmissible_inertials()
    module = make_parametrisation(kind, mass, com, inertia)
    m, c, i = module()
    assert torch.all(m > 0) and torch.isfinite(c).all() and max_err(c, com) < 1e-12
    if kind == "nostr":   # the baseline keeps every inertia as given
        assert max_err(i, inertia) == 0.0
