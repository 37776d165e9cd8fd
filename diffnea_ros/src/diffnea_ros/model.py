"""The rigid-body model: the constants of a robot as torch buffers (Pinocchio's "model").

The tree structure (parents, joint types, which body a joint moves) is plain Python; numeric
constants (joint placements, axes, nominal inertials, damping, gravity) are registered buffers,
so ``model.to(device, dtype)`` moves them and the algorithms run in float32 or float64. The
inertial parameters are an argument of the algorithms (:class:`Inertials`), not part of the
model, so that a learnable parametrisation (paper 002 §3) can supply them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from diffnea_ros.urdf import RobotDescription, load_robot

GRAVITY = (0.0, 0.0, -9.81)   # [m/s²] in the root frame (PyBullet's and MuJoCo's default)


@dataclass
class Inertials:
    """Inertial parameters of every body: mass (nb,), com (nb, 3) in the link frame, inertia
    (nb, 3, 3) about the com with the link frame's axes (theta_i of paper 002 eq. 2)."""

    mass: torch.Tensor
    com: torch.Tensor
    inertia: torch.Tensor

    def detach(self) -> "Inertials":
        return Inertials(self.mass.detach(), self.com.detach(), self.inertia.detach())

    def numpy(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        d = self.detach()
        return (d.mass.cpu().double().numpy(), d.com.cpu().double().numpy(),
                d.inertia.cpu().double().numpy())


class RigidBodyModel(torch.nn.Module):
    """Kinematic tree and nominal dynamics of a robot, from a :class:`RobotDescription`."""

    def __init__(self, description: RobotDescription, gravity: tuple[float, float, float] = GRAVITY,
                 dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.description = description
        bodies = description.bodies
        self.parents: tuple[int, ...] = tuple(b.parent for b in bodies)
        self.joint_types: tuple[str, ...] = tuple(b.joint_type for b in bodies)
        q_index = {body: i for i, body in enumerate(description.joint_body)}
        self.q_index: tuple[int, ...] = tuple(q_index.get(i, -1) for i in range(len(bodies)))

        def buffer(name: str, values: np.ndarray) -> None:
            self.register_buffer(name, torch.as_tensor(np.asarray(values, dtype=float)).to(dtype))

        buffer("origin_rotation", np.stack([b.origin[:3, :3] for b in bodies]))
        buffer("origin_translation", np.stack([b.origin[:3, 3] for b in bodies]))
        buffer("axis", np.stack([b.axis for b in bodies]))
        buffer("nominal_mass", np.array([b.mass for b in bodies]))
        buffer("nominal_com", np.stack([b.com for b in bodies]))
        buffer("nominal_inertia", np.stack([b.inertia for b in bodies]))
        buffer("nominal_damping", np.array([bodies[i].damping for i in description.joint_body]))
        buffer("gravity", np.asarray(gravity))

    @classmethod
    def from_urdf(cls, source: str, gravity: tuple[float, float, float] = GRAVITY,
                  dtype: torch.dtype = torch.float64) -> "RigidBodyModel":
        """Load a URDF (path or text); raises :class:`~diffnea_ros.errors.UrdfError`."""
        return cls(load_robot(source), gravity=gravity, dtype=dtype)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.description.joint_names

    @property
    def body_names(self) -> tuple[str, ...]:
        return self.description.body_names

    @property
    def dof(self) -> int:
        return self.description.dof

    @property
    def num_bodies(self) -> int:
        return len(self.parents)

    @property
    def dtype(self) -> torch.dtype:
        return self.axis.dtype

    @property
    def device(self) -> torch.device:
        return self.axis.device

    def nominal_inertials(self) -> Inertials:
        """The URDF's inertials (copies, so a caller may modify them)."""
        return Inertials(self.nominal_mass.clone(), self.nominal_com.clone(),
                         self.nominal_inertia.clone())

    def extra_repr(self) -> str:
        return f"robot={self.description.name!r}, dof={self.dof}, bodies={self.num_bodies}"


def as_batch(x: torch.Tensor, dof: int, name: str) -> torch.Tensor:
    """Promote (dof,) to (1, dof) and check the last dimension."""
    if x.dim() == 1:
        x = x.unsqueeze(0)
    if x.dim() != 2 or x.shape[1] != dof:
        raise ValueError(f"{name} must have shape (batch, {dof}), got {tuple(x.shape)}")
    return x


def check_inputs(model: RigidBodyModel, **arrays: torch.Tensor) -> list[torch.Tensor]:
    """The named joint-space inputs of an algorithm as (..., dof) batches (:func:`as_batch`)."""
    return [as_batch(x, model.dof, name) for name, x in arrays.items()]
