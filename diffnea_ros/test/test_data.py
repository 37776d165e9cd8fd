"""Savitzky-Golay derivatives (acceleration.py) and identification data loading (data.py)."""
import numpy as np
import pytest

from diffnea_ros.acceleration import savgol_derivatives
from diffnea_ros.data import (IdentificationData, check_identifiable, load_bag, load_data, load_pairs,
                              load_npz)
from diffnea_ros.errors import DataError

RATE = 100.0
NAMES = ["j1", "j2", "j3"]
OMEGA = np.array([2 * np.pi / 5.0, 2 * np.pi / 3.0, 2 * np.pi / 2.0])
AMP = np.array([0.7, 0.5, 0.3])


def motion(t):
    """q, qd, qdd (N, 3) of sine waves, and a torque that depends on all of them."""
    q = AMP * np.sin(OMEGA * t[:, None])
    qd = AMP * OMEGA * np.cos(OMEGA * t[:, None])
    qdd = -OMEGA ** 2 * q
    return q, qd, qdd, 2.0 * qdd + 0.3 * qd + np.cos(q)


def assert_below(error, bound):
    """Every element of ``error`` (N, dof) below ``bound`` (dof,) (broadcast)."""
    ratio = np.max(error / np.broadcast_to(bound, error.shape))
    assert ratio < 1.0, f"error up to {ratio:.3g} x the bound"


# --- acceleration.py --------------------------------------------------------------------------

def test_savgol_matches_analytic_derivatives_of_sines():
    t = np.arange(1000) / RATE
    q, qd, qdd, _ = motion(t)
    d = savgol_derivatives(t, q)
    np.testing.assert_allclose(d.q, q, atol=1e-4 * AMP.max())
    assert_below(np.abs(d.qd - qd), 2e-3 * AMP * OMEGA)
    assert_below(np.abs(d.qdd - qdd), 2e-2 * AMP * OMEGA ** 2)
    noisy = q + np.random.default_rng(0).normal(0, 1e-4, q.shape)
    d_noisy = savgol_derivatives(t, noisy)
    plain_noisy = np.gradient(np.gradient(noisy, 1 / RATE, axis=0), 1 / RATE, axis=0)
    # smoothing: with encoder-like noise the filter beats finite differences by far
    assert np.abs(d_noisy.qdd - qdd).mean() < 0.2 * np.abs(plain_noisy - qdd).mean()


def test_a_gap_splits_segments_so_no_derivative_straddles_it():
    t1 = np.arange(50) / RATE
    t2 = 2.0 + np.arange(60) / RATE            # 1.5 s gap
    q = np.concatenate([t1 ** 2, 10.0 - t2 ** 2])
    d = savgol_derivatives(np.concatenate([t1, t2]), q)
    # a cubic fit reproduces each quadratic exactly, up to the segment edges
    np.testing.assert_allclose(d.qdd[:50], 2.0, atol=1e-8)
    np.testing.assert_allclose(d.qdd[50:], -2.0, atol=1e-8)
    np.testing.assert_allclose(d.qd[50:], -2 * t2, atol=1e-8)
    # the same signal without the gap, split only by segment ids
    t = np.arange(110) / RATE
    q = np.where(t < 0.5, t ** 2, 10.0 - t ** 2)
    ids = (t >= 0.5).astype(int)
    np.testing.assert_allclose(savgol_derivatives(t, q, segment_ids=ids).qdd[50:], -2.0, atol=1e-8)
    assert np.abs(savgol_derivatives(t, q).qdd[45:55] + 2.0).max() > 1.0  # unsplit: smeared


def test_dropped_samples_are_bridged_and_results_given_at_the_stamps():
    t = np.arange(600) / RATE
    q, _, qdd, _ = motion(t)
    keep = np.ones(t.size, dtype=bool)
    keep[[100, 300, 301, 302]] = False
    d = savgol_derivatives(t[keep], q[keep])
    assert d.qdd.shape == (keep.sum(), 3)
    assert_below(np.abs(d.qdd - qdd[keep]), 2e-2 * AMP * OMEGA ** 2)


