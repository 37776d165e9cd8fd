"""Re-simulation of a pair bag: the same simulator reproduces the recorded /sim side, another one
changes only /sim, and unusable bags give one-line errors without leaving an output behind."""
import os
import subprocess

import numpy as np
import pytest
import rosbag
import yaml
from std_msgs.msg import String

from panda_pairs.collection import CollectionRequest, run_collection
from panda_sim2real import ConfigError, FAST_MOVES_FILE, JointLimits, SIM_CONFIG_FILE
from panda_pairs.errors import BagError
from panda_pairs.joint_state_bag import read_joint_states
from panda_pairs.pair_bag import read_pairs
from panda_pairs.resimulation import ResimulationRequest, resimulate

LIMITS = JointLimits.from_yaml()
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def pair_bag(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("resim") / "pairs.bag")
    run_collection(CollectionRequest(out=path, trajectories=3, seed=2, kinds=("single", "multi"),
                                     generator_config=FAST_MOVES_FILE,
                                     show_progress=False))
    return path


def _topics(path):
    with rosbag.Bag(path) as bag:
        return {t: i.message_count for t, i in bag.get_type_and_topic_info().topics.items()}


def test_the_same_simulator_reproduces_the_recorded_sim_side(pair_bag, tmp_path):
    out = str(tmp_path / "again.bag")
    summary = resimulate(ResimulationRequest(bag=pair_bag, out=out, seed=2))
    assert summary.commands == 3
    before = read_joint_states(pair_bag, "/sim/joint_states", LIMITS.joint_names)
    after = read_joint_states(out, "/sim/joint_states", LIMITS.joint_names)
    assert len(after) >= len(before) - 1
    n = len(before) - 1
    np.testing.assert_allclose(after.t[:n], before.t[:n], atol=1e-9)
    np.testing.assert_allclose(after.q[:n], before.q[:n], atol=1e-6)
    np.testing.assert_allclose(after.tau[:n], before.tau[:n], atol=1e-3)
    # the robot's side, the events, the commands and the label are copied unchanged
    counts_in, counts_out = _topics(pair_bag), _topics(out)
    for name, count in counts_in.items():
        if name != "/sim/joint_states":
            assert counts_out[name] == count, name
    real_in = read_joint_states(pair_bag, "/real/joint_states", LIMITS.joint_names)
    real_out = read_joint_states(out, "/real/joint_states", LIMITS.joint_names)
    np.testing.assert_array_equal(real_in.q, real_out.q)
    np.testing.assert_array_equal(real_in.tau, real_out.tau)
    assert [p.trajectory_id for p in read_pairs(out, LIMITS.joint_names).pairs] == [0, 1, 2]


def test_another_simulator_changes_only_the_sim_side(pair_bag, tmp_path):
    with open(SIM_CONFIG_FILE) as f:
        raw = yaml.safe_load(f)
    raw["inertials"] = {"panda_link7": {"mass": 1.5, "com": [0.0, 0.0, 0.08],
                                        "inertia": [0.02, 0.02, 0.01, 0.0, 0.0, 0.0]}}
    raw["physics_rate"] = 2000
    config = tmp_path / "heavier.yaml"
    config.write_text(yaml.safe_dump(raw))
    out = str(tmp_path / "heavier.bag")
    resimulate(ResimulationRequest(bag=pair_bag, out=out, sim_config=str(config)))
    before = read_joint_states(pair_bag, "/sim/joint_states", LIMITS.joint_names)
    after = read_joint_states(out, "/sim/joint_states", LIMITS.joint_names)
    n = min(len(before), len(after))
    np.testing.assert_allclose(after.t[:n], before.t[:n], atol=1e-9)   # same publish times
    assert np.abs(after.tau[:n, 5] - before.tau[:n, 5]).max() > 0.1    # another wrist load
    assert np.all(np.isfinite(after.q)) and np.all(np.isfinite(after.tau))


def test_a_bag_without_commands_is_refused_and_nothing_is_left(tmp_path):
    path = str(tmp_path / "states_only.bag")
    with rosbag.Bag(path, "w") as bag:
        bag.write("/real/label", String(data="x"))
    out = str(tmp_path / "out.bag")
    with pytest.raises(BagError, match="no trajectory commands"):
        resimulate(ResimulationRequest(bag=path, out=out))
    assert not os.path.exists(out)


def test_missing_and_corrupt_bags_and_configs(tmp_path, pair_bag):
    with pytest.raises(BagError, match="not found"):
        resimulate(ResimulationRequest(bag=str(tmp_path / "nope.bag"), out=str(tmp_path / "o.bag")))
    corrupt = tmp_path / "corrupt.bag"
    corrupt.write_bytes(b"#ROSBAG V2.0\n" + os.urandom(300))
    with pytest.raises(BagError):
        resimulate(ResimulationRequest(bag=str(corrupt), out=str(tmp_path / "o.bag")))
    bad = tmp_path / "bad.yaml"
    bad.write_text("label: x\nphysics_rate: -5\n")
    with pytest.raises(ConfigError):
        resimulate(ResimulationRequest(bag=pair_bag, out=str(tmp_path / "o.bag"),
                                       sim_config=str(bad)))
    assert not os.path.exists(tmp_path / "o.bag")


def test_the_tool_prints_one_error_line(tmp_path):
    proc = subprocess.run(["rosrun", "panda_pairs", "resimulate", "--bag",
                           str(tmp_path / "nope.bag"), "--out", str(tmp_path / "o.bag")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("resimulate: error: ")
