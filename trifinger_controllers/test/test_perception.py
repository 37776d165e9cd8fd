"""The object tracker model (perception.py) and the physics randomisation (physics.py): their
statistics match their configuration, the camera's rate and delay are kept, and bad config files
are refused with one line naming the file."""
import numpy as np
import pybullet
import pytest

from trifinger_controllers import cube, evaluation
from trifinger_controllers.perception import SYMMETRIES, PerceptionConfig, TrackerModel
from trifinger_controllers.physics import PhysicsRandomisation
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.types import CUBE_MASS, CubePose

TRUTH = CubePose(np.array([0.02, -0.03, 0.0325]), cube.normalize(np.array([0.1, 0.2, 0.3, 0.9])))
IMAGES = 40_000


def reports(config: PerceptionConfig, n: int = IMAGES, seed: int = 3):
    model = TrackerModel(config, seed)
    out = [model.observe(CubePose(TRUTH.position, TRUTH.orientation, 0.1 * k)) for k in range(n)]
    return model, out


def test_default_config_loads_with_a_source_for_every_parameter():
    config = PerceptionConfig.from_yaml()
    assert not config.is_ideal
    assert set(config.sources) == {"position_noise_m", "orientation_noise_deg", "miss_rate",
                                   "miss_burst_images", "flip_rate", "confidence_range"}
    assert all(len(text) > 20 for text in config.sources.values())


def test_statistics_match_the_configuration():
    config = PerceptionConfig(position_noise_m=0.003, orientation_noise_deg=2.5, miss_rate=0.08,
                              miss_burst_images=2.5, flip_rate=0.03, confidence_range=(0.5, 0.9))
    model, out = reports(config)
    conf = np.array([r.confidence for r in out])
    missed = conf == 0.0
    # miss rate and the mean length of a run of misses
    assert missed.mean() == pytest.approx(config.miss_rate, abs=0.01)
    starts = np.flatnonzero(np.diff(missed.astype(int)) == 1)
    assert missed.sum() / len(starts) == pytest.approx(config.miss_burst_images, rel=0.1)
    assert model.counts.missed == missed.sum()
    # a miss repeats the previous report, with the new image's stamp
    for k in np.flatnonzero(missed)[:50]:
        np.testing.assert_array_equal(out[k].position, out[k - 1].position)
        assert out[k].stamp == pytest.approx(0.1 * k)
    detected = [r for r in out if r.confidence > 0]
    assert min(r.confidence for r in detected) >= 0.5 and max(r.confidence for r in detected) <= 0.9
    # position noise per axis
    positions = np.array([r.position for r in detected])
    np.testing.assert_allclose(positions.std(axis=0), config.position_noise_m, rtol=0.05)
    np.testing.assert_allclose(positions.mean(axis=0), TRUTH.position, atol=1e-4)
    # orientation: most detections within a few sigma; flips at least 90 deg off, at flip_rate
    angles = np.rad2deg(cube.angle_between(TRUTH.orientation, np.array([r.orientation for r in detected])))
    flipped = angles > 45.0
    assert flipped.mean() == pytest.approx(config.flip_rate, abs=0.005)
    assert flipped.sum() == model.counts.flipped
    assert angles[flipped].min() > 80.0
    rotvec = np.array([cube.relative_rotation_vector(TRUTH.orientation, r.orientation)
                       for r, f in zip(detected, flipped) if not f])
    np.testing.assert_allclose(np.rad2deg(rotvec.std(axis=0)), config.orientation_noise_deg, rtol=0.05)


def test_a_flip_is_a_symmetry_of_the_cube():
    config = PerceptionConfig(flip_rate=1.0)
    _, out = reports(config, 50)
    for report in out:
        seen = np.sort(np.round(cube.corners(report), 9), axis=0)
        true = np.sort(np.round(cube.corners(CubePose(TRUTH.position, TRUTH.orientation)), 9), axis=0)
        np.testing.assert_allclose(seen, true, atol=1e-9)
        assert np.rad2deg(cube.angle_between(TRUTH.orientation, report.orientation)) > 89.0
    assert len(SYMMETRIES) == 23


def test_ideal_camera_and_determinism():
    _, out = reports(PerceptionConfig.ideal(), 100)
    assert all(np.array_equal(r.position, TRUTH.position) and r.confidence == 1.0 for r in out)
    config = PerceptionConfig.from_yaml()
    a, b, c = reports(config, 500, 1)[1], reports(config, 500, 1)[1], reports(config, 500, 2)[1]
    assert all(np.array_equal(x.position, y.position) for x, y in zip(a, b))
    assert not all(np.array_equal(x.position, y.position) for x, y in zip(a, c))