def test_non_uniform_stamps_and_short_segments_are_errors():
    t = np.cumsum(np.random.default_rng(1).uniform(0.006, 0.014, 300))
    with pytest.raises(DataError, match="not uniformly sampled"):
        savgol_derivatives(t, np.sin(t))
    with pytest.raises(DataError, match="strictly increasing"):
        savgol_derivatives(np.array([0.0, 0.02, 0.01, 0.03]), np.zeros(4))
    t = np.arange(200) / RATE
    t[100:] += 0.005  # a half-period step
    with pytest.raises(DataError, match="not uniformly sampled"):
        savgol_derivatives(t, np.sin(t))
    t = np.arange(8) / RATE
    with pytest.raises(DataError, match="fewer than the 15-sample"):
        savgol_derivatives(t, np.sin(t))


# --- data.py: npz -----------------------------------------------------------------------------

def save_npz(path, n=500, **overrides):
    t = 3.0 + np.arange(n) / RATE
    q, qd, _, tau = motion(t)
    arrays = dict(t=t, q=q, qd=qd, tau=tau, joint_names=np.array(NAMES))
    arrays.update(overrides)
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return t, q, qd, tau


def test_npz_round_trip_reorders_columns_by_name(tmp_path):
    path = str(tmp_path / "d.npz")
    t = 3.0 + np.arange(500) / RATE
    q, qd, qdd, tau = motion(t)
    perm = [2, 0, 1]
    np.savez(path, t=t, q=q[:, perm], qd=qd[:, perm], tau=tau[:, perm],
             joint_names=np.array(NAMES)[perm])
    data = load_npz(path, NAMES)
    assert data.joint_names == tuple(NAMES) and len(data) == 500 and data.n_segments == 1
    np.testing.assert_array_equal(data.t, t)
    np.testing.assert_array_equal(data.q, q)
    np.testing.assert_array_equal(data.qd, qd)    # measured velocities are kept as they are
    np.testing.assert_array_equal(data.tau, tau)
    assert_below(np.abs(data.qdd - qdd), 2e-2 * AMP * OMEGA ** 2)
    assert data.dropped["non_finite"] == 0 and "d.npz" in data.source
    assert load_data(path, NAMES).q.tobytes() == data.q.tobytes()


def test_npz_without_velocities_or_stamps(tmp_path):
    path = str(tmp_path / "d.npz")
    t, q, qd, tau = save_npz(path, t=None, qd=None, rate=np.float64(RATE),
                             qdd=np.full((500, 3), 7.0))
    data = load_npz(path)
    np.testing.assert_allclose(data.t, np.arange(500) / RATE)
    assert_below(np.abs(data.qd - qd), 2e-3 * AMP * OMEGA)  # Savitzky-Golay
    np.testing.assert_array_equal(data.qdd, 7.0)                           # given qdd is used


@pytest.mark.parametrize("content, match", [
    (None, "not found"),
    (b"this is not an npz file at all", "not a valid .npz"),
    (b"PK\x03\x04 truncated zip", "not a valid .npz"),
])
def test_missing_and_corrupt_npz(tmp_path, content, match):
    path = tmp_path / "d.npz"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(DataError, match=match):
        load_data(str(path), NAMES)


def test_bad_npz_contents(tmp_path):
    path = str(tmp_path / "d.npz")
    np.savez(path, q=np.array([{"a": 1}], dtype=object), tau=np.zeros(1), t=np.zeros(1))
    with pytest.raises(DataError, match="not a valid .npz"):  # would need pickle
        load_npz(path)
    save_npz(path, tau=None)
    with pytest.raises(DataError, match="lacks the array.*tau"):
        load_npz(path)
    save_npz(path, n=0)
    with pytest.raises(DataError, match="no samples"):
        load_npz(path, NAMES)
    save_npz(path, joint_names=np.array(["j1", "j2", "elbow"]))
    with pytest.raises(DataError, match="no data for joint.*j3"):
        load_npz(path, NAMES)
    save_npz(path, joint_names=None)
    with pytest.raises(DataError, match="3 joint columns and no joint_names"):
        load_npz(path, NAMES + ["j4"])
    with pytest.raises(DataError, match="unsupported data file"):
        load_data(str(tmp_path / "d.txt"), NAMES)


