"""The joint frames the RNEA's recursions run in (:mod:`diffnea_ros.inverse_dynamics`): the
constant transforms between them, derived in float64 from a model's buffers and cached per model.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Optional

import torch

from diffnea_ros.model import RigidBodyModel
from diffnea_ros.spatial import block_rotation, force_cross, motion_transform
from diffnea_ros.vector3 import matvec

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
class JointFrames:
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


_FRAMES: "weakref.WeakKeyDictionary[RigidBodyModel, tuple[tuple, JointFrames]]" = \
    weakref.WeakKeyDictionary()


def _axis_to_z(axis: torch.Tensor) -> torch.Tensor:
    """A rotation Q (3, 3) with Q axis = e_z, the identity for e_z (rows u, axis x u, axis)."""
    helper = torch.zeros_like(axis)
    helper[0 if abs(float(axis[0])) < 0.9 else 1] = 1.0
    u = helper - (helper @ axis) * axis
    u = u / torch.linalg.norm(u)
    return torch.stack([u, torch.linalg.cross(axis, u), axis])


def _build_joint_frames(model: RigidBodyModel) -> JointFrames:
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
    body_transform = motion_transform(e, r)
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
    link_to_node = torch.stack(attach).transpose(-1, -2) @ block_rotation(q_rot)
    root = {}
    for gravity in (False, True):
        motion = torch.zeros(6, 2, **f64)
        if gravity:
            motion[3:, 1] = -model.gravity.to(torch.float64)
        root[gravity] = motion
    node_q = tuple(model.q_index[i] for i in nodes)
    like = dict(dtype=model.dtype, device=model.device)
    return JointFrames(
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
        root_motion={g: m.to(**like) for g, m in root.items()}, force_cross=force_cross(**like))


def cached_joint_frames(model: RigidBodyModel) -> JointFrames:
    """The model's :class:`JointFrames`, cached until one of the buffers they derive from is
    replaced (``.to()``) or modified in place."""
    sources = (model.origin_rotation, model.origin_translation, model.axis, model.gravity)
    cached = _FRAMES.get(model)
    if cached is not None and all(a is b and version == b._version
                                  for (a, version), b in zip(cached[0], sources)):
        return cached[1]
    frames = _build_joint_frames(model)
    _FRAMES[model] = (tuple((b, b._version) for b in sources), frames)
    return frames