def test_platform_keeps_the_camera_rate_and_delay_and_reports_each_image_once():
    goal, initial, seed = evaluation.episode_specs(3, 1, 0)[0]
    platform = SimulatedPlatform(seed=seed, camera_delay_steps=90)
    try:
        platform.reset(initial, goal)
        seen = {}
        for _ in range(1500):
            obs = platform.step(np.zeros(9))
            age = obs.robot.time - obs.cube.stamp
            if obs.robot.time >= 0.2:       # before: the initial pose, as trifinger_simulation gives it
                assert 0.09 - 1e-9 <= age <= 0.19 + 1e-9
            seen.setdefault(obs.cube.stamp, obs.cube)
            assert obs.cube is seen[obs.cube.stamp]      # one report per image
        stamps = np.array(sorted(seen))
        np.testing.assert_allclose(np.diff(stamps), 0.1, atol=1e-9)
        assert platform.tracker.counts.images == len(stamps)
    finally:
        platform.close()


def test_bad_config_files_are_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    for text, message in (("position_noise: 0.1\n", "unknown perception parameter"),
                          ("miss_rate: {value: 1.5}\n", "invalid miss_rate"),
                          ("flip_rate: {source: x}\n", "no 'value'"),
                          ("[1, 2]\n", "expected a mapping"),
                          ("position_noise_m: .nan\n", "invalid position_noise_m")):
        bad.write_text(text)
        with pytest.raises(ValueError, match=message) as info:
            PerceptionConfig.from_yaml(bad)
        assert str(bad) in str(info.value)
    with pytest.raises(ValueError, match="cannot read"):
        PerceptionConfig.from_yaml(tmp_path / "missing.yaml")
    bad.write_text("cube_mass_scale: [1.3, 0.7]\n")
    with pytest.raises(ValueError, match="invalid cube_mass_scale"):
        PhysicsRandomisation.from_yaml(bad)
    bad.write_text("cube_mass: [0.7, 1.3]\n")
    with pytest.raises(ValueError, match="unknown physics parameter 'cube_mass'"):
        PhysicsRandomisation.from_yaml(bad)
    bad.write_text("cube_mass_scale: 1.2\n")
    with pytest.raises(ValueError, match=r"must be \[low, high\]"):
        PhysicsRandomisation.from_yaml(bad)


def test_physics_samples_within_the_ranges_seeded_and_applied():
    ranges = PhysicsRandomisation.from_yaml()
    samples = [ranges.sample(seed) for seed in range(200)]
    for key, (low, high) in (("cube_mass_scale", ranges.cube_mass_scale),
                             ("cube_friction_scale", ranges.cube_friction_scale),
                             ("floor_friction_scale", ranges.floor_friction_scale)):
        values = np.array([getattr(s, key) for s in samples])
        assert low <= values.min() and values.max() <= high
        assert values.max() - values.min() > 0.8 * (high - low)     # spread over the range
    assert ranges.sample(7) == ranges.sample(7) and ranges.sample(7) != ranges.sample(8)

    goal, initial, seed = evaluation.episode_specs(3, 1, 0)[0]
    platform = SimulatedPlatform(seed=seed, physics=ranges)
    try:
        platform.reset(initial, goal)
        sample, client = platform.physics_sample, platform.client_id
        cube_id = platform.simulation.cube._object_id
        mass, friction = pybullet.getDynamicsInfo(cube_id, -1, physicsClientId=client)[:2]
        assert mass == pytest.approx(CUBE_MASS * sample.cube_mass_scale, rel=1e-6)
        assert friction == pytest.approx(sample.cube_friction_scale, rel=1e-6)
        table = platform.simulation.simfinger._table_id._object_id
        assert pybullet.getDynamicsInfo(table, -1, physicsClientId=client)[1] == pytest.approx(
            sample.floor_friction_scale, rel=1e-6)
        platform.reset(initial, goal, seed=seed + 1)      # a new seed: a new cube
        assert platform.physics_sample == ranges.sample(seed + 1)
        mass = pybullet.getDynamicsInfo(platform.simulation.cube._object_id, -1,
                                        physicsClientId=platform.client_id)[0]
        assert mass == pytest.approx(CUBE_MASS * ranges.sample(seed + 1).cube_mass_scale, rel=1e-6)
    finally:
        platform.close()
    nominal = SimulatedPlatform(seed=seed, physics=PhysicsRandomisation.nominal())
    try:
        nominal.reset(initial, goal)
        info = pybullet.getDynamicsInfo(nominal.simulation.cube._object_id, -1, physicsClientId=nominal.client_id)
        assert info[0] == pytest.approx(CUBE_MASS) and info[1] == pytest.approx(1.0)
    finally:
        nominal.close()
