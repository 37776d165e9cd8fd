"""Batch-first rigid-body algorithms in PyTorch, differentiable in q, qd, qdd and the inertials.

Featherstone's spatial algebra (Rigid Body Dynamics Algorithms, 2008) in body coordinates, with
spatial vectors split into angular and linear 3-vectors (cheaper than 6x6 products):

- :func:`rnea`: inverse dynamics tau = H(q) qdd + C(q, qd) qd + g(q) + D qd (paper 002 eq. 1,
  the f_NE of eq. 2, with the joint viscous damping D of §4.2);
- :func:`forward_kinematics`: world poses of the link frames;
- :func:`mass_matrix`: H(q) by the composite rigid-body algorithm (CRBA);
- :func:`forward_dynamics`: qdd = H⁻¹ (tau − C qd − g − D qd).

Every function is vectorised over the batch; the only Python loops run over the bodies of the
tree (the recursion itself). Joint placements are computed for all bodies at once. The RNEA
(shared with :mod:`diffnea_ros.regressor`) works batch-last in joint frames, where a joint's
motion is a rotation about or a slide along z, so that a large batch costs a few elementwise
operations and constant 6x6 matrix products per body (see the section "RNEA" below).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Optional

import torch

from diffnea_ros.model import Inertials, RigidBodyModel, as_batch
from diffnea_ros.vector3 import matvec, skew


def _motion_subspaces(model: RigidBodyModel) -> tuple[torch.Tensor, torch.Tensor]:
    """Angular and linear parts of each body's joint motion subspace S (nb, 3): a revolute
    joint moves about its axis, a prismatic one along it, a fixed one not at all."""
    revolute = torch.tensor([t in ("revolute", "continuous") for t in model.joint_types],
                            dtype=model.dtype, device=model.device).unsqueeze(-1)
    prismatic = torch.tensor([t == "prismatic" for t in model.joint_types],
                             dtype=model.dtype, device=model.device).unsqueeze(-1)
    return model.axis * revolute, model.axis * prismatic


def _per_body(model: RigidBodyModel, x: torch.Tensor) -> torch.Tensor:
    """(B, dof) joint values to (B, nb) body values, zero for fixed joints."""
    padded = torch.cat([x, x.new_zeros(x.shape[0], 1)], dim=1)
    index = torch.tensor([i if i >= 0 else model.dof for i in model.q_index], device=x.device)
    return padded[:, index]


def joint_placements(model: RigidBodyModel, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotation (B, nb, 3, 3) and translation (B, nb, 3) of every body's frame in its parent's
    frame at configuration q (B, dof); all bodies at once (Rodrigues for revolute joints)."""
    s_ang, s_lin = _motion_subspaces(model)
    angle = _per_body(model, q)                                   # (B, nb)
    k = skew(s_ang)                                              # (nb, 3, 3), zero if not revolute
    eye = torch.eye(3, dtype=q.dtype, device=q.device)
    sin, cos = torch.sin(angle)[..., None, None], torch.cos(angle)[..., None, None]
    joint_rotation = eye + sin * k + (1.0 - cos) * (k @ k)       # (B, nb, 3, 3)
    rotation = model.origin_rotation @ joint_rotation
    translation = model.origin_translation + matvec(model.origin_rotation, s_lin * angle.unsqueeze(-1))
    return rotation, translation


def _check(model: RigidBodyModel, **arrays: torch.Tensor) -> list[torch.Tensor]:
    return [as_batch(x, model.dof, name) for name, x in arrays.items()]


