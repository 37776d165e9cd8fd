"""The links of a published inertial model in config/panda_bounds.yaml's format (``source``,
``links: {name: {mass, com, inertia: [ixx, iyy, izz, ixy, ixz, iyz]}}``): one reader for the
bounds (plausibility.py) and the prior (prior.py) made from the same file."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from diffnea_ros.errors import DiffneaError


@dataclass(frozen=True)
class PublishedLink:
    """A link's mass [kg], centre of mass (3,) [m] in its frame and inertia (3, 3) about it
    [kg m^2]."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


def inertia_matrix(values: Any) -> np.ndarray:
    """(3, 3) of (ixx, iyy, izz, ixy, ixz, iyz) or of a (3, 3); ValueError for another shape or a
    non-finite entry."""
    inertia = np.asarray(values, dtype=float)
    if inertia.shape == (6,):
        ixx, iyy, izz, ixy, ixz, iyz = inertia
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ValueError(f"an inertia must be 6 finite numbers or 3 x 3, got {inertia.shape}")
    return inertia


def published_link(name: str, mass: Any, com: Any, inertia: Any) -> PublishedLink:
    """The checked link: a positive mass, a com of 3 finite numbers, a positive definite
    inertia; ValueError naming the link otherwise."""
    try:
        mass, com, inertia = float(mass), np.asarray(com, dtype=float), inertia_matrix(inertia)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"link {name}: {exc}") from None
    if not (mass > 0.0 and com.shape == (3,) and np.all(np.isfinite(com))
            and np.all(np.linalg.eigvalsh(0.5 * (inertia + inertia.T)) > 0.0)):
        raise ValueError(f"link {name}: needs a positive mass, a com of 3 finite numbers and a "
                         f"positive definite inertia")
    return PublishedLink(mass, com, inertia)


def read_published(path: str, what: str) -> tuple[Mapping[str, Any], dict[str, PublishedLink]]:
    """The file's mapping and its checked links; DiffneaError ``"<what> <path>: ..."`` naming the
    entry for a missing or malformed one."""
    from sim2real_checks import read_yaml
    raw = read_yaml(path, what, DiffneaError)
    try:
        links = {str(name): published_link(str(name), spec["mass"], spec["com"], spec["inertia"])
                 for name, spec in raw["links"].items()}
        str(raw["source"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DiffneaError(f"{what} {path}: {exc}") from None
    return raw, links
