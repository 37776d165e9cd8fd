"""Inverse dynamics by the recursive Newton-Euler algorithm: tau = H(q) qdd + C(q, qd) qd + g(q) + D qd
(paper 002 eq. 1, the f_NE of eq. 2, with the joint viscous damping D of §4.2).

Batch-last in the joint frames of :mod:`diffnea_ros.joint_frames` (the layout is described there),
so that a large batch costs a few elementwise operations and constant 6x6 matrix products per body.
The forward pass (:func:`body_motion`) and the backward pass (:func:`joint_contributions`) are
shared with :mod:`diffnea_ros.regressor`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Optional

import torch

from diffnea_ros.joint_frames import cached_joint_frames, JointFrames
from diffnea_ros.model import Inertials, RigidBodyModel, check_inputs
from diffnea_ros.spatial import spatial_inertia


@dataclass(frozen=True)
class _JointValues:
    """Per-node joint quantities of a batch, all nodes at once."""

    position: torch.Tensor        # (nodes, B) q
    cos: torch.Tensor             # (nodes, B) cos q
    sin_sign: torch.Tensor        # (nodes, 2, 1, B) [sin q, -sin q]
    velocity_sign: torch.Tensor   # (nodes, 2, B) [qd, -qd]
    rates: torch.Tensor           # (2, nodes, B) qd, qdd


def _joint_values(frames: JointFrames, q: torch.Tensor, qd: torch.Tensor,
                  qdd: torch.Tensor) -> _JointValues:
    """Joint values (B, dof) -> per node, batch-last."""
    values = torch.stack([q.T, qd.T, qdd.T])                              # (3, dof, B)
    if frames.node_q_tensor is not None:
        values = values[:, frames.node_q_tensor]
    position, velocity, _ = values.unbind(0)
    return _JointValues(
        position=position, cos=torch.cos(position),
        sin_sign=(torch.sin(position).unsqueeze(1) * frames.sign).unsqueeze(2),
        velocity_sign=velocity.unsqueeze(1) * frames.sign, rates=values[1:])


def _turn_xy(xy: torch.Tensor, cos: torch.Tensor, sin_sign: torch.Tensor,
             inverse: bool) -> torch.Tensor:
    """Rotate the (x, y) pairs ``xy`` (..., 2, ...) about z by q (``inverse``: by -q, i.e.
    R_z(q)ᵀ); cos and sin_sign = [sin, -sin] broadcast against the dimensions after the pair."""
    return torch.addcmul(xy * cos, xy.flip(1), sin_sign, value=1.0 if inverse else -1.0)


def _perp(xy: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
    """(y, -x) of the pairs along dimension 0 of ``xy`` (x e_z = -e_z x): sign (2, 1, ...)."""
    return xy.flip(0) * sign


def _revolute_step(y: torch.Tensor, frames: JointFrames, joints: _JointValues,
                   n: int) -> torch.Tensor:
    """Node n's motion (2, 3, 2, B) from its parent's, already in its joint frame at q = 0:
    turn by -q about z, then add S qd, S qdd (angular z) and the velocity product v x S qd."""
    xy, z = y[:, :2], y[:, 2:]
    xy = _turn_xy(xy, joints.cos[n], joints.sin_sign[n], inverse=True)
    vel, acc = xy.unbind(2)                                           # (2, 2, B) x, y of w and v
    acc = torch.addcmul(acc, vel.flip(1), joints.velocity_sign[n])    # w, v x (qd e_z)
    z = torch.addcmul(z, frames.angular_row, joints.rates[:, n])      # + S qd, S qdd
    return torch.cat([torch.stack([vel, acc], 2), z], 1)


def _prismatic_step(y: torch.Tensor, frames: JointFrames, joints: _JointValues,
                    n: int) -> torch.Tensor:
    """As :func:`_revolute_step` for a slide along z by q: the translation q e_z adds
    -q e_z x w to v (and alpha to a), the joint velocity adds w x (qd e_z) to a."""
    ang, lin = y[0], y[1]                                             # (3, 2, B)
    perp = _perp(ang[:2], frames.sign.view(2, 1, 1))                  # (y, -x) of w and alpha
    lin_xy = torch.addcmul(lin[:2], perp, joints.position[n])
    lin_xy = torch.stack([lin_xy[:, 0], torch.addcmul(lin_xy[:, 1], perp[:, 0],
                                                      joints.velocity_sign[n, 0])], 1)
    lin = torch.cat([lin_xy, lin[2:] + joints.rates[:, n]])
    return torch.stack([ang, lin])


@dataclass
class BodyMotion:
    """The forward pass of the RNEA: every node's spatial velocity and acceleration (the latter
    with the gravity offset) in its joint frame, ``states[n]`` (2, 3, 2, B) = (angular / linear,
    xyz, velocity / acceleration, batch), and the joint values the backward pass needs.
    :attr:`omega`, :attr:`vel`, :attr:`alpha`, :attr:`acc` give them for every body (fixed
    links included) in link coordinates, (B, nb, 3) each."""

    frames: JointFrames
    joints: _JointValues
    states: list[Optional[torch.Tensor]]
    gravity: bool

    @cached_property
    def _link(self) -> torch.Tensor:
        """(B, nb, 2 angular / linear, 2 velocity / acceleration, 3) in link coordinates."""
        frames, batch = self.frames, self.joints.cos.shape[-1]
        bodies = []
        for body, node in enumerate(frames.anchor):
            if node >= 0 and frames.nodes[node] == body:
                bodies.append(self.states[node])
                continue
            above = (self.states[node].reshape(6, -1) if node >= 0
                     else frames.root_motion[self.gravity])               # (6, 2B) or (6, 2)
            moved = (frames.attach[body] @ above).view(2, 3, 2, -1)
            bodies.append(moved.expand(-1, -1, -1, batch))
        state = torch.stack(bodies)                                       # (nb, 2, 3, 2, B)
        if frames.identity:
            return state.permute(4, 0, 1, 3, 2)
        return torch.einsum("nji,nkjvb->bnkvi", frames.rotation, state)

    omega = property(lambda self: self._link[:, :, 0, 0])
    vel = property(lambda self: self._link[:, :, 1, 0])
    alpha = property(lambda self: self._link[:, :, 0, 1])
    acc = property(lambda self: self._link[:, :, 1, 1])


def body_motion(model: RigidBodyModel, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor,
                gravity: bool = True) -> BodyMotion:
    """Forward recursion of the RNEA: velocities and accelerations from the root outwards
    (the base accelerates upwards by -g, so gravity needs no separate term)."""
    frames = cached_joint_frames(model)
    joints = _joint_values(frames, q, qd, qdd)
    batch = q.shape[0]
    states: list[torch.Tensor] = []
    for n, (parent, kind) in enumerate(zip(frames.node_parent, frames.kinds)):
        if parent < 0:
            y = (frames.transform[n] @ frames.root_motion[gravity]).view(2, 3, 2, 1)
            y = y.expand(-1, -1, -1, batch)
        else:
            y = (frames.transform[n] @ states[parent].view(6, -1)).view(2, 3, 2, batch)
        states.append(_revolute_step(y, frames, joints, n) if kind == "revolute"
                      else _prismatic_step(y, frames, joints, n))
    return BodyMotion(frames, joints, states, gravity)


NodeForce = Callable[[int, Optional[torch.Tensor]], torch.Tensor]


def _joint_forces(model: RigidBodyModel, motion: BodyMotion, node_force: NodeForce,
                  start: Optional[int] = None) -> torch.Tensor:
    """Backward recursion of the RNEA, from the leaves to the root: node n's force (its fixed
    links' included) plus those its children pass on, ``node_force(n, passed_on or None)``
    (2, 3, B, ...) in its joint frame, is projected on S = e_z and passed to its parent
    -> tau (B, dof, ...). Forces are made when needed, so no (nodes, ...) tensor is allocated
    (a large batch stays in cache). With ``start``, only that node and its ancestors are
    visited (the other joints get zero)."""
    frames, joints = motion.frames, motion.joints
    if start is None:
        visit = list(range(len(frames.nodes) - 1, -1, -1))
    else:
        visit = [start]
        while frames.node_parent[visit[-1]] >= 0:
            visit.append(frames.node_parent[visit[-1]])
    passed: list[Optional[torch.Tensor]] = [None] * len(frames.nodes)
    tau: list[Optional[torch.Tensor]] = [None] * model.dof
    for n in visit:
        kind, f = frames.kinds[n], node_force(n, passed[n])
        tau[frames.node_q[n]] = f[0 if kind == "revolute" else 1, 2]
        parent = frames.node_parent[n]
        if parent < 0:
            continue
        batch, tail = f.shape[2], (1,) * (f.dim() - 3)
        if kind == "revolute":                    # turn back by q about z
            xy = _turn_xy(f[:, :2], joints.cos[n].view(batch, *tail),
                          joints.sin_sign[n].view(2, batch, *tail), inverse=False)
            f = torch.cat([xy, f[:, 2:]], 1)
        else:                                     # moment about the slid origin: q e_z x f
            n_ang, lin = f.unbind(0)
            xy = torch.addcmul(n_ang[:2], _perp(lin[:2], frames.sign.view(2, 1, *tail)),
                               joints.position[n].view(batch, *tail), value=-1.0)
            f = torch.stack([torch.cat([xy, n_ang[2:]]), lin])
        flat = f.reshape(6, -1)
        passed[parent] = (frames.transform_t[n] @ flat if passed[parent] is None else torch.addmm(
            passed[parent].view(6, -1), frames.transform_t[n], flat)).view(f.shape)
    zero = torch.zeros_like(tau[frames.node_q[visit[0]]])
    return torch.stack([t if t is not None else zero for t in tau], dim=1)


def joint_contributions(model: RigidBodyModel, motion: BodyMotion, f_ang: torch.Tensor,
                        f_lin: torch.Tensor) -> torch.Tensor:
    """Each body's force (B, nb, 3, ...) in link coordinates, carried towards the root and
    projected on every joint it passes -> (B, dof, nb, ...), zero where a joint does not carry
    the body. Trailing dimensions are carried along (the regressor propagates one column per
    inertial parameter); the bodies moving with one node go up together."""
    frames = motion.frames
    columns: list[Optional[torch.Tensor]] = [None] * len(frames.anchor)
    for n, node in enumerate(frames.nodes):
        bodies = (node,) + frames.carried[n]
        forces = []
        for body in bodies:                       # in the node's joint frame: (2, 3, B, ...)
            f = torch.stack([f_ang[:, body].movedim(1, 0), f_lin[:, body].movedim(1, 0)])
            if not frames.link_is_node[body]:
                f = (frames.link_to_node[body] @ f.view(6, -1)).view(f.shape)
            forces.append(f)
        force = torch.stack(forces, 3)                                    # (2, 3, B, bodies, ...)
        tau = _joint_forces(model, motion, lambda m, passed, n=n, force=force:
                            force if m == n else passed, start=n)
        for k, body in enumerate(bodies):
            columns[body] = tau[:, :, k]
    zero = torch.zeros_like(next(c for c in columns if c is not None))
    return torch.stack([c if c is not None else zero for c in columns], dim=2)   # root: zero


def project_to_joints(model: RigidBodyModel, motion: BodyMotion, f_ang: torch.Tensor,
                      f_lin: torch.Tensor) -> torch.Tensor:
    """Body forces (B, nb, 3, ...) in link coordinates accumulated from the leaves to the root
    and projected on each joint's motion subspace -> (B, dof, ...)."""
    return joint_contributions(model, motion, f_ang, f_lin).sum(2)


