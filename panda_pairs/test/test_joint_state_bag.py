"""The shared JointState bag reader (joint_state_bag.py): one topic of any bag mapped by joint
name, bad messages dropped and counted by reason, one-line BagErrors for unreadable bags."""
import genpy
import numpy as np
import pytest
import rosbag
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from panda_pairs.errors import BagError
from panda_pairs.joint_state_bag import DROP_REASONS, BagFile, read_joint_states
from sim2real_checks import InvalidJointState, JointStateLayout, MISSING_JOINT, NON_FINITE

TOPIC = "/real/joint_states"
NAMES = ["a", "b", "c"]
N = 50
NAN_AT, SHORT_AT, MISSING_AT, REPEAT_AT = 10, 20, 30, 40


def _msg(stamp, names, q, qd, tau):
    msg = JointState()
    msg.header.stamp = genpy.Time.from_sec(stamp)
    msg.name = list(names)
    msg.position, msg.velocity, msg.effort = list(q), list(qd), list(tau)
    return msg


def write_bag(path):
    """N messages at 100 Hz, every other one in reversed joint order with an extra joint; one
    with NaN, one with a short effort, one without joint c, one repeating the previous stamp.
    Returns (t, q, qd, tau) of the messages a reader should keep, in the order NAMES."""
    t = 1.0 + np.arange(N) / 100.0
    q = np.stack([np.sin(t), np.cos(t), t], axis=1)
    qd, tau = 2.0 * q, 3.0 * q
    keep = np.ones(N, dtype=bool)
    keep[[NAN_AT, SHORT_AT, MISSING_AT]] = False
    with rosbag.Bag(path, "w") as bag:
        bag.write("/real/label", String(data="test arm"), genpy.Time.from_sec(t[0]))
        bag.write("/real/other", String(data="not joint states"), genpy.Time.from_sec(t[0]))
        for i in range(N):
            order = [2, 1, 0] if i % 2 else [0, 1, 2]
            names = [NAMES[k] for k in order]
            values = [list(a[i, order]) for a in (q, qd, tau)]
            if i % 2:
                names.append("finger")
                for v in values:
                    v.append(0.01)
            if i == NAN_AT:
                values[0][1] = float("nan")
            if i == SHORT_AT:
                values[2] = values[2][:-1]
            if i == MISSING_AT:
                names, values = names[:2], [v[:2] for v in values]
            stamp = t[i - 1] if i == REPEAT_AT else t[i]
            bag.write(TOPIC, _msg(stamp, names, *values), genpy.Time.from_sec(t[i]))
    keep[REPEAT_AT] = False       # its stamp is the previous message's: the first one is kept
    return t[keep], q[keep], qd[keep], tau[keep]


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bag") / "states.bag")
    return path, write_bag(path)


def test_good_bag_mapped_by_name_bad_messages_counted(bag):
    path, (t, q, qd, tau) = bag
    states = read_joint_states(path, TOPIC, NAMES)
    assert states.joint_names == tuple(NAMES) and states.label == "test arm"
    np.testing.assert_allclose(states.t, t, rtol=0, atol=1e-8)     # stamps are in ns
    np.testing.assert_array_equal(states.q, q)
    np.testing.assert_array_equal(states.qd, qd)
    np.testing.assert_array_equal(states.tau, tau)
    assert set(states.dropped) == set(DROP_REASONS)
    assert states.dropped == {"malformed": 1, "missing_joint": 1, "non_finite": 1,
                              "duplicate_stamp": 1}
    assert len(states) + states.skipped == N


def test_nan_values_are_dropped_never_returned(bag):
    path, (t, _, _, _) = bag
    states = read_joint_states(path, TOPIC, ["b"])          # the NaN is in b's position
    assert np.isfinite(states.q).all() and np.isfinite(states.qd).all()
    assert states.dropped["non_finite"] == 1
    assert not np.isclose(states.t, 1.0 + NAN_AT / 100.0).any()
    # a joint without the NaN keeps that message; c is missing from one message
    states = read_joint_states(path, TOPIC, ["a"])
    assert states.dropped["non_finite"] == 0 and states.dropped["missing_joint"] == 0
    assert len(states) == len(t) + 2