# ------------------------------------------------------------------------------------------ RNEA
# The recursions work in *joint frames* and in a batch-last layout. Body i's joint frame is its
# link frame turned by a constant rotation Q_i that maps the joint axis to z. A joint's own
# motion is then a rotation about z (revolute) or a translation along z (prismatic), applied to
# the whole batch elementwise with cos q, sin q; everything else between a parent's joint frame
# and a child's is a constant 6x6 motion transform, applied to the whole batch as one matrix
# product. No per-sample 3x3 matrix is built. The recursions visit only the bodies moved by a
# joint (the "nodes"); a link on a fixed joint moves rigidly with the nearest node above it (or
# with the root) and its inertia is merged into that node's, as Pinocchio does. Spatial vectors
# are (2, 3, ...) tensors (angular, linear) with the batch after them; the forward pass carries
# velocity and acceleration together as (2, 3, 2, B) (last-but-one axis: velocity, acceleration).


@dataclass(frozen=True)
class _JointFrames:
    """Constants of the recursions derived from a model's buffers (one dtype and device)."""

    nodes: tuple[int, ...]        # the bodies moved by a joint, in topological order
    node_parent: tuple[int, ...]  # per node: the node its parent link moves with, -1: the root
    kinds: tuple[str, ...]        # per node: 'revolute' | 'prismatic'
    node_q: tuple[int, ...]       # per node: its column of q
    node_q_tensor: Optional[torch.Tensor]   # node_q as a long tensor, None if 0, 1, 2, ...
    transform: torch.Tensor       # (nodes, 6, 6) parent node's (root's) joint frame -> node's
                                  # at q = 0
    transform_t: torch.Tensor     # (nodes, 6, 6) their transposes (forces to the parent)
    anchor: tuple[int, ...]       # per body: the node it moves with (itself for a node), -1: root
    carried: tuple[tuple[int, ...], ...]   # per node: the fixed links moving with it
    attach: torch.Tensor          # (nb, 6, 6) anchor's joint frame -> body's (identity for nodes)
    link_to_node: torch.Tensor    # (nb, 6, 6) attachᵀ diag(Q, Q): link-frame force -> anchor's
    link_is_node: tuple[bool, ...]   # per body: link_to_node is the identity
    rotation: torch.Tensor        # (nb, 3, 3) Q: link frame -> joint frame (identity if fixed)
    identity: bool                # every Q is the identity (all axes are z)
    sign: torch.Tensor            # (2, 1) = [1, -1]: (y, -x) = sign * (x, y).flip
    angular_row: torch.Tensor     # (2, 1, 1, 1) = [1, 0]: a revolute joint's S = (e_z, 0)
    root_motion: dict[bool, torch.Tensor]   # gravity? -> (6, 2) root velocity, acceleration -g
    force_cross: torch.Tensor     # (6, 6, 6) X with (v x* h)_k = X_kil v_i h_l


_FRAMES: "weakref.WeakKeyDictionary[RigidBodyModel, tuple[tuple, _JointFrames]]" = \
    weakref.WeakKeyDictionary()


def _axis_to_z(axis: torch.Tensor) -> torch.Tensor:
    """A rotation Q (3, 3) with Q axis = e_z, the identity for e_z (rows u, axis x u, axis)."""
    helper = torch.zeros_like(axis)
    helper[0 if abs(float(axis[0])) < 0.9 else 1] = 1.0
    u = helper - (helper @ axis) * axis
    u = u / torch.linalg.norm(u)
    return torch.stack([u, torch.linalg.cross(axis, u), axis])


