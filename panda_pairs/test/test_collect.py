"""In-process pair collection: a real bag with both streams and matching trajectory ids."""
import numpy as np
import pytest

from panda_pairs.collection import CollectionRequest, run_collection
from panda_sim2real import REALITY_CONFIG_FILE, ConfigError, JointLimits, JointMeasurement, RobotConfig
from panda_pairs.pair_bag import read_pairs

LIMITS = JointLimits.from_yaml()


def test_collect_writes_matching_pairs(tmp_path):
    bag = str(tmp_path / "pairs.bag")
    result = run_collection(CollectionRequest(out=bag, trajectories=3, seed=5,
                                              kinds=("single", "multi"), show_progress=False))
    assert result.label == "reality stand-in"
    recording = read_pairs(bag, LIMITS.joint_names)
    assert [p.trajectory_id for p in recording.pairs] == [0, 1, 2]
    assert recording.label == "reality stand-in"
    jitter = RobotConfig.from_yaml(REALITY_CONFIG_FILE).unmodelled.stamp_jitter
    for pair in recording.pairs:
        # the simulator's stamps are exact, the stand-in's jitter as a robot's (issue 38)
        for stream, tolerance in ((pair.sim, 1e-6), (pair.real, 2 * jitter + 1e-6)):
            np.testing.assert_allclose(np.diff(stream.t), 0.01, atol=tolerance)
            assert stream.t[0] >= pair.start - 1e-9 and stream.t[-1] <= pair.end + 1e-9
            assert np.all(np.isfinite(stream.q)) and np.all(np.isfinite(stream.tau))
        # both robots end near the same pose, i.e. they executed the same trajectory (the
        # simulator's PID, whose integral is clamped, sags a few hundredths of a rad under gravity)
        np.testing.assert_allclose(pair.sim.q[-1], pair.real.q[-1], atol=0.06)
        assert np.abs(pair.sim.q[-1] - pair.sim.q[0]).max() > 0.05  # it moved


def test_collect_rejects_a_rate_that_does_not_divide_physics(tmp_path):
    with pytest.raises(ConfigError, match="publish rate"):
        run_collection(CollectionRequest(out=str(tmp_path / "x.bag"), trajectories=1, rate=333,
                                         show_progress=False))


def test_measurement_finiteness_guard():
    ok = JointMeasurement(0.0, np.zeros(7), np.zeros(7), np.zeros(7))
    assert ok.is_finite()
    bad = JointMeasurement(0.0, np.zeros(7), np.full(7, np.nan), np.zeros(7))
    assert not bad.is_finite()