def test_non_finite_rows_and_short_segments_are_dropped_and_counted(tmp_path):
    path = str(tmp_path / "d.npz")
    t = np.concatenate([np.arange(300), 400 + np.arange(10)]) / RATE  # 2nd run: 10 samples
    q, qd, _, tau = motion(t)
    tau[50, 1] = np.nan
    np.savez(path, t=t, q=q, qd=qd, tau=tau)
    data = load_npz(path)
    assert len(data) == 299 and data.dropped["non_finite"] == 1
    assert data.dropped["short_segment"] == 10 and data.n_segments == 1


# --- data.py: bag -----------------------------------------------------------------------------

def write_bag(path, n=300, gap_after=200):
    """JointState at 100 Hz with a 1 s gap; a NaN message, a too-short one, shuffled joint
    order and an extra joint in some messages. Returns the stamps/arrays a loader should give."""
    import genpy
    import rosbag
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    t = 100.0 + np.arange(n) / RATE
    t[gap_after:] += 1.0
    q, qd, _, tau = motion(t)
    bad_nan, bad_len = 40, 120
    rng = np.random.default_rng(3)
    with rosbag.Bag(path, "w") as bag:
        bag.write("/real/label", String(data="reality stand-in"), genpy.Time.from_sec(t[0]))
        for i in range(n):
            order = rng.permutation(3) if i % 3 == 0 else np.arange(3)
            msg = JointState()
            msg.header.stamp = genpy.Time.from_sec(t[i])
            msg.name = [NAMES[k] for k in order]
            msg.position, msg.velocity, msg.effort = (a[i, order].tolist() for a in (q, qd, tau))
            if i % 5 == 0:
                msg.name.append("finger")
                for values in (msg.position, msg.velocity, msg.effort):
                    values.append(0.0)
            if i == bad_nan:
                msg.position[1] = float("nan")
            if i == bad_len:
                msg.effort = msg.effort[:-1]
            bag.write("/real/joint_states", msg, genpy.Time.from_sec(t[i]))
            bag.write("/sim/joint_states", msg, genpy.Time.from_sec(t[i]))
    keep = np.ones(n, dtype=bool)
    keep[[bad_nan, bad_len]] = False
    stamps = np.array([genpy.Time.from_sec(x).to_sec() for x in t])
    return stamps[keep], q[keep], qd[keep], tau[keep]


def test_bag_loading_maps_joints_by_name_and_counts_bad_messages(tmp_path):
    path = str(tmp_path / "pairs.bag")
    t, q, qd, tau = write_bag(path)
    data = load_data(path, NAMES)
    assert data.joint_names == tuple(NAMES) and len(data) == 298
    assert data.dropped["non_finite"] == 1 and data.dropped["malformed"] == 1
    assert sum(data.dropped.values()) == 2
    assert data.n_segments == 2 and np.all(np.diff(data.segment) >= 0)
    np.testing.assert_array_equal(data.t, t)
    np.testing.assert_array_equal(data.q, q)
    np.testing.assert_array_equal(data.qd, qd)
    np.testing.assert_array_equal(data.tau, tau)
    assert_below(np.abs(data.qdd + OMEGA ** 2 * q), 2e-2 * AMP * OMEGA ** 2)
    assert data.source.startswith("reality stand-in: bag")
    # without names: the joints of every message ("finger" is only in some) in the order of the
    # first message (shuffled), same data
    first = load_bag(path)
    assert sorted(first.joint_names) == NAMES and first.joint_names != tuple(NAMES)
    cols = [first.joint_names.index(n) for n in NAMES]
    np.testing.assert_array_equal(first.tau[:, cols], tau)


def test_bag_errors(tmp_path):
    path = str(tmp_path / "pairs.bag")
    write_bag(path)
    with pytest.raises(DataError, match="no data for joint.*elbow"):
        load_bag(path, joint_names=NAMES + ["elbow"])
    with pytest.raises(DataError, match="no topic /robot/joint_states.*/real/joint_states"):
        load_bag(path, topic="/robot/joint_states")
    with pytest.raises(DataError, match="carries std_msgs/String"):
        load_bag(path, topic="/real/label")
    broken = tmp_path / "broken.bag"
    broken.write_bytes(b"#ROSBAG V2.0\n" + bytes(range(256)) * 4)
    with pytest.raises(DataError, match="cannot read bag"):
        load_data(str(broken), NAMES)
    with pytest.raises(DataError, match="not found"):
        load_data(str(tmp_path / "absent.bag"), NAMES)


