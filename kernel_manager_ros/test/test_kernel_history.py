"""Histories (eq. 4, eq. 9) from arrays and from rosbags written here with real messages."""
import numpy as np
import pytest

from kernel_fixtures import point_spec
from kernel_manager_ros.bag_history import read_history, write_episode_bag
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.history import Episode, History
from kernel_manager_ros.state_spec import StateSpec

SPEC = StateSpec.from_dict({
    "epsilon_c": 0.1,
    "sensors": [
        {"name": "gps", "topic": "/v/gps", "type": "geometry_msgs/PointStamped",
         "fields": ["point.x", "point.y"], "weights": [1, 1]},
        {"name": "pitch", "topic": "/v/pitch", "type": "std_msgs/Float64", "fields": ["data"],
         "weights": [2], "stamp": "receive"},
        {"name": "joints", "topic": "/v/joints", "type": "sensor_msgs/JointState",
         "fields": ["position[1]"]}],
    "actions": [{"name": "cmd", "topic": "/v/cmd", "type": "geometry_msgs/Twist",
                 "fields": ["linear.x", "angular.z"]}],
    "reward": {"name": "reward", "topic": "/v/reward", "type": "std_msgs/Float64",
               "fields": ["data"]}})


def episode(t0: float, steps: int, seed: int):
    rng = np.random.default_rng(seed)
    states = rng.normal(size=(steps + 1, 4))
    times = t0 + 0.1 * np.arange(steps + 1)
    stamps = np.repeat(times[:, None], 3, axis=1)
    states[3, :2] = states[2, :2]          # the GPS holds its value: no new message, old stamp
    stamps[3, 0] = stamps[2, 0]
    return Episode(states, rng.normal(size=(steps, 2)), rng.normal(size=steps), stamps), times


def test_spec_layout():
    assert SPEC.state_names == ("gps.point.x", "gps.point.y", "pitch.data",
                                "joints.position[1]")
    np.testing.assert_allclose(SPEC.weights, [0.2, 0.2, 0.4, 0.2])
    assert SPEC.sensor_slices == {"gps": slice(0, 2), "pitch": slice(2, 3),
                                  "joints": slice(3, 4)}
    assert StateSpec.from_dict(SPEC.to_dict()) == SPEC


def test_bag_round_trip_with_real_messages(tmp_path):
    (e1, t1), (e2, t2) = episode(10.0, 8, 1), episode(20.0, 5, 2)
    path = write_episode_bag(tmp_path / "h.bag", SPEC, [e1, e2], [t1, t2])
    h = read_history(path, SPEC, episode_gap=1.0)
    assert len(h) == 13 and h.episodes.tolist() == [0] * 8 + [1] * 5
    for e, rows in ((e1, slice(0, 8)), (e2, slice(8, 13))):
        np.testing.assert_allclose(h.states[rows], e.states[:-1])
        np.testing.assert_allclose(h.next_states[rows], e.states[1:])
        np.testing.assert_allclose(h.actions[rows], e.actions)
        np.testing.assert_allclose(h.rewards[rows], e.rewards)
        np.testing.assert_allclose(h.stamps[rows], e.stamps[:-1], atol=1e-6)
    assert h.next_stamps[2, 0] == h.stamps[2, 0]            # the held GPS kept its stamp
    one = read_history(path, SPEC)                            # no gap: one bag = one episode
    assert set(one.episodes.tolist()) == {0} and len(one) == 14


def test_bag_missing_a_topic(tmp_path):
    spec = point_spec()
    e = Episode(np.zeros((3, 1)), np.zeros((2, 1)), np.zeros(2), np.zeros((3, 1)))
    path = write_episode_bag(tmp_path / "p.bag", spec, [e], [np.arange(3.0) + 1.0])
    with pytest.raises(KernelError, match=r"has no topic /v/gps \(channel 'gps'\)"):
        read_history(path, SPEC)
    with pytest.raises(KernelError, match="bag not found"):
        read_history(tmp_path / "none.bag", spec)
    bad = tmp_path / "garbage.bag"
    bad.write_bytes(b"not a bag")
    with pytest.raises(KernelError, match="cannot open bag"):
        read_history(bad, spec)


def test_wrong_message_type_in_bag(tmp_path):
    spec = point_spec()
    data = spec.to_dict()
    data["actions"][0]["type"] = "std_msgs/Float32"
    e = Episode(np.zeros((3, 1)), np.zeros((2, 1)), np.zeros(2), np.zeros((3, 1)))
    path = write_episode_bag(tmp_path / "p.bag", spec, [e], [np.arange(3.0) + 1.0])
    with pytest.raises(KernelError, match="holds std_msgs/Float64"):
        read_history(path, StateSpec.from_dict(data))


def rows(n, d=2, nan=False):
    s = np.zeros((n, d))
    if nan:
        s[1, 0] = np.nan
    return History(states=s, actions=np.zeros((n, 1)), rewards=np.zeros(n),
                   next_states=np.zeros((n, d)), stamps=np.zeros((n, 1)),
                   next_stamps=np.zeros((n, 1)), episodes=np.zeros(n, int))


def test_bad_histories():
    with pytest.raises(KernelError, match="NaN/Inf.*transition 1"):
        rows(3, nan=True).validate()
    with pytest.raises(KernelError, match="empty"):
        rows(0).validate()
    unequal = History(**{**rows(3).__dict__, "actions": np.zeros((2, 1))})
    with pytest.raises(KernelError, match="actions has shape"):
        unequal.validate()
    with pytest.raises(KernelError, match="empty"):
        History.from_episodes([])
    with pytest.raises(KernelError, match="3 states, 1 actions"):
        History.from_episodes([Episode(np.zeros((3, 1)), np.zeros((1, 1)), np.zeros(1),
                                       np.zeros((3, 1)))])
    with pytest.raises(KernelError, match="spec has 3"):
        rows(3).validate(state_dim=3)


def test_concatenate_renumbers_episodes():
    a, b = rows(2), rows(3)
    joined = History.concatenate([a, b])
    assert len(joined) == 5 and joined.episodes.tolist() == [0, 0, 1, 1, 1]


@pytest.mark.parametrize("data,match", [
    ({"sensors": [], "actions": [], "epsilon_c": 0.1,
      "reward": {"name": "r", "topic": "/r", "type": "std_msgs/Float64", "fields": ["data"]}},
     "at least one sensor"),
    ({"sensors": [{"name": "a", "topic": "/a", "type": "std_msgs/Float64",
                   "fields": ["x..y"]}]}, "missing key"),
    ({"epsilon_c": 0.1, "reward": {"name": "r", "topic": "/r", "type": "std_msgs/Float64",
                                   "fields": ["data"]},
      "actions": [{"name": "c", "topic": "/c", "type": "std_msgs/Float64", "fields": ["data"]}],
      "sensors": [{"name": "a", "topic": "/a", "type": "std_msgs/Float64",
                   "fields": ["x..y"]}]}, "malformed field path"),
])
def test_bad_specs(data, match):
    with pytest.raises(KernelError, match=match):
        StateSpec.from_dict(data)


def test_spec_yaml_is_parsed_safely(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("epsilon_c: !!python/object/apply:os.getcwd []\n")
    with pytest.raises(KernelError, match="not valid YAML"):
        StateSpec.from_yaml(path)
