"""The online identifier's prediction side: a frozen copy of the learnt model that the trainer
refreshes after every update, so predictions, the recent NMSE and snapshots never wait for
training and never see a half-updated model (paper 002 eq. 1, the inverse dynamics)."""
from __future__ import annotations

import copy
import threading
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch

from diffnea_ros.identification import Samples, consistency_of, evaluate_nmse
from diffnea_ros.learnable import FrictionParameters, LearnableDynamics


@dataclass(frozen=True)
class LinkEstimate:
    """One learnable link: mass [kg], com (3,) [m] link frame, inertia (3, 3) [kg m²] about the
    com in link axes, and its consistency flags."""

    name: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    mass_positive: bool
    inertia_positive_definite: bool
    triangle_inequality: bool


@dataclass(frozen=True)
class Estimate:
    """The prediction copy's parameters, NMSE and consistency, read at one instant."""

    links: tuple[LinkEstimate, ...]
    damping: np.ndarray                    # (dof,) [N m s/rad]
    friction: Optional[FrictionParameters]
    nmse: np.ndarray                       # (dof,) on the recent window, or (0,) before any
    consistent: bool
    consistency_text: str

    @property
    def finite(self) -> bool:
        """No NaN/Inf anywhere (a NoStr mass driven to zero makes the CoM infinite)."""
        arrays = [self.damping, self.nmse] + [np.asarray([l.mass, *l.com, *l.inertia.ravel()])
                                              for l in self.links]
        if self.friction is not None:
            arrays += [self.friction.phi1, self.friction.phi2, self.friction.phi3]
        return all(bool(np.all(np.isfinite(a))) for a in arrays)


class OnlinePredictor:
    """A copy of ``dynamics`` without gradients; :meth:`load` takes the values of the trained
    parameters (in ``dynamics``' order). Thread-safe."""

    def __init__(self, dynamics: LearnableDynamics, dtype: torch.dtype) -> None:
        self.dtype = dtype
        self._model = copy.deepcopy(dynamics).requires_grad_(False)
        # the copies of the trained parameters (the model's constants never change)
        copies = dict(self._model.named_parameters())
        self._trained = [copies[name] for name, p in dynamics.named_parameters() if p.requires_grad]
        self._lock = threading.Lock()        # the copy, nmse
        self._nmse = np.zeros(0)

    def load(self, values: Sequence[torch.Tensor]) -> None:
        """Set the trained parameters to ``values``."""
        with self._lock, torch.no_grad():
            for copy_, value in zip(self._trained, values):
                copy_.copy_(value)

    @torch.no_grad()
    def predict(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Torques (B, dof) for states (B, dof) (or (dof,))."""
        args = [torch.as_tensor(np.atleast_2d(np.asarray(x, dtype=np.float64)), dtype=self.dtype)
                for x in (q, qd, qdd)]
        with self._lock:
            tau = self._model(*args)
        return tau.cpu().double().numpy()

    def evaluate(self, samples: Samples) -> np.ndarray:
        """NMSE per joint on ``samples``, kept for :meth:`estimate` when finite; returns the
        kept value."""
        with self._lock:
            value = evaluate_nmse(self._model, samples)
            if np.all(np.isfinite(value)):
                self._nmse = value
            return self._nmse.copy()

    def estimate(self) -> Estimate:
        """The current parameters, the kept NMSE and the consistency report."""
        with self._lock:
            dynamics = self._model
            with torch.no_grad():
                inertials = dynamics.inertials()
                damping = dynamics.damping().cpu().double().numpy()
            friction = dynamics.friction_parameters()
            report = consistency_of(dynamics)
            nmse = self._nmse.copy()
        mass, com, inertia = inertials.numpy()
        links = tuple(
            LinkEstimate(name, float(mass[i]), com[i].copy(), inertia[i].copy(),
                         flags.mass_positive, flags.inertia_positive_definite,
                         flags.triangle_inequality)
            for name, i, flags in zip(dynamics.learnable_links, dynamics.link_index.tolist(),
                                      report.links))
        return Estimate(links, damping, friction, nmse, report.consistent, report.format())
