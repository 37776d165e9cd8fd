"""Grasp-constrained motion planning of the cube pose (paper 004 §IV-A, "Grasp and Motion
Planning").

:class:`GraspPathPlanner`: a bidirectional RRT (RRT-Connect) in the cube's task space, position
x orientation, from the current cube pose to the goal pose (or a goal region), "under the
constraint that the grasp is maintained at all points along the path": the fingers' joint
positions come from inverse kinematics of the grasp's fingertip targets moved by each pose, and
poses and edges are checked for reach, floor, finger and link collisions and IK branch jumps.
Seeded and bounded; returns a densely sampled :class:`Plan` or ``None``. Settings:
:class:`PlannerConfig`.

The validity rules, the sampling and the goal preference: README.md, "How the controllers
work", "Motion planning (`rrt.py`)".
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from trifinger_controllers import cube
from trifinger_controllers.grasp_geometry import TIP_RADIUS
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.types import CUBE_WIDTH, N_FINGERS, CubePose
from trifinger_controllers.errors import TrifingerError

#: Arena limits for the cube's centre: xy radius as move_cube's goals, height up to this [m].
ARENA_RADIUS = 0.195 - CUBE_WIDTH * np.sqrt(3) / 2
MAX_CUBE_HEIGHT = 0.15
_LOWER_LINK_FRAMES = ("finger_lower_link_0", "finger_lower_link_120", "finger_lower_link_240")
#: Top of the lower link's axis in its frame: the tip centre is at (0.019, 0, -0.16) (URDF), the
#: link body (about 17 mm thick) runs straight up from it.
_LINK_AXIS_TOP = np.array([0.019, 0.0, 0.0])
#: Points of the lower link checked against the cube: fractions of the axis from 15 mm above
#: the tip centre (above the tip sphere) to 10 cm.
_LINK_SAMPLES = np.linspace(0.015, 0.10, 9) / 0.16


@dataclass(frozen=True)
class PlannerConfig:
    """Budget and validity thresholds of :class:`GraspPathPlanner` (units: m, rad, s)."""

    max_time: float = 2.0             # wall-clock budget per plan [s]
    max_iterations: int = 2000        # RRT-Connect iterations per plan
    step: float = 0.02                # extension step in the task-space metric [m]
    resolution: float = 0.005         # edge sampling for the validity check [m, metric]
    rotation_weight: float = 0.05     # metric weight of rotations [m/rad]: 1 rad ~ 5 cm
    orientation_spread: float = 0.5   # samples: start->goal slerp perturbed by up to this [rad]
    ik_tolerance: float = 1.5e-3      # max fingertip error of a valid IK solution [m]
    max_joint_step: float = 0.25      # max joint change between edge samples [rad]
    min_tip_height: float = TIP_RADIUS + 0.002
    min_finger_distance: float = 0.025  # between the lower links' axes of different fingers
    link_cube_clearance: float = 0.010  # lower link axis (above the tip) outside the cube by this
    floor_tolerance: float = 0.002    # lowest cube corner >= -floor_tolerance
    check_collisions: bool = True     # finger-finger and link-cube checks (off: a relaxed plan)
    goal_margin: float = 0.015        # goals valid also this far around them come first [m]
    goal_margin_angle: float = 0.1    # ... and turned by this much [rad]
    smoothing_iterations: int = 60
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("max_time", "step", "resolution", "rotation_weight", "ik_tolerance",
                     "max_joint_step"):
            if getattr(self, name) <= 0:
                raise TrifingerError(f"PlannerConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.max_iterations < 1:
            raise TrifingerError(f"PlannerConfig.max_iterations must be >= 1, got {self.max_iterations}")


@dataclass
class Plan:
    """A planned cube path with the grasp maintained: ``N`` waypoints, spaced by at most the
    planner's ``resolution``. ``tip_targets[k]`` are the fingertip positions of the grasp at
    cube pose ``k`` and ``joint_positions[k]`` the IK solution for them."""

    positions: np.ndarray          # (N, 3) cube centre [m]
    orientations: np.ndarray       # (N, 4) cube orientation (xyzw)
    joint_positions: np.ndarray    # (N, 9) [rad]
    tip_targets: np.ndarray        # (N, 3, 3) [m, world]
    planning_time: float = 0.0     # wall-clock [s]
    iterations: int = 0            # RRT-Connect iterations (0: the direct path was valid)
    raw_waypoints: int = 0         # tree path length before smoothing

    def __len__(self) -> int:
        return len(self.positions)

    def pose(self, k: int) -> CubePose:
        return CubePose(self.positions[k].copy(), self.orientations[k].copy())


@dataclass
class _Node:
    position: np.ndarray
    orientation: np.ndarray
    q: np.ndarray
    parent: int = -1


@dataclass
class _Tree:
    nodes: List[_Node] = field(default_factory=list)

    def add(self, node: _Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def path_to_root(self, index: int) -> List[_Node]:
        path = []
        while index >= 0:
            path.append(self.nodes[index])
            index = self.nodes[index].parent
        return path


def interpolate_pose(p0: np.ndarray, q0: np.ndarray, p1: np.ndarray, q1: np.ndarray,
                     t: float) -> Tuple[np.ndarray, np.ndarray]:
    """Pose at fraction ``t`` of the straight line (position) and slerp (orientation)."""
    rotvec = cube.relative_rotation_vector(q0, q1)
    orientation = cube.normalize(cube.multiply(cube.from_rotation_vector(t * rotvec), q0))
    return p0 + t * (p1 - p0), orientation


def _segment_distance(a0: np.ndarray, a1: np.ndarray, b0: np.ndarray, b1: np.ndarray) -> float:
    """Minimum distance between segments a0-a1 and b0-b1 (clamped closest points)."""
    u, v, w = a1 - a0, b1 - b0, a0 - b0
    a, b, c, d, e = u @ u, u @ v, v @ v, u @ w, v @ w
    denom = a * c - b * b
    s = np.clip((b * e - c * d) / denom, 0.0, 1.0) if denom > 1e-12 else 0.0
    t = np.clip((b * s + e) / c, 0.0, 1.0) if c > 1e-12 else 0.0
    s = np.clip((b * t - d) / a, 0.0, 1.0) if a > 1e-12 else 0.0
    return float(np.linalg.norm((a0 + s * u) - (b0 + t * v)))


class GraspPathPlanner:
    """RRT-Connect over cube poses for one grasp (paper 004 §IV-A).

    Args:
        kinematics: the fingers' model (its workspace is used; one planner per thread).
        tip_offsets_cube: (3, 3) fingertip centres in the cube frame (a grasp's
            :meth:`~trifinger_controllers.grasp_geometry.Grasp.tip_offsets`).
        config: budget and thresholds.
    """

    def __init__(self, kinematics: FingerKinematics, tip_offsets_cube: np.ndarray,
                 config: PlannerConfig = PlannerConfig()) -> None:
        offsets = np.asarray(tip_offsets_cube, dtype=float)
        if offsets.shape != (N_FINGERS, 3):
            raise TrifingerError(f"tip offsets must be (3, 3), got {offsets.shape}")
        self.kinematics = kinematics
        self.offsets = offsets
        self.config = config
        self._lower_ids = [kinematics.model.getFrameId(n) for n in _LOWER_LINK_FRAMES]
        self._rng = np.random.default_rng(config.seed)

    # ----------------------------------------------------------------------------- validity
    def tip_targets(self, position: np.ndarray, orientation: np.ndarray) -> np.ndarray:
        """(3, 3) world fingertip targets of the grasp at a cube pose."""
        return cube.rotate(orientation, self.offsets) + position

    def _pose_violation(self, position: np.ndarray, orientation: np.ndarray) -> str:
        cfg = self.config
        if np.hypot(position[0], position[1]) > ARENA_RADIUS or position[2] > MAX_CUBE_HEIGHT:
            return "cube outside the arena"
        low = float(np.min(cube.rotate(orientation, cube.CORNERS)[:, 2])) + position[2]
        return "cube below the floor" if low < -cfg.floor_tolerance else ""

    def _finger_violation(self, q: np.ndarray, targets: np.ndarray, position: np.ndarray,
                          orientation: np.ndarray) -> str:
        cfg = self.config
        kin = self.kinematics
        tips = kin.tip_positions(q)
        error = np.linalg.norm(tips - targets, axis=1)
        if np.max(error) > cfg.ik_tolerance:
            return f"IK: finger {int(np.argmax(error))} misses its target by {np.max(error) * 1000:.1f} mm"
        if not kin.within_limits(q):
            return "joint limits"
        if np.min(tips[:, 2]) < cfg.min_tip_height:
            return f"finger {int(np.argmin(tips[:, 2]))} too close to the floor"
        if not cfg.check_collisions:
            return ""
        lower = [kin.data.oMf[i] for i in self._lower_ids]
        # the lower link's axis runs from the tip centre straight up the link (its frame's z)
        tops = np.array([m.translation + m.rotation @ _LINK_AXIS_TOP for m in lower])
        for i in range(N_FINGERS):
            for j in range(i + 1, N_FINGERS):
                if _segment_distance(tips[i], tops[i], tips[j], tops[j]) < cfg.min_finger_distance:
                    return f"fingers {i} and {j} collide"
        # only the tip touches the cube: the link above the tip keeps out of the cube
        half = CUBE_WIDTH / 2 + cfg.link_cube_clearance
        world_to_cube = cube.conjugate(orientation)
        for i in range(N_FINGERS):
            points = tips[i] + _LINK_SAMPLES[:, None] * (tops[i] - tips[i])
            local = cube.rotate(world_to_cube, points - position)
            if np.any(np.all(np.abs(local) < half, axis=1)):
                return f"finger {i}'s link touches the cube"
        return ""

    def check(self, position: np.ndarray, orientation: np.ndarray,
              q_seed: np.ndarray) -> Tuple[Optional[np.ndarray], str]:
        """(joint positions holding the grasp at this cube pose, "") or (None, why not): IK
        seeded by ``q_seed`` and the validity conditions of the module docstring."""
        position = np.asarray(position, dtype=float)
        orientation = np.asarray(orientation, dtype=float)
        why = self._pose_violation(position, orientation)
        if why:
            return None, why
        targets = self.tip_targets(position, orientation)
        q = self.kinematics.inverse_kinematics(targets, q_seed, iterations=60,
                                               tolerance=0.2 * self.config.ik_tolerance)
        why = self._finger_violation(q, targets, position, orientation)
        return (None, why) if why else (q, "")

    def configuration(self, position: np.ndarray, orientation: np.ndarray,
                      q_seed: np.ndarray) -> Optional[np.ndarray]:
        """Joint positions holding the grasp at this cube pose, or None (see :meth:`check`)."""
        return self.check(position, orientation, q_seed)[0]

    def _has_margin(self, position: np.ndarray, orientation: np.ndarray, q: np.ndarray) -> bool:
        """True if the grasp also holds ``goal_margin`` away from the pose along the world axes
        (except below the floor) and turned by ``goal_margin_angle`` about them."""
        margin, angle = self.config.goal_margin, self.config.goal_margin_angle
        axes = np.concatenate([np.eye(3), -np.eye(3)])
        for axis in axes:
            shifted = position + margin * axis
            if margin > 0 and not (axis[2] < 0 and shifted[2] < CUBE_WIDTH / 2):
                if self.configuration(shifted, orientation, q) is None:
                    return False
            if angle > 0:
                turned = cube.multiply(cube.from_axis_angle(axis, angle), orientation)
                if self.configuration(position, turned, q) is None:
                    return False
        return True

    def _distance(self, p0, q0, p1, q1) -> float:
        return float(np.linalg.norm(p1 - p0) + self.config.rotation_weight * cube.angle_between(q0, q1))

    def edge(self, p0: np.ndarray, o0: np.ndarray, j0: np.ndarray, p1: np.ndarray,
             o1: np.ndarray, max_fraction: float = 1.0) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Valid poses (position, orientation, q) along the edge from (p0, o0) with joints j0
        towards (p1, o1), at most ``max_fraction`` of the way, stopping before the first invalid
        sample; excludes the start."""
        n = max(1, int(np.ceil(self._distance(p0, o0, p1, o1) / self.config.resolution)))
        out = []
        q_prev = j0
        for k in range(1, n + 1):
            t = k / n
            if t > max_fraction + 1e-9:
                break
            p, o = interpolate_pose(p0, o0, p1, o1, t)
            q = self.configuration(p, o, q_prev)
            if q is None or np.max(np.abs(q - q_prev)) > self.config.max_joint_step:
                break
            out.append((p, o, q))
            q_prev = q
        return out

    # ----------------------------------------------------------------------------- sampling
    def _sample(self, start: _Node, goal: _Node) -> Tuple[np.ndarray, np.ndarray]:
        rng = self._rng
        radius = ARENA_RADIUS * np.sqrt(rng.uniform())
        angle = rng.uniform(0, 2 * np.pi)
        z = rng.uniform(CUBE_WIDTH / 2, MAX_CUBE_HEIGHT)
        position = np.array([radius * np.cos(angle), radius * np.sin(angle), z])
        _, base = interpolate_pose(start.position, start.orientation, goal.position,
                                   goal.orientation, rng.uniform())
        axis = rng.normal(size=3)
        tilt = cube.from_axis_angle(axis / np.linalg.norm(axis),
                                    rng.uniform(0, self.config.orientation_spread))
        return position, cube.normalize(cube.multiply(tilt, base))

    # ----------------------------------------------------------------------------- RRT-Connect
    def _nearest(self, tree: _Tree, p: np.ndarray, o: np.ndarray) -> int:
        positions = np.array([n.position for n in tree.nodes])
        orientations = np.array([n.orientation for n in tree.nodes])
        d = np.linalg.norm(positions - p, axis=1) + self.config.rotation_weight * cube.angle_between(orientations, o)
        return int(np.argmin(d))

    def _extend(self, tree: _Tree, p: np.ndarray, o: np.ndarray) -> Tuple[int, bool]:
        """Step from the nearest node towards (p, o) by at most ``step``; (new node index or -1,
        reached)."""
        index = self._nearest(tree, p, o)
        node = tree.nodes[index]
        dist = self._distance(node.position, node.orientation, p, o)
        fraction = min(1.0, self.config.step / max(dist, 1e-12))
        samples = self.edge(node.position, node.orientation, node.q, p, o, fraction)
        if not samples:
            return -1, False
        pn, on, qn = samples[-1]
        new = tree.add(_Node(pn, on, qn, index))
        reached = self._distance(pn, on, p, o) < 1e-6
        return new, reached

    def _connect(self, tree: _Tree, p: np.ndarray, o: np.ndarray, q_target: np.ndarray) -> int:
        """Extend repeatedly towards (p, o); index of the node at it (with joints matching
        ``q_target``) or -1."""
        while True:
            index, reached = self._extend(tree, p, o)
            if index < 0:
                return -1
            if reached:
                same_branch = np.max(np.abs(tree.nodes[index].q - q_target)) <= self.config.max_joint_step
                return index if same_branch else -1

    def plan(self, start: CubePose, goals: Union[CubePose, Sequence[CubePose]],
             q_seed: np.ndarray) -> Optional[Plan]:
        """A path from ``start`` to one of ``goals`` (a goal region, in order of preference)
        holding the grasp, or None (start or every goal invalid, or no path within
        ``max_time`` / ``max_iterations``). ``q_seed`` seeds the IK at the start (e.g. the
        current joint positions). The direct path to each valid goal is tried first; the
        goal tree of RRT-Connect is rooted at all valid goals."""
        t0 = time.perf_counter()
        cfg = self.config
        goals = [goals] if isinstance(goals, CubePose) else list(goals)
        p_s, o_s = np.asarray(start.position, float), cube.normalize(start.orientation)
        q_s = self.configuration(p_s, o_s, np.asarray(q_seed, float))
        if q_s is None:
            return None
        start_node = _Node(p_s, o_s, q_s)
        valid: List[Tuple[bool, int, _Node]] = []
        for k, goal in enumerate(goals):
            p_g, o_g = np.asarray(goal.position, float), cube.normalize(goal.orientation)
            for seed in (q_s, self.kinematics.initial_position):
                q_g = self.configuration(p_g, o_g, np.asarray(seed, float))
                if q_g is not None:
                    valid.append((not self._has_margin(p_g, o_g, q_g), k, _Node(p_g, o_g, q_g)))
                    break
        if not valid:
            return None
        # goals with room around them first (corrections after the plan move the cube a bit)
        goal_tree = _Tree([node for _, _, node in sorted(valid, key=lambda v: v[:2])])

        # the direct path first
        for goal_node in goal_tree.nodes:
            direct = self.edge(p_s, o_s, q_s, goal_node.position, goal_node.orientation)
            if direct and self._distance(direct[-1][0], direct[-1][1], goal_node.position,
                                         goal_node.orientation) < 1e-6:
                return self._finish([start_node, _Node(*direct[-1])], t0, 0)
            if time.perf_counter() - t0 > cfg.max_time:
                return None

        trees = (_Tree([start_node]), goal_tree)
        iteration = 0
        while iteration < cfg.max_iterations and time.perf_counter() - t0 < cfg.max_time:
            iteration += 1
            grow, other = trees if iteration % 2 else trees[::-1]
            p, o = self._sample(start_node, goal_tree.nodes[self._rng.integers(len(goal_tree.nodes))])
            new, _ = self._extend(grow, p, o)
            if new < 0:
                continue
            node = grow.nodes[new]
            met = self._connect(other, node.position, node.orientation, node.q)
            if met < 0:
                continue
            a = trees[0].path_to_root(new if grow is trees[0] else met)[::-1]
            b = trees[1].path_to_root(met if grow is trees[0] else new)
            return self._finish(a + b[1:], t0, iteration)
        return None

    # ----------------------------------------------------------------------------- smoothing
    def _shortcut(self, path: List[_Node], deadline: float) -> List[_Node]:
        """Random shortcuts: replace i..j by the straight edge when it is valid."""
        for _ in range(self.config.smoothing_iterations):
            if len(path) <= 2 or time.perf_counter() > deadline:
                break
            i, j = sorted(self._rng.choice(len(path), size=2, replace=False))
            if j - i < 2:
                continue
            samples = self.edge(path[i].position, path[i].orientation, path[i].q,
                                 path[j].position, path[j].orientation)
            if samples and self._distance(samples[-1][0], samples[-1][1], path[j].position,
                                          path[j].orientation) < 1e-6 \
                    and np.max(np.abs(samples[-1][2] - path[j].q)) <= self.config.max_joint_step:
                path = path[:i + 1] + path[j:]
        return path

    def _finish(self, path: List[_Node], t0: float, iterations: int) -> Optional[Plan]:
        raw = len(path)
        path = self._shortcut(path, t0 + 1.5 * self.config.max_time)
        positions, orientations, joints = [path[0].position], [path[0].orientation], [path[0].q]
        for a, b in zip(path[:-1], path[1:]):
            samples = self.edge(positions[-1], orientations[-1], joints[-1], b.position, b.orientation)
            if not samples or self._distance(samples[-1][0], samples[-1][1], b.position, b.orientation) > 1e-6:
                # an edge of the tree re-checked from a different IK seed failed: keep the tree's
                # own joint solutions for it
                samples = [(b.position, b.orientation, b.q)]
            for p, o, q in samples:
                positions.append(p)
                orientations.append(o)
                joints.append(q)
        positions_a = np.array(positions)
        orientations_a = np.array(orientations)
        targets = cube.rotate(orientations_a[:, None, :], self.offsets[None]) + positions_a[:, None, :]
        return Plan(positions_a, orientations_a, np.array(joints), targets,
                    planning_time=time.perf_counter() - t0, iterations=iterations, raw_waypoints=raw)
