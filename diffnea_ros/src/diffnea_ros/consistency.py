"""Physical-consistency check of a set of link inertial parameters (paper 002 §3).

Per link, with I the rotational inertia about the CoM and J its principal moments (the
eigenvalues of the symmetric part of I, ascending J_a ≤ J_b ≤ J_c):

* ``finite``: mass, CoM and inertia contain no NaN/inf;
* ``mass_positive``: m > 0 (eq. 4);
* ``inertia_symmetric``: max|I − Iᵀ| ≤ tol · max|I| (eq. 4);
* ``inertia_positive_definite``: J_a > tol · max|J| (eqs. 5-7; a relative threshold, so a
  singular matrix is not passed by rounding noise);
* ``triangle_inequality``: J_a + J_b − J_c ≥ −tol · (|J_a| + |J_b| + |J_c|) (eq. 8; with
  J_c the largest moment this covers all three inequalities).

Checks that need the inertia are False for a link whose inertia is not finite.  Inputs are
NumPy arrays or torch tensors (any dtype; evaluated in float64).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from diffnea_ros.errors import ConsistencyError, DiffneaError

__all__ = ["LinkConsistency", "ConsistencyReport", "check_consistency"]

_CHECKS = ("finite", "mass_positive", "inertia_symmetric", "inertia_positive_definite",
           "triangle_inequality")


@dataclass(frozen=True)
class LinkConsistency:
    """Consistency of one link; the values explain the failures in ``ConsistencyReport.format``."""

    name: str
    mass_positive: bool
    inertia_symmetric: bool
    inertia_positive_definite: bool
    triangle_inequality: bool
    finite: bool
    mass: float
    principal_moments: Tuple[float, float, float]   # ascending, of the symmetric part
    asymmetry: float                                  # max |I - I^T|

    @property
    def ok(self) -> bool:
        return all(getattr(self, check) for check in _CHECKS)

    def failures(self) -> List[str]:
        """One phrase per failing check, e.g. ``"mass -0.1 kg is not positive"``."""
        j = ", ".join(f"{v:.6g}" for v in self.principal_moments)
        phrases = {
            "finite": "values are not finite",
            "mass_positive": f"mass {self.mass:.6g} kg is not positive",
            "inertia_symmetric": f"inertia is not symmetric (max |I - I^T| = {self.asymmetry:.3g})",
            "inertia_positive_definite": f"inertia is not positive definite "
                                         f"(principal moments {j})",
            "triangle_inequality": f"principal moments {j} violate the triangle inequality",
        }
        return [phrases[check] for check in _CHECKS if not getattr(self, check)]


@dataclass(frozen=True)
class ConsistencyReport:
    """Per-link consistency records; ``consistent`` when every link passes every check."""

    links: Tuple[LinkConsistency, ...]
    tol: float

    @property
    def consistent(self) -> bool:
        return all(link.ok for link in self.links)

    def inconsistent_links(self) -> Tuple[LinkConsistency, ...]:
        """The records of the links failing at least one check (``.name`` for their names)."""
        return tuple(link for link in self.links if not link.ok)

    def format(self) -> str:
        """Readable text: a summary line, then one line per failing link and check."""
        bad = self.inconsistent_links()
        if not bad:
            return f"all {len(self.links)} links are physically consistent"
        lines = [f"{len(bad)} of {len(self.links)} links are physically inconsistent:"]
        for link in bad:
            lines.extend(f"  {link.name}: {phrase}" for phrase in link.failures())
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready dict: ``consistent``, ``tol``, ``links`` (one dict per link; NaN → None)."""
        links = []
        for link in self.links:
            record = asdict(link)
            record["mass"] = _json_float(link.mass)
            record["asymmetry"] = _json_float(link.asymmetry)
            record["principal_moments"] = [_json_float(v) for v in link.principal_moments]
            record["ok"] = link.ok
            record["failures"] = link.failures()
            links.append(record)
        return {"consistent": self.consistent, "tol": self.tol, "links": links}

    def raise_if_inconsistent(self) -> None:
        """Raise ``ConsistencyError`` (one line naming the failing links) unless consistent."""
        bad = self.inconsistent_links()
        if bad:
            detail = "; ".join(f"{link.name}: {', '.join(link.failures())}" for link in bad)
            raise ConsistencyError(f"physically inconsistent inertial parameters: {detail}")


def _json_float(value: float) -> Optional[float]:
    """JSON has no NaN/inf: non-finite values become None."""
    return float(value) if np.isfinite(value) else None


def _as_float64(x: Any, what: str) -> np.ndarray:
    if hasattr(x, "detach"):                      # torch tensor, without importing torch
        x = x.detach().cpu().numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DiffneaError(f"{what} is not numeric: {exc}") from None


def check_consistency(mass: Any, com: Any, inertia: Any, names: Optional[Sequence[str]] = None,
                      tol: float = 1e-9) -> ConsistencyReport:
    """Check mass (L,), com (L, 3), inertia (L, 3, 3) link by link (see module docstring).

    ``names`` labels the links (default ``"link <i>"``); ``tol`` is the relative tolerance of
    the symmetry, positive-definiteness and triangle checks.
    """
    m, c, inertia = (_as_float64(mass, "mass"), _as_float64(com, "com"),
                     _as_float64(inertia, "inertia"))
    if m.ndim != 1:
        raise DiffneaError(f"mass must have shape (L,), got {m.shape}")
    n = m.shape[0]
    if c.shape != (n, 3):
        raise DiffneaError(f"com must have shape ({n}, 3), got {c.shape}")
    if inertia.shape != (n, 3, 3):
        raise DiffneaError(f"inertia must have shape ({n}, 3, 3), got {inertia.shape}")
    if not (np.isfinite(tol) and tol >= 0):
        raise DiffneaError(f"tol must be a finite number >= 0, got {tol}")
    if names is None:
        names = [f"link {i}" for i in range(n)]
    names = [str(name) for name in names]
    if len(names) != n:
        raise DiffneaError(f"got {len(names)} names for {n} links")

    inertia_finite = np.isfinite(inertia).reshape(n, 9).all(-1)
    finite = np.isfinite(m) & np.isfinite(c).all(-1) & inertia_finite
    safe = np.where(inertia_finite[:, None, None], inertia, 0.0)
    asymmetry = np.abs(safe - np.swapaxes(safe, -1, -2)).reshape(n, 9).max(-1)
    scale = np.abs(safe).reshape(n, 9).max(-1)
    symmetric = inertia_finite & (asymmetry <= tol * scale)
    moments = np.linalg.eigvalsh(0.5 * (safe + np.swapaxes(safe, -1, -2)))   # ascending
    magnitude = np.abs(moments)
    positive_definite = inertia_finite & (moments[:, 0] > tol * magnitude.max(-1))
    slack = moments[:, 0] + moments[:, 1] - moments[:, 2]
    triangle = inertia_finite & (slack >= -tol * magnitude.sum(-1))
    mass_positive = np.isfinite(m) & (m > 0)

    links = tuple(
        LinkConsistency(name=names[i], mass_positive=bool(mass_positive[i]),
                        inertia_symmetric=bool(symmetric[i]),
                        inertia_positive_definite=bool(positive_definite[i]),
                        triangle_inequality=bool(triangle[i]), finite=bool(finite[i]),
                        mass=float(m[i]),
                        principal_moments=tuple(float(v) for v in moments[i])
                        if inertia_finite[i] else (float("nan"),) * 3,
                        asymmetry=float(asymmetry[i]) if inertia_finite[i] else float("nan"))
        for i in range(n))
    return ConsistencyReport(links=links, tol=float(tol))
