"""A prior on the identified inertials (issue 38): the nominal URDF's or a published model's
(Gaz et al., RA-L 2019, for a Panda: config/panda_bounds.yaml), as a penalty added to L_ID
(paper 002 eq. 2) with a weight chosen on held-out data (identification.py):

    R(theta) = sum_links [((m - m0) / m0)^2 + |c - c0|^2 / PRIOR_COM_SCALE^2
                          + |I - I0|_F^2 / (tr(I0) / 3)^2]

with I the inertia about the centre of mass c (link frame). Each term is 1 for a deviation about
the size of the published bounds' width, so one weight fits every link and unit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import torch

from diffnea_ros.errors import DiffneaError

PRIOR_COM_SCALE = 0.05   # m: the published bounds' margin about each centre of mass


@dataclass(frozen=True)
class InertialPrior:
    """Per link: (mass [kg], com (3,) [m], inertia (3, 3) about the com [kg m^2]); ``source``
    names where they come from."""

    links: Mapping[str, tuple[float, np.ndarray, np.ndarray]]
    source: str

    @classmethod
    def from_yaml(cls, path: str) -> "InertialPrior":
        """The links of a file in config/panda_bounds.yaml's format (``source``, ``links: {name:
        {mass, com, inertia: [ixx, iyy, izz, ixy, ixz, iyz]}}``); DiffneaError naming the entry
        for a missing or malformed one."""
        from sim2real_checks import read_yaml
        raw = read_yaml(path, "prior", DiffneaError)
        try:
            links = {}
            for name, spec in raw["links"].items():
                mass, com = float(spec["mass"]), np.asarray(spec["com"], dtype=float)
                ixx, iyy, izz, ixy, ixz, iyz = (float(v) for v in spec["inertia"])
                inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
                if not (mass > 0.0 and com.shape == (3,) and np.all(np.isfinite(com))
                        and np.all(np.isfinite(inertia)) and np.trace(inertia) > 0.0):
                    raise ValueError(f"link {name}: needs a positive mass, a com of 3 finite "
                                     f"numbers and an inertia of positive trace")
                links[str(name)] = (mass, com, inertia)
            return cls(links, str(raw["source"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DiffneaError(f"prior {path}: {exc}") from None

    @classmethod
    def of_model(cls, inertials: Mapping[str, tuple], source: str) -> "InertialPrior":
        """The prior of a model's ``link_inertials()`` (name -> (mass, com, inertia)), e.g. the
        nominal URDF's; links without mass are left out."""
        return cls({n: (float(m), np.asarray(c, dtype=float), np.asarray(i, dtype=float))
                    for n, (m, c, i) in inertials.items() if float(m) > 0.0}, source)


@dataclass(frozen=True)
class PriorTensors:
    """The prior of an ordered set of links as tensors; ``weight`` 0 for a link it lacks."""

    mass: torch.Tensor       # (N,)
    com: torch.Tensor        # (N, 3)
    inertia: torch.Tensor    # (N, 3, 3)
    weight: torch.Tensor     # (N,)

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
                   tensor([i for _, _, i in pick]), tensor([r is not None for r in rows]))


def prior_penalty(mass: torch.Tensor, com: torch.Tensor, inertia: torch.Tensor,
                  prior: PriorTensors) -> torch.Tensor:
    """R(theta) of the module docstring for masses (N,), centres of mass (N, 3) and inertias
    about them (N, 3, 3) in the order ``prior`` was made for."""
    scale = torch.diagonal(prior.inertia, dim1=-2, dim2=-1).sum(-1) / 3.0
    per_link = (((mass - prior.mass) / prior.mass) ** 2
                + ((com - prior.com) ** 2).sum(-1) / PRIOR_COM_SCALE ** 2
                + ((inertia - prior.inertia) ** 2).sum((-2, -1)) / scale ** 2)
    return (prior.weight * per_link).sum()