def _motion_transform(e: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Spatial motion transforms [[E, 0], [-E [r]x, E]] (..., 6, 6) of rotations E (..., 3, 3)
    (old coordinates -> new) and translations r (..., 3) of the new origin in old coordinates."""
    top = torch.cat([e, torch.zeros_like(e)], -1)
    return torch.cat([top, torch.cat([-e @ skew(r), e], -1)], -2)


def _force_cross(**like) -> torch.Tensor:
    """X (6, 6, 6): (v x* h)_ang = w x h_ang + v_lin x h_lin, (v x* h)_lin = w x h_lin."""
    levi_civita = torch.zeros(3, 3, 3, **like)                        # (a x b)_k = e_kil a_i b_l
    for k, i, l in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        levi_civita[k, i, l], levi_civita[k, l, i] = 1.0, -1.0
    cross = torch.zeros(6, 6, 6, **like)
    cross[:3, :3, :3] = cross[:3, 3:, 3:] = cross[3:, :3, 3:] = levi_civita
    return cross


def _build_joint_frames(model: RigidBodyModel) -> _JointFrames:
    """Joint frames, nodes and constant transforms, in float64 from the model's buffers."""
    kinds = tuple("revolute" if t in ("revolute", "continuous") else t for t in model.joint_types)
    f64 = dict(dtype=torch.float64, device=model.device)
    eye = torch.eye(3, **f64)
    axis = model.axis.to(torch.float64)
    q_rot = torch.stack([eye if kind == "fixed" else _axis_to_z(axis[i])
                         for i, kind in enumerate(kinds)])
    parent_rot = torch.stack([q_rot[p] if p >= 0 else eye for p in model.parents])
    # every body from its parent's joint frame at q = 0: E = Q_i R_oᵀ Q_pᵀ, r in the parent's
    origin = model.origin_rotation.to(torch.float64)
    e = q_rot @ origin.transpose(-1, -2) @ parent_rot.transpose(-1, -2)
    r = matvec(parent_rot, model.origin_translation.to(torch.float64))
    body_transform = _motion_transform(e, r)
    nodes: list[int] = []
    node_parent: list[int] = []
    node_transform: list[torch.Tensor] = []
    anchor: list[int] = []
    attach: list[torch.Tensor] = []
    eye6 = torch.eye(6, **f64)
    for i, parent in enumerate(model.parents):
        above, above_attach = (anchor[parent], attach[parent]) if parent >= 0 else (-1, eye6)
        if kinds[i] == "fixed":            # moves rigidly with the parent's anchor
            anchor.append(above), attach.append(body_transform[i] @ above_attach)
        else:
            node_parent.append(above), node_transform.append(body_transform[i] @ above_attach)
            anchor.append(len(nodes)), attach.append(eye6), nodes.append(i)
    transform = torch.stack(node_transform)
    link_to_node = torch.stack(attach).transpose(-1, -2) @ _block_rotation(q_rot)
    root = {}
    for gravity in (False, True):
        motion = torch.zeros(6, 2, **f64)
        if gravity:
            motion[3:, 1] = -model.gravity.to(torch.float64)
        root[gravity] = motion
    node_q = tuple(model.q_index[i] for i in nodes)
    like = dict(dtype=model.dtype, device=model.device)
    return _JointFrames(
        nodes=tuple(nodes), node_parent=tuple(node_parent), kinds=tuple(kinds[i] for i in nodes),
        node_q=node_q,
        node_q_tensor=(None if node_q == tuple(range(len(nodes)))
                       else torch.tensor(node_q, device=model.device)),
        transform=transform.to(**like),
        transform_t=transform.transpose(-1, -2).contiguous().to(**like),
        anchor=tuple(anchor), attach=torch.stack(attach).to(**like),
        link_to_node=link_to_node.to(**like),
        link_is_node=tuple(bool(torch.equal(x, eye6)) for x in link_to_node),
        carried=tuple(tuple(b for b, a in enumerate(anchor) if a == n and b != node)
                      for n, node in enumerate(nodes)),
        rotation=q_rot.to(**like), identity=bool(torch.equal(q_rot, eye.expand_as(q_rot))),
        sign=torch.tensor([[1.0], [-1.0]], **like),
        angular_row=torch.tensor([1.0, 0.0], **like).view(2, 1, 1, 1),
        root_motion={g: m.to(**like) for g, m in root.items()}, force_cross=_force_cross(**like))


def _joint_frames(model: RigidBodyModel) -> _JointFrames:
    """The model's :class:`_JointFrames`, cached until one of the buffers they derive from is
    replaced (``.to()``) or modified in place."""
    sources = (model.origin_rotation, model.origin_translation, model.axis, model.gravity)
    cached = _FRAMES.get(model)
    if cached is not None and all(a is b and version == b._version
                                  for (a, version), b in zip(cached[0], sources)):
        return cached[1]
    frames = _build_joint_frames(model)
    _FRAMES[model] = (tuple((b, b._version) for b in sources), frames)
    return frames


@dataclass(frozen=True)
class _JointValues:
    """Per-node joint quantities of a batch, all nodes at once."""

    position: torch.Tensor        # (nodes, B) q
    cos: torch.Tensor             # (nodes, B) cos q
    sin_sign: torch.Tensor        # (nodes, 2, 1, B) [sin q, -sin q]
    velocity_sign: torch.Tensor   # (nodes, 2, B) [qd, -qd]
    rates: torch.Tensor           # (2, nodes, B) qd, qdd


def _joint_values(frames: _JointFrames, q: torch.Tensor, qd: torch.Tensor,
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


def _revolute_step(y: torch.Tensor, frames: _JointFrames, joints: _JointValues,
                   n: int) -> torch.Tensor:
    """Node n's motion (2, 3, 2, B) from its parent's, already in its joint frame at q = 0:
    turn by -q about z, then add S qd, S qdd (angular z) and the velocity product v x S qd."""
    xy, z = y[:, :2], y[:, 2:]
    xy = _turn_xy(xy, joints.cos[n], joints.sin_sign[n], inverse=True)
    vel, acc = xy.unbind(2)                                           # (2, 2, B) x, y of w and v
    acc = torch.addcmul(acc, vel.flip(1), joints.velocity_sign[n])    # w, v x (qd e_z)
    z = torch.addcmul(z, frames.angular_row, joints.rates[:, n])      # + S qd, S qdd
    return torch.cat([torch.stack([vel, acc], 2), z], 1)


def _prismatic_step(y: torch.Tensor, frames: _JointFrames, joints: _JointValues,
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

    frames: _JointFrames
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
    frames = _joint_frames(model)
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


def _node_inertia(frames: _JointFrames, inertials: Inertials) -> torch.Tensor:
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


def _block_rotation(rotation: torch.Tensor) -> torch.Tensor:
    """diag(Q, Q) (..., 6, 6) of rotations Q (..., 3, 3): turns spatial vectors."""
    zero = torch.zeros_like(rotation)
    return torch.cat([torch.cat([rotation, zero], -1), torch.cat([zero, rotation], -1)], -2)


def rnea(model: RigidBodyModel, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor,
         inertials: Optional[Inertials] = None, damping: Optional[torch.Tensor] = None,
         gravity: bool = True) -> torch.Tensor:
    """Inverse dynamics by the recursive Newton-Euler algorithm (paper 002 eq. 1-2):
    tau (B, dof) = H(q) qdd + C(q, qd) qd + g(q) + damping * qd.

    ``inertials`` default to the model's nominal ones, ``damping`` (dof,) to the URDF's.
    """
    q, qd, qdd = _check(model, q=q, qd=qd, qdd=qdd)
    inertials = inertials if inertials is not None else model.nominal_inertials()
    damping = damping if damping is not None else model.nominal_damping
    motion = body_motion(model, q, qd, qdd, gravity)
    tau = _joint_forces(model, motion, _newton_euler(motion, inertials, consume=True))
    return tau + damping * qd


def forward_kinematics(model: RigidBodyModel, q: torch.Tensor) -> torch.Tensor:
    """World (root-frame) poses (B, nb, 4, 4) of every link frame at configuration q."""
    (q,) = _check(model, q=q)
    rotation, translation = joint_placements(model, q)
    world_r: list[torch.Tensor] = []
    world_p: list[torch.Tensor] = []
    for i, parent in enumerate(model.parents):
        if parent < 0:
            world_r.append(rotation[:, i]), world_p.append(translation[:, i])
        else:
            world_r.append(world_r[parent] @ rotation[:, i])
            world_p.append(world_p[parent] + matvec(world_r[parent], translation[:, i]))
    pose = q.new_zeros(q.shape[0], model.num_bodies, 4, 4)
    pose[..., :3, :3] = torch.stack(world_r, dim=1)
    pose[..., :3, 3] = torch.stack(world_p, dim=1)
    pose[..., 3, 3] = 1.0
    return pose


def spatial_inertia(inertials: Inertials) -> torch.Tensor:
    """6x6 spatial inertia (nb, 6, 6) of each body about its frame origin, (angular, linear)
    ordering: [[I_c + m [c]x [c]xᵀ, m [c]x], [m [c]xᵀ, m 1]]."""
    m = inertials.mass[..., None, None]
    cx = skew(inertials.com)
    eye = torch.eye(3, dtype=cx.dtype, device=cx.device).expand_as(cx)
    top = torch.cat([inertials.inertia + m * cx @ cx.transpose(-1, -2), m * cx], dim=-1)
    bottom = torch.cat([m * cx.transpose(-1, -2), m * eye], dim=-1)
    return torch.cat([top, bottom], dim=-2)


def _motion_transforms(rotation: torch.Tensor, translation: torch.Tensor) -> torch.Tensor:
    """Parent-to-body spatial motion transforms X (B, nb, 6, 6) = [[E, 0], [-E [r]x, E]]."""
    return _motion_transform(rotation.transpose(-1, -2), translation)


def mass_matrix(model: RigidBodyModel, q: torch.Tensor,
                inertials: Optional[Inertials] = None) -> torch.Tensor:
    """Joint-space inertia matrix H(q) (B, dof, dof) by the composite rigid-body algorithm."""
    (q,) = _check(model, q=q)
    inertials = inertials if inertials is not None else model.nominal_inertials()
    rotation, translation = joint_placements(model, q)
    xs = _motion_transforms(rotation, translation)               # (B, nb, 6, 6)
    s_ang, s_lin = _motion_subspaces(model)
    subspace = torch.cat([s_ang, s_lin], dim=-1)                 # (nb, 6)
    composite = list(spatial_inertia(inertials).expand(q.shape[0], -1, -1, -1).unbind(1))
    for i in range(model.num_bodies - 1, -1, -1):
        parent = model.parents[i]
        if parent >= 0:
            x = xs[:, i]
            composite[parent] = composite[parent] + x.transpose(-1, -2) @ composite[i] @ x
    entries: dict[tuple[int, int], torch.Tensor] = {}
    for i in range(model.num_bodies):
        qi = model.q_index[i]
        if qi < 0:
            continue
        force = matvec(composite[i], subspace[i].expand(q.shape[0], 6))
        entries[qi, qi] = (force * subspace[i]).sum(-1)
        j = i
        while model.parents[j] >= 0:
            force = matvec(xs[:, j].transpose(-1, -2), force)
            j = model.parents[j]
            qj = model.q_index[j]
            if qj >= 0:
                entries[qi, qj] = entries[qj, qi] = (force * subspace[j]).sum(-1)
    zero = q.new_zeros(q.shape[0])
    rows = [torch.stack([entries.get((r, c), zero) for c in range(model.dof)], dim=-1)
            for r in range(model.dof)]
    return torch.stack(rows, dim=-2)


def forward_dynamics(model: RigidBodyModel, q: torch.Tensor, qd: torch.Tensor, tau: torch.Tensor,
                     inertials: Optional[Inertials] = None,
                     damping: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Joint accelerations qdd (B, dof) = H(q)⁻¹ (tau − C(q, qd) qd − g(q) − damping qd)."""
    q, qd, tau = _check(model, q=q, qd=qd, tau=tau)
    bias = rnea(model, q, qd, torch.zeros_like(qd), inertials, damping)
    chol = torch.linalg.cholesky(mass_matrix(model, q, inertials))
    return torch.cholesky_solve((tau - bias).unsqueeze(-1), chol).squeeze(-1)
