"""Tests of the Realeasy move generator and the Panda kinematics (no ROS master needed)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from panda_sim2real.errors import ConfigError
from panda_sim2real.kinematics import PandaKinematics, orientation_error
from panda_sim2real.limits import JointLimits
from panda_sim2real.trajectory_generation import (DEFAULT_SETTINGS_FILE, GeneratedMove,
                                                GeneratorSettings, TrajectoryGenerator)

SETTINGS = GeneratorSettings()


@pytest.fixture(scope="module")
def limits() -> JointLimits:
    return JointLimits.from_yaml()


@pytest.fixture(scope="module")
def kinematics(limits: JointLimits):
    kin = PandaKinematics(limits)
    yield kin
    kin.close()


def chain(gen: TrajectoryGenerator, start: np.ndarray, kinds: list[str], count: int) -> list[GeneratedMove]:
    """``count`` moves, each starting where the previous one ended."""
    moves, q = [], start
    for _ in range(count):
        move = gen.next(q, kinds)
        assert np.array_equal(move.trajectory.positions[0], q)
        moves.append(move)
        q = move.trajectory.positions[-1]
    return moves


def check_limits(move: GeneratedMove, limits: JointLimits, settings: GeneratorSettings = SETTINGS) -> None:
    tr, c = move.trajectory, move.velocity_scaling
    assert settings.velocity_scaling[0] <= c <= settings.velocity_scaling[1]
    assert np.all(limits.within_position(tr.positions, settings.margin - 1e-9))
    assert np.all(np.abs(tr.velocities) <= c * limits.velocity * (1 + 1e-6))
    acc = np.abs(np.diff(tr.velocities, axis=0)) * settings.knot_rate
    assert np.all(acc <= c * limits.acceleration * 1.05)


def check_rest(move: GeneratedMove, settings: GeneratorSettings = SETTINGS) -> None:
    tr = move.trajectory
    assert tr.start is None and tr.times[0] == 0.0
    np.testing.assert_allclose(np.diff(tr.times), 1.0 / settings.knot_rate, atol=1e-9)
    before = int(round(settings.rest_before * settings.knot_rate))
    after = int(round(settings.rest_after * settings.knot_rate))
    for segment in (slice(0, before + 1), slice(len(tr.times) - after - 1, None)):
        assert np.all(tr.positions[segment] == tr.positions[segment][0])
        assert np.all(tr.velocities[segment] == 0.0)
    assert np.any(tr.positions[before:len(tr.times) - after] != tr.positions[0])  # it moves


def moved_joints(move: GeneratedMove) -> set[int]:
    pos = move.trajectory.positions
    return set(np.flatnonzero(np.any(pos != pos[0], axis=0)).tolist())


def test_joint_moves_respect_limits_and_rest(limits: JointLimits) -> None:
    gen = TrajectoryGenerator(limits, SETTINGS, seed=1)
    for move in chain(gen, limits.home, ["single", "multi"], 200):
        check_limits(move, limits)
        check_rest(move)


def test_single_and_multi_moves(limits: JointLimits) -> None:
    gen = TrajectoryGenerator(limits, SETTINGS, seed=2)
    for move in chain(gen, limits.home, ["single"], 50):
        assert move.kind == "single" and len(move.joints) == 1
        assert moved_joints(move) == set(move.joints)
    sizes = Counter()
    for move in chain(gen, limits.home, ["multi"], 200):
        assert move.kind == "multi" and 2 <= len(move.joints) <= 7
        assert moved_joints(move) == set(move.joints)
        sizes[len(move.joints)] += 1
    assert len(sizes) >= 5, sizes


def test_about_half_single(limits: JointLimits) -> None:
    gen = TrajectoryGenerator(limits, SETTINGS, seed=3)
    kinds = Counter(m.kind for m in chain(gen, limits.home, ["single", "multi"], 300))
    assert set(kinds) == {"single", "multi"}
    assert 0.35 <= kinds["single"] / 300 <= 0.65


def test_same_seed_reproduces(limits: JointLimits) -> None:
    runs = []
    for _ in range(2):
        gen = TrajectoryGenerator(limits, SETTINGS, seed=7)
        runs.append(chain(gen, limits.home, ["single", "multi", "cartesian"], 30))
        gen.close()
    for a, b in zip(*runs):
        assert (a.kind, a.joints, a.velocity_scaling) == (b.kind, b.joints, b.velocity_scaling)
        np.testing.assert_array_equal(a.trajectory.positions, b.trajectory.positions)
        np.testing.assert_array_equal(a.trajectory.velocities, b.trajectory.velocities)
    other = chain(TrajectoryGenerator(limits, SETTINGS, seed=8), limits.home, ["single", "multi"], 3)
    assert any(not np.array_equal(a.trajectory.positions, b.trajectory.positions)
               for a, b in zip(runs[0], other))


def check_cartesian(move: GeneratedMove, kin: PandaKinematics, limits: JointLimits,
                    settings: GeneratorSettings) -> None:
    assert move.kind == "cartesian"
    check_limits(move, limits, settings)
    check_rest(move, settings)
    poses = [kin.forward(q) for q in move.trajectory.positions]
    points = np.array([p for p, _ in poses])
    start, end = points[0], points[-1]
    line = end - start
    length = float(np.linalg.norm(line))
    assert settings.cartesian_distance[0] - 2e-3 <= length <= settings.cartesian_distance[1] + 2e-3
    unit = line / length
    rel = points - start
    deviation = np.linalg.norm(rel - np.outer(rel @ unit, unit), axis=1)
    assert deviation.max() < 2e-3
    along = rel @ unit
    assert along.min() > -2e-3 and along.max() < length + 2e-3
    # one of x, y, z stays constant: the line lies in the xy, xz or yz plane
    assert np.min(np.max(np.abs(rel), axis=0)) < 2e-3
    for _, quat in poses:
        assert np.linalg.norm(orientation_error(poses[0][1], quat)) < 0.01
    np.testing.assert_allclose(move.waypoints[-1], end, atol=2e-3)
    assert len(move.waypoints) == settings.cartesian_waypoints + 1


def test_cartesian_moves(limits: JointLimits, kinematics: PandaKinematics) -> None:
    gen = TrajectoryGenerator(limits, SETTINGS, seed=4)
    for move in chain(gen, limits.home, ["cartesian"], 5):
        check_cartesian(move, kinematics, limits, SETTINGS)
    gen.close()


def test_cartesian_moves_slowed_to_joint_limits(limits: JointLimits, kinematics: PandaKinematics) -> None:
    """A fast Cartesian speed at low c: the duration must grow until the joints obey c * limits."""
    settings = GeneratorSettings(velocity_scaling=(0.1, 0.2), cartesian_speed=5.0)
    gen = TrajectoryGenerator(limits, settings, seed=5)
    for move in chain(gen, limits.home, ["cartesian"], 2):
        check_cartesian(move, kinematics, limits, settings)
        tr = move.trajectory
        peak = np.max(np.abs(tr.velocities) / (move.velocity_scaling * limits.velocity))
        acc = np.max(np.abs(np.diff(tr.velocities, axis=0)) * settings.knot_rate
                     / (move.velocity_scaling * limits.acceleration))
        assert max(peak, np.sqrt(acc)) > 0.5  # limited by the joints, not the Cartesian speed
    gen.close()


def test_unreachable_cartesian_falls_back_to_multi(limits: JointLimits) -> None:
    settings = GeneratorSettings(cartesian_distance=(4.0, 5.0), cartesian_waypoints=0)
    gen = TrajectoryGenerator(limits, settings, seed=6)
    move = gen.next(limits.home, ["cartesian"])
    gen.close()
    assert move.kind == "multi"
    check_limits(move, limits, settings)


def test_ik_round_trip(limits: JointLimits, kinematics: PandaKinematics) -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.uniform(limits.position_min + 0.2, limits.position_max - 0.2)
        pos, quat = kinematics.forward(q)
        solution, converged = kinematics.solve(pos, quat, q + rng.normal(0.0, 0.1, q.shape))
        assert converged
        assert np.all(limits.within_position(solution))
        got_pos, got_quat = kinematics.forward(solution)
        np.testing.assert_allclose(got_pos, pos, atol=2e-4)
        assert np.linalg.norm(orientation_error(quat, got_quat)) < 2e-4


def test_jacobian_matches_finite_differences(limits: JointLimits, kinematics: PandaKinematics) -> None:
    rng = np.random.default_rng(1)
    step = 1e-3
    for _ in range(3):
        q = rng.uniform(limits.position_min + 0.1, limits.position_max - 0.1)
        jac = kinematics.jacobian(q)
        assert jac.shape == (6, 7)
        numeric = np.zeros((6, 7))
        for j in range(7):
            dq = np.zeros(7)
            dq[j] = step
            p_plus, o_plus = kinematics.forward(q + dq)
            p_minus, o_minus = kinematics.forward(q - dq)
            numeric[:3, j] = (p_plus - p_minus) / (2 * step)
            numeric[3:, j] = orientation_error(o_plus, o_minus) / (2 * step)
        np.testing.assert_allclose(jac, numeric, atol=1e-3)


@pytest.mark.parametrize("kinds", [[], ["single", "jump"], ["Cartesian"]])
def test_bad_kinds(limits: JointLimits, kinds: list[str]) -> None:
    gen = TrajectoryGenerator(limits, SETTINGS, seed=0)
    with pytest.raises(ConfigError, match="kinds"):
        gen.next(limits.home, kinds)


def test_settings_yaml(tmp_path) -> None:
    assert GeneratorSettings.from_yaml(DEFAULT_SETTINGS_FILE) == GeneratorSettings()
    path = tmp_path / "settings.yaml"
    path.write_text("margin: 0.2\nvelocity_scaling: [0.2, 0.5]\n")
    settings = GeneratorSettings.from_yaml(str(path))
    assert settings.margin == 0.2 and settings.velocity_scaling == (0.2, 0.5)
    path.write_text("margin: 0.2\nmax_speed: 3\n")
    with pytest.raises(ConfigError, match="max_speed"):
        GeneratorSettings.from_yaml(str(path))
    path.write_text("velocity_scaling: [0.5, 0.2]\n")
    with pytest.raises(ConfigError, match="velocity_scaling"):
        GeneratorSettings.from_yaml(str(path))


def test_settings_mapping() -> None:
    """pair_runner's ~generator_config: the mapping the launch file loads gives the file's
    settings; a bad one is a ConfigError naming the parameter and the key."""
    import yaml
    with open(DEFAULT_SETTINGS_FILE, encoding="utf-8") as f:
        raw = yaml.safe_load(f)
    source = "parameter /pair_runner/generator_config"
    assert GeneratorSettings.from_dict(raw, source) == GeneratorSettings.from_yaml()
    assert GeneratorSettings.from_dict({"margin": 0.2}, source) == GeneratorSettings(margin=0.2)
    for bad, phrase in (({"max_speed": 3}, r"unknown key\(s\) \['max_speed'\]"),
                        ({"velocity_scaling": [0.2]}, "'velocity_scaling' is malformed"),
                        ({"cartesian_waypoints": 2.5}, "'cartesian_waypoints' is malformed"),
                        ("/opt/trajectories.yaml", "expected a mapping")):
        with pytest.raises(ConfigError, match=f"trajectory settings {source}: {phrase}"):
            GeneratorSettings.from_dict(bad, source)