def _node_inertia(frames: JointFrames, inertials: Inertials) -> torch.Tensor:
    """Spatial inertia (nodes, 6, 6) of every node and the fixed links it carries, about the
    node's joint frame: I_n = sum_b X_bᵀ I_b X_b (links on the root carry no joint)."""
    inertia = spatial_inertia(inertials)                                  # (nb, 6, 6) link frames
    if all(frames.link_is_node):
        return inertia
    inertia = frames.link_to_node @ inertia @ frames.link_to_node.transpose(-1, -2)
    carried = [body for body, node in enumerate(frames.anchor) if node >= 0]
    index = torch.tensor([frames.anchor[body] for body in carried], device=inertia.device)
    return inertia.new_zeros(len(frames.nodes), 6, 6).index_add(0, index, inertia[carried])


def _newton_euler(motion: BodyMotion, inertials: Inertials, consume: bool = False) -> NodeForce:
    """Node n's Newton-Euler force f = I a + v x* (I v) (2, 3, B) in its joint frame, plus
    ``passed`` (the forces its children pass on) when given. ``consume`` drops each node's
    state from ``motion`` once used (less memory held for a large batch).

    The velocity product is a quadratic form of v = (w, v_lin): with C_kij = X_kil I_lj,
    (v x* I v)_k = sum_ij C_kij v_i v_j, and since the linear block of I is m 1 the products
    v_lin,i v_lin,j cancel (v_lin x m v_lin = 0). So per node: one outer product w vᵀ (3, 6)
    and one (6, 18) matrix product with the folded C."""
    inertia = _node_inertia(motion.frames, inertials)
    full = torch.einsum("kil,nlj->nkij", motion.frames.force_cross, inertia)   # (nodes, 6, 6, 6)
    folded = full[:, :, :3].clone()                                       # w_i v_j, j = 0..5
    folded[..., 3:] += full[:, :, 3:, :3].transpose(-1, -2)                # v_lin,i w_j terms
    quadratic = folded.flatten(2)                                         # (nodes, 6, 18)

    def force(n: int, passed: Optional[torch.Tensor]) -> torch.Tensor:
        state = motion.states[n]
        batch = state.shape[-1]
        vel, acc = state[:, :, 0].reshape(6, batch), state[:, :, 1].reshape(6, batch)
        own = (inertia[n] @ acc if passed is None
               else torch.addmm(passed.view(6, batch), inertia[n], acc))
        outer = (vel[:3].unsqueeze(1) * vel.unsqueeze(0)).view(18, batch)   # w_i v_j
        if consume:
            motion.states[n] = None
        return torch.addmm(own, quadratic[n], outer).view(2, 3, batch)
    return force



def rnea(model: RigidBodyModel, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor,
         inertials: Optional[Inertials] = None, damping: Optional[torch.Tensor] = None,
         gravity: bool = True) -> torch.Tensor:
    """Inverse dynamics by the recursive Newton-Euler algorithm (paper 002 eq. 1-2):
    tau (B, dof) = H(q) qdd + C(q, qd) qd + g(q) + damping * qd.

    ``inertials`` default to the model's nominal ones, ``damping`` (dof,) to the URDF's.
    """
    q, qd, qdd = check_inputs(model, q=q, qd=qd, qdd=qdd)
    inertials = inertials if inertials is not None else model.nominal_inertials()
    damping = damping if damping is not None else model.nominal_damping
    motion = body_motion(model, q, qd, qdd, gravity)
    tau = _joint_forces(model, motion, _newton_euler(motion, inertials, consume=True))
    return tau + damping * qd