# --- identifiability, split, batches ----------------------------------------------------------

def make_data(n=1000, still=None):
    t = np.arange(n) / RATE
    q, qd, qdd, tau = motion(t)
    if still is not None:
        q[:, still] = 0.4 + 1e-3 * np.sin(t)
    return IdentificationData(t, q, qd, qdd, tau, NAMES, np.zeros(n, dtype=int), "test")


def test_check_identifiable():
    check_identifiable(make_data())
    with pytest.raises(DataError, match=r"joint\(s\) j2 .* never move"):
        check_identifiable(make_data(still=1))
    with pytest.raises(DataError, match="only 100 samples"):
        check_identifiable(make_data(n=100))


def test_split_holds_out_whole_contiguous_blocks():
    data = make_data(n=1000)
    train, held = data.split(0.2, seed=4)
    index = np.rint(np.concatenate([train.t, held.t]) * RATE).astype(int)
    assert sorted(index) == list(range(1000))
    assert len(held) == 200  # two of ten blocks
    for part in (train, held):
        for s in np.unique(part.segment):  # every segment of a part is a contiguous run
            i = np.rint(part.t[part.segment == s] * RATE).astype(int)
            assert np.all(np.diff(i) == 1)
    member = np.zeros(1000, dtype=bool)
    member[np.rint(held.t * RATE).astype(int)] = True
    assert np.count_nonzero(np.diff(member)) <= 2 * held.n_segments  # no interleaving
    again, _ = data.split(0.2, seed=4)
    np.testing.assert_array_equal(again.t, train.t)
    assert not np.array_equal(data.split(0.2, seed=5)[0].t, train.t)
    with pytest.raises(DataError):
        data.split(1.0)


def test_batches():
    data = make_data(n=1000)
    seq = list(data.batches(256))
    assert [len(b.index) for b in seq] == [256, 256, 256, 232]
    np.testing.assert_array_equal(np.concatenate([b.index for b in seq]), np.arange(1000))
    np.testing.assert_array_equal(seq[1].tau, data.tau[256:512])
    shuffled = list(data.batches(256, shuffle=True, rng=0, drop_last=True))
    idx = np.concatenate([b.index for b in shuffled])
    assert len(shuffled) == 3 and len(np.unique(idx)) == 768 and not np.all(np.diff(idx) > 0)
    np.testing.assert_array_equal(shuffled[0].q, data.q[shuffled[0].index])


def test_pairs_give_one_segment_per_chosen_trajectory_of_the_robot(tmp_path):
    """load_pairs: the robot's (/real) stream of the chosen trajectories of a pair bag, one
    segment each, with its measured velocities; none of the chosen ones is one DataError."""
    from panda_pairs import CollectionRequest, read_pairs, run_collection
    bag = str(tmp_path / "pairs.bag")
    run_collection(CollectionRequest(out=bag, trajectories=4, seed=3, kinds=("single",),
                                     show_progress=False))
    data = load_pairs(bag, [1, 3])
    assert data.joint_names == tuple(f"panda_joint{j}" for j in range(1, 8))
    assert data.n_segments == 2 and data.trajectories == (1, 3) and data.label == "reality stand-in"
    pairs = {p.trajectory_id: p for p in read_pairs(bag, data.joint_names).pairs}
    for k, tid in enumerate((1, 3)):
        np.testing.assert_array_equal(data.t[data.segment == k], pairs[tid].real.t)
        np.testing.assert_array_equal(data.qd[data.segment == k], pairs[tid].real.qd)
    with pytest.raises(DataError, match="none of the 1 trajectories"):
        load_pairs(bag, [99])
    with pytest.raises(DataError, match="not found|lacks|cannot"):
        load_pairs(str(tmp_path / "missing.bag"))