def test_default_joint_names_are_those_of_every_message(bag):
    path, (_, q, _, _) = bag
    states = read_joint_states(path, TOPIC)
    assert states.joint_names == ("a", "b")                  # c is missing once, finger often
    np.testing.assert_array_equal(states.q[:3], q[:3, :2])


def test_wrong_joint_names_and_topics(bag):
    path, _ = bag
    with pytest.raises(BagError, match="no data for joint.*elbow.*it has a, b, c, finger"):
        read_joint_states(path, TOPIC, NAMES + ["elbow"])
    with pytest.raises(BagError, match="no topic /sim/joint_states.*in it: /real/joint_states"):
        read_joint_states(path, "/sim/joint_states", NAMES)
    with pytest.raises(BagError, match="carries std_msgs/String"):
        read_joint_states(path, "/real/other", NAMES)


def test_missing_truncated_and_corrupt_files(bag, tmp_path):
    path, _ = bag
    with pytest.raises(BagError, match="^bag not found: .*absent.bag$"):
        read_joint_states(str(tmp_path / "absent.bag"), TOPIC, NAMES)
    data = open(path, "rb").read()
    truncated = tmp_path / "truncated.bag"
    truncated.write_bytes(data[:len(data) // 2])
    with pytest.raises(BagError, match="cannot read bag .*truncated.*rosbag reindex"):
        read_joint_states(str(truncated), TOPIC, NAMES)
    for name, content in (("noise.bag", np.random.default_rng(1).bytes(5000)),
                          ("header.bag", b"#ROSBAG V2.0\n" + bytes(range(256)) * 4),
                          ("empty.bag", b"")):
        corrupt = tmp_path / name
        corrupt.write_bytes(content)
        with pytest.raises(BagError, match="cannot read bag") as info:
            read_joint_states(str(corrupt), TOPIC, NAMES)
        assert "\n" not in str(info.value)


def test_velocities_optional_on_request(tmp_path):
    path = str(tmp_path / "no_velocity.bag")
    with rosbag.Bag(path, "w") as bag:
        for i in range(5):
            bag.write(TOPIC, _msg(1.0 + i / 100.0, NAMES, [i, 0, 0], [], [0, 0, i]),
                      genpy.Time.from_sec(1.0 + i / 100.0))
    with pytest.raises(BagError, match=r"no well-formed JointState message.*\(5 malformed\)"):
        read_joint_states(path, TOPIC, NAMES)
    states = read_joint_states(path, TOPIC, NAMES, require_velocity=False)
    assert states.qd is None and states.q[:, 0].tolist() == [0, 1, 2, 3, 4]
    assert states.label is None and states.skipped == 0


def test_bag_file_lists_topics_and_reads_only_the_asked_ones(bag):
    path, _ = bag
    with BagFile(path) as bag_file:
        assert bag_file.topics[TOPIC] == "sensor_msgs/JointState"
        assert list(bag_file.messages([])) == []
        assert {name for name, _ in bag_file.messages(["/real/label"])} == {"/real/label"}


def test_layout_reasons_and_optional_velocity():
    layout = JointStateLayout(["a", "b"])
    q, qd, tau = layout.arrays(["b", "a", "x"], [2.0, 1.0, 9.0], [], [4.0, 3.0, 9.0],
                               require_velocity=False)
    assert q.tolist() == [1.0, 2.0] and qd is None and tau.tolist() == [3.0, 4.0]
    with pytest.raises(InvalidJointState, match="velocity has 0 values for 2") as info:
        layout.arrays(["a", "b"], [1.0, 2.0], [], [3.0, 4.0])
    assert info.value.reason == "malformed"
    with pytest.raises(InvalidJointState, match="missing joint.*b") as info:
        layout.arrays(["a"], [1.0], [1.0], [1.0])
    assert info.value.reason == MISSING_JOINT
    out = np.zeros(6)
    with pytest.raises(InvalidJointState, match="NaN/Inf in velocity of b") as info:
        layout.fill(["a", "b"], [1.0, 2.0], [0.0, np.inf], [3.0, 4.0], out)
    assert info.value.reason == NON_FINITE and not out.any()
