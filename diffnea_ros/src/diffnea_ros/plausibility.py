"""Plausible, not only consistent (issue 38): bounds on each link's mass and centre of mass from
published figures, the penalty that keeps identification inside them (penalty-based, as Gaz et
al., RA-L 2019, retrieve feasible Panda parameters) and the report of each parameter against its
bounds.

    P(theta) = sum_links [(relu(m - m_max) + relu(m_min - m)) / m_ref]^2
             + sum_links,axes [(relu(c - c_max) + relu(c_min - c)) / COM_SCALE]^2
             + sum_links,k [(relu(l_k - l_max,k) + relu(l_min,k - l_k)) / l_ref,k]^2

with l_k the k-th smallest principal moment of the link's inertia about its centre of mass (a
link far lighter in rotation than a real one makes a simulator's joint controller unstable).

is added to L_ID (paper 002 eq. 2) with a weight; it is 0 inside the bounds (their box shrunk by
INSET, so that the optimiser's last steps end inside).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import numpy as np
import torch

from diffnea_ros.errors import DiffneaError
from diffnea_ros.published_links import inertia_matrix, read_published

PANDA_BOUNDS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config",
                                 "panda_bounds.yaml")
COM_SCALE = 0.01     # m: a centre of mass 1 cm outside its box costs as much as m_ref of mass
# The penalty's box is the bounds' shrunk by this fraction of their width on each side: Adam's
# last steps (about the learning rate, relative) then end inside the bounds, not on them.
INSET = 0.03


@dataclass(frozen=True)
class LinkBounds:
    """A link's mass [kg] and centre-of-mass box in its frame [m]; ``reference`` the published
    mass the penalty is normalised by."""

    mass_min: float
    mass_max: float
    com_min: np.ndarray
    com_max: np.ndarray
    reference: float
    moments_min: np.ndarray = field(default_factory=lambda: np.zeros(3))       # kg m^2, sorted
    moments_max: np.ndarray = field(default_factory=lambda: np.full(3, np.inf))


@dataclass(frozen=True)
class PlausibilityBounds:
    links: dict[str, LinkBounds]
    source: str

    @classmethod
    def from_yaml(cls, path: str = PANDA_BOUNDS_FILE) -> "PlausibilityBounds":
        """Bounds of the file: ``source``, ``mass_factor: [low, high]`` x each link's published
        mass, ``com_margin`` [m] about its published centre of mass, ``inertia_factor: [low,
        high]`` x its published principal moments, ``links: {name: {mass, com, inertia: [ixx,
        iyy, izz, ixy, ixz, iyz]}}``. DiffneaError naming the entry for a missing or malformed
        one."""
        raw, published = read_published(path, "plausibility bounds")
        try:
            low, high = (float(v) for v in raw["mass_factor"])
            margin = float(raw["com_margin"])
            i_low, i_high = (float(v) for v in raw["inertia_factor"])
            if not (0.0 < low < 1.0 < high and 0.0 < i_low < 1.0 < i_high and margin > 0.0):
                raise ValueError("needs 0 < low < 1 < high factors and a positive com_margin")
        except (KeyError, TypeError, ValueError) as exc:
            raise DiffneaError(f"plausibility bounds {path}: {exc}") from None
        links = {}
        for name, link in published.items():
            moments = principal_moments(link.inertia)
            links[name] = LinkBounds(low * link.mass, high * link.mass, link.com - margin,
                                     link.com + margin, link.mass, i_low * moments, i_high * moments)
        return cls(links, str(raw["source"]))


@dataclass(frozen=True)
class BoundTensors:
    """The penalty's box (the bounds shrunk by INSET) of an ordered set of links as tensors
    (unbounded links: infinite bounds)."""

    mass_min: torch.Tensor      # (N,)
    mass_max: torch.Tensor
    reference: torch.Tensor
    com_min: torch.Tensor       # (N, 3)
    com_max: torch.Tensor
    moments_min: torch.Tensor   # (N, 3), sorted
    moments_max: torch.Tensor
    moments_reference: torch.Tensor

    @classmethod
    def of(cls, names: Sequence[str], bounds: PlausibilityBounds,
           dtype: torch.dtype = torch.float64) -> "BoundTensors":
        inf, rows = float("inf"), [bounds.links.get(n) for n in names]

        def column(pick, missing) -> torch.Tensor:
            return torch.as_tensor(np.array([pick(b) if b is not None else missing for b in rows],
                                            dtype=float), dtype=dtype)

        def inset(b: LinkBounds) -> tuple[float, float, np.ndarray, np.ndarray]:
            dm, dc = INSET * (b.mass_max - b.mass_min), INSET * (b.com_max - b.com_min)
            return b.mass_min + dm, b.mass_max - dm, b.com_min + dc, b.com_max - dc
        return cls(column(lambda b: inset(b)[0], -inf), column(lambda b: inset(b)[1], inf),
                   column(lambda b: b.reference, 1.0),
                   column(lambda b: inset(b)[2], [-inf] * 3), column(lambda b: inset(b)[3], [inf] * 3),
                   column(lambda b: b.moments_min * (1.0 + INSET), [0.0] * 3),
                   column(lambda b: b.moments_max * (1.0 - INSET), [inf] * 3),
                   column(lambda b: np.where(b.moments_min > 0, b.moments_min, 1.0), [1.0] * 3))


def principal_moments(inertia: np.ndarray) -> np.ndarray:
    """Sorted principal moments of (ixx, iyy, izz, ixy, ixz, iyz) or a (3, 3) inertia."""
    inertia = inertia_matrix(inertia)
    return np.linalg.eigvalsh(0.5 * (inertia + inertia.T))


def bound_penalty(mass: torch.Tensor, com: torch.Tensor, inertia: torch.Tensor,
                  bounds: BoundTensors) -> torch.Tensor:
    """P(theta) of the module docstring for masses (N,), centres of mass (N, 3) and inertias
    about them (N, 3, 3) in the order ``bounds`` was made for."""
    over = torch.relu(mass - bounds.mass_max) + torch.relu(bounds.mass_min - mass)
    outside = torch.relu(com - bounds.com_max) + torch.relu(bounds.com_min - com)
    moments = torch.linalg.eigvalsh(0.5 * (inertia + inertia.transpose(-1, -2)))
    beyond = torch.relu(moments - bounds.moments_max) + torch.relu(bounds.moments_min - moments)
    return (((over / bounds.reference) ** 2).sum() + ((outside / COM_SCALE) ** 2).sum()
            + ((beyond / bounds.moments_reference) ** 2).sum())


@dataclass(frozen=True)
class LinkCheck:
    name: str
    mass: float
    com: tuple[float, float, float]
    moments: tuple[float, float, float]
    bounds: Optional[LinkBounds]

    @property
    def mass_ok(self) -> bool:
        return self.bounds is None or self.bounds.mass_min <= self.mass <= self.bounds.mass_max

    @property
    def com_ok(self) -> bool:
        b = self.bounds
        return b is None or bool(np.all((np.asarray(self.com) >= b.com_min - 1e-9)
                                        & (np.asarray(self.com) <= b.com_max + 1e-9)))

    @property
    def moments_ok(self) -> bool:
        b = self.bounds
        return b is None or bool(np.all((np.asarray(self.moments) >= b.moments_min * (1 - 1e-9))
                                        & (np.asarray(self.moments) <= b.moments_max * (1 + 1e-9))))

    @property
    def ok(self) -> bool:
        return self.mass_ok and self.com_ok and self.moments_ok

    def to_dict(self) -> dict:
        out = {"name": self.name, "mass": self.mass, "com": list(self.com),
               "principal_moments": list(self.moments), "mass_ok": self.mass_ok,
               "com_ok": self.com_ok, "moments_ok": self.moments_ok,
               "bounded": self.bounds is not None}
        if self.bounds is not None:
            out.update(mass_bounds=[self.bounds.mass_min, self.bounds.mass_max],
                       com_bounds=[self.bounds.com_min.tolist(), self.bounds.com_max.tolist()],
                       moments_bounds=[self.bounds.moments_min.tolist(),
                                       np.where(np.isfinite(self.bounds.moments_max),
                                                self.bounds.moments_max, -1.0).tolist()])
        return out


@dataclass(frozen=True)
class PlausibilityReport:
    links: tuple[LinkCheck, ...]
    source: str

    @property
    def plausible(self) -> bool:
        return all(c.ok for c in self.links)

    def to_dict(self) -> dict:
        return {"plausible": self.plausible, "source": self.source,
                "links": [c.to_dict() for c in self.links]}

    def format(self) -> str:
        """One line per link outside its bounds, or that all are inside."""
        bad = [c for c in self.links if not c.ok]
        if not bad:
            bounded = sum(c.bounds is not None for c in self.links)
            return (f"plausible: every mass, centre of mass and principal moment of the {bounded} "
                    f"bounded links within its bounds")
        lines = []
        for c in bad:
            b = c.bounds
            assert b is not None
            if not c.mass_ok:
                lines.append(f"implausible: {c.name} mass {c.mass:.4g} kg outside "
                             f"[{b.mass_min:.4g}, {b.mass_max:.4g}]")
            if not c.com_ok:
                lines.append(f"implausible: {c.name} centre of mass {np.round(c.com, 4).tolist()} m "
                             f"outside [{np.round(b.com_min, 4).tolist()}, {np.round(b.com_max, 4).tolist()}]")
            if not c.moments_ok:
                lines.append(f"implausible: {c.name} principal moments "
                             f"{[float(f'{v:.3g}') for v in c.moments]} kg m^2 outside "
                             f"[{[float(f'{v:.3g}') for v in b.moments_min]}, "
                             f"{[float(f'{v:.3g}') for v in b.moments_max]}]")
        return "\n".join(lines)


def project_into_bounds(mass: float, com: np.ndarray, inertia: np.ndarray,
                        bounds: LinkBounds) -> tuple[float, np.ndarray, np.ndarray]:
    """The nearest inertials inside ``bounds`` (shrunk by INSET) of a link's (mass, com, (3, 3)
    inertia about the com): mass and com clipped, principal moments clipped about the same axes,
    the largest lowered to the sum of the others if clipping broke the triangle inequality. The
    fit starts there, so the penalty never has to pull a link far (a URDF's placeholder
    inertials, e.g. PyBullet's 0.1 kg fingers with 0.1 kg m^2 moments, are far outside)."""
    dm, dc = INSET * (bounds.mass_max - bounds.mass_min), INSET * (bounds.com_max - bounds.com_min)
    mass = float(np.clip(mass, bounds.mass_min + dm, bounds.mass_max - dm))
    com = np.clip(np.asarray(com, dtype=float), bounds.com_min + dc, bounds.com_max - dc)
    values, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
    values = np.clip(values, bounds.moments_min * (1.0 + INSET), bounds.moments_max * (1.0 - INSET))
    order = np.argsort(values)
    small, middle, large = values[order]
    values[order[2]] = min(large, small + middle)
    return mass, com, axes @ np.diag(values) @ axes.T


def check_plausibility(inertials: Mapping[str, tuple], bounds: PlausibilityBounds) -> PlausibilityReport:
    """Each link of ``inertials`` (name -> (mass, com, inertia), as ``link_inertials()``)
    against ``bounds``."""
    return PlausibilityReport(tuple(
        LinkCheck(name, float(m), tuple(float(v) for v in np.asarray(c)),
                  tuple(float(v) for v in principal_moments(np.asarray(i, dtype=float))),
                  bounds.links.get(name))
        for name, (m, c, i) in inertials.items()), bounds.source)
