"""A prior on the identified inertials (issue 38): the nominal URDF's or a published model's
(Gaz et al., RA-L 2019, for a Panda: config/panda_bounds.yaml), as a penalty added to L_ID
(paper 002 eq. 2) with a weight chosen on held-out data (identification.py):

    R(theta) = sum_links [((m - m0) / m0)^2 + |c - c0|^2 / s_c^2
                          + |I - I0|_F^2 / (tr(I0) / 3)^2]

with I the inertia about the centre of mass c (link frame) and s_c the com scale (the file's
com_margin, 0.05 m by default). Each term is 1 for a deviation about
the size of the published bounds' width, so one weight fits every link and unit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import torch

from diffnea_ros.errors import DiffneaError
from diffnea_ros.published_links import published_link, read_published

PRIOR_COM_SCALE = 0.05   # m: the published bounds' margin about each centre of mass, by default


@dataclass(frozen=True)
class InertialPrior:
    """Per link: (mass [kg], com (3,) [m], inertia (3, 3) about the com [kg m^2]); ``source``
    names where they come from, ``com_scale`` [m] is the deviation of a centre of mass that costs
    as much as a mass off by its own size."""

    links: Mapping[str, tuple[float, np.ndarray, np.ndarray]]
    source: str
    com_scale: float = PRIOR_COM_SCALE

    @classmethod
    def from_yaml(cls, path: str) -> "InertialPrior":
        """The links of a file in config/panda_bounds.yaml's format (published_links.py), its
        ``com_margin`` (default PRIOR_COM_SCALE) as the com scale; DiffneaError naming the entry
        for a missing or malformed one."""
        raw, links = read_published(path, "prior")
        try:
            com_scale = float(raw.get("com_margin", PRIOR_COM_SCALE))
        except (TypeError, ValueError) as exc:
            raise DiffneaError(f"prior {path}: com_margin: {exc}") from None
        if not (np.isfinite(com_scale) and com_scale > 0.0):
            raise DiffneaError(f"prior {path}: com_margin must be a positive length, got "
                               f"{com_scale}")
        return cls({n: (link.mass, link.com, link.inertia) for n, link in links.items()},
                   str(raw["source"]), com_scale)

    @classmethod
    def of_model(cls, inertials: Mapping[str, tuple], source: str) -> "InertialPrior":
        """The prior of a model's ``link_inertials()`` (name -> (mass, com, inertia)), e.g. the
        nominal URDF's; links a prior cannot scale by (no mass, an inertia that is not positive
        definite, a non-finite entry) are left out."""
        links = {}
        for name, (mass, com, inertia) in inertials.items():
            try:
                link = published_link(name, mass, com, inertia)
            except ValueError:
                continue
            links[name] = (link.mass, link.com, link.inertia)
        return cls(links, source)


@dataclass(frozen=True)
class PriorTensors:
    """The prior of an ordered set of links as tensors; ``weight`` 0 for a link it lacks."""

    mass: torch.Tensor       # (N,)
    com: torch.Tensor        # (N, 3)
    inertia: torch.Tensor    # (N, 3, 3)
    weight: torch.Tensor     # (N,)
    com_scale: float = PRIOR_COM_SCALE

    @classmethod
    def of(cls, names: Sequence[str], prior: InertialPrior,
           dtype: torch.dtype = torch.float64) -> "PriorTensors":
        rows = [prior.links.get(n) for n in names]
        if not any(r is not None for r in rows):
            raise DiffneaError(f"the prior ({prior.source}) has none of the learnt links "
                               f"{list(names)}")
        one = (1.0, np.zeros(3), np.eye(3))
        pick = [r if r is not None else one for r in rows]

        def tensor(values) -> torch.Tensor:
            return torch.as_tensor(np.array(values, dtype=float), dtype=dtype)
        return cls(tensor([m for m, _, _ in pick]), tensor([c for _, c, _ in pick]),
                   tensor([i for _, _, i in pick]), tensor([r is not None for r in rows]),
                   prior.com_scale)


def prior_penalty(mass: torch.Tensor, com: torch.Tensor, inertia: torch.Tensor,
                  prior: PriorTensors) -> torch.Tensor:
    """R(theta) of the module docstring for masses (N,), centres of mass (N, 3) and inertias
    about them (N, 3, 3) in the order ``prior`` was made for."""
    scale = torch.diagonal(prior.inertia, dim1=-2, dim2=-1).sum(-1) / 3.0
    per_link = (((mass - prior.mass) / prior.mass) ** 2
                + ((com - prior.com) ** 2).sum(-1) / prior.com_scale ** 2
                + ((inertia - prior.inertia) ** 2).sum((-2, -1)) / scale ** 2)
    return (prior.weight * per_link).sum()
