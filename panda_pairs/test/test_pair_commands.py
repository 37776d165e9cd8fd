"""read_pairs(with_commands=True): each pair with the command it ran (its planned start the pair's
START), and a pair bag whose command is missing or invalid is one BagError naming it."""
import math

import numpy as np
import pytest
import rosbag

from panda_pairs import BagError, CollectionRequest, read_pairs, run_collection
from panda_sim2real import COMMAND as COMMAND_NAME, SIM_NS, JointLimits, topic

LIMITS = JointLimits.from_yaml()
COMMAND = topic(SIM_NS, COMMAND_NAME)


@pytest.fixture(scope="module")
def pair_bag(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("commands") / "pairs.bag")
    run_collection(CollectionRequest(out=path, trajectories=3, seed=11, kinds=("single",),
                                     show_progress=False))
    return path


def copy_bag(source: str, out: str, change) -> None:
    """``source`` to ``out`` with every command message passed through ``change`` (None: dropped)."""
    with rosbag.Bag(source) as bag, rosbag.Bag(out, "w") as copy:
        for topic, msg, stamp in bag.read_messages():
            if topic == COMMAND:
                msg = change(msg)
                if msg is None:
                    continue
            copy.write(topic, msg, stamp)


def test_every_pair_gets_the_command_it_ran(pair_bag):
    recording = read_pairs(pair_bag, LIMITS.joint_names, with_commands=True)
    assert len(recording.pairs) == 3
    for pair in recording.pairs:
        assert abs(pair.command.start - pair.start) < 1e-3
        assert abs(pair.command.start + pair.command.duration - pair.end) < 1e-3
        q_end = pair.command.sample(pair.command.duration)[0]
        np.testing.assert_allclose(q_end, pair.command.positions[-1], atol=1e-9)
    assert all(p.command is None for p in read_pairs(pair_bag, LIMITS.joint_names).pairs)


def test_a_missing_or_invalid_command_is_one_bag_error(pair_bag, tmp_path):
    first = read_pairs(pair_bag, LIMITS.joint_names).pairs[0]
    missing = str(tmp_path / "missing.bag")
    copy_bag(pair_bag, missing,
             lambda msg: None if abs(msg.header.stamp.to_sec() - first.start) < 1e-3 else msg)
    with pytest.raises(BagError, match=f"trajectory {first.trajectory_id} .* has no command on {COMMAND}"):
        read_pairs(missing, LIMITS.joint_names, with_commands=True)

    def poisoned(msg):
        msg.points[-1].positions = [math.nan] * len(msg.points[-1].positions)
        return msg
    invalid = str(tmp_path / "invalid.bag")
    copy_bag(pair_bag, invalid, poisoned)
    with pytest.raises(BagError, match=f"a command on {COMMAND} is invalid"):
        read_pairs(invalid, LIMITS.joint_names, with_commands=True)
    read_pairs(missing, LIMITS.joint_names)   # without commands the pairs are still read
