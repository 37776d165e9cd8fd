"""Pair data with Gazebo 11 as the simulator (make gazebo-test): collect, resimulate and
record_pairs.launch sim:=gazebo as a user runs them, and the tools read what they write.
Simulation results (Gazebo against the reality stand-in), never a real robot."""
from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import rosbag
import yaml

from panda_pairs import CollectionRequest, run_collection
from panda_sim2real import SIM_CONFIG_FILE, nominal_urdf_path
from sim2real_gazebo import run_launch


def read_with_the_tools(bag: str, tmp_path) -> dict:
    """``dataset`` and ``compare`` on ``bag`` as a user runs them (each must succeed); compare's
    figures."""
    for tool, args in (("dataset", ["--out", str(tmp_path / "d.npz")]),
                       ("compare", ["--plot", str(tmp_path / "c.png")])):
        done = subprocess.run(["rosrun", "panda_pairs", tool, "--bag", bag, "--quiet",
                               "--json", str(tmp_path / f"{tool}.json"), *args],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    with open(tmp_path / "compare.json") as f:
        return json.load(f)


def collect(path: str, seed: int) -> dict:
    return run_collection(CollectionRequest(out=path, trajectories=3, seed=seed, sim="gazebo",
                                            show_progress=False)).figures


def sim_stream(path: str) -> list[tuple]:
    with rosbag.Bag(path) as bag:
        return [(t.to_nsec(), tuple(m.position), tuple(m.velocity), tuple(m.effort))
                for _, m, t in bag.read_messages(["/sim/joint_states"])]


def test_one_seed_gives_the_same_sim_stream_twice_and_the_tools_read_the_bag(tmp_path):
    first, second = str(tmp_path / "a.bag"), str(tmp_path / "b.bag")
    figures = collect(first, seed=4)
    assert figures["sim_label"] == "Gazebo 11 simulation" and figures["sim"] == "gazebo"
    collect(second, seed=4)
    a, b = sim_stream(first), sim_stream(second)
    assert len(a) > 500 and a == b
    with rosbag.Bag(first) as bag:
        topics = set(bag.get_type_and_topic_info().topics)
    assert {"/sim/joint_states", "/real/joint_states", "/pairs/event", "/real/label",
            "/sim/joint_trajectory_controller/command"} <= topics
    gap = read_with_the_tools(first, tmp_path)
    assert len(gap["torque_mse"]) == 7 and all(np.isfinite(gap["torque_mse"]))


def resimulate(bag: str, out: str, sim: str, config: str) -> dict:
    done = subprocess.run(["rosrun", "panda_pairs", "resimulate", "--bag", bag, "--out", out,
                           "--sim", sim, "--sim-config", config, "--quiet", "--json", out + ".json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.load(open(out + ".json"))


def test_resimulate_in_gazebo_with_an_identified_urdf(tmp_path):
    """A heavier hand, friction and torque offsets in the sim config (an identified one's
    entries): re-simulated in Gazebo as in PyBullet (the offsets in the efforts, the friction and
    the URDF applied alike), and the tools read the bag."""
    pairs = str(tmp_path / "pairs.bag")
    run_collection(CollectionRequest(out=pairs, trajectories=2, seed=1, show_progress=False))
    urdf = open(nominal_urdf_path()).read()
    urdf, n = re.subn(r'(<link name="panda_hand">\s*<inertial>.*?<mass value=")([0-9.]+)',
                      lambda m: m.group(1) + str(float(m.group(2)) * 1.5), urdf, count=1, flags=re.S)
    assert n == 1
    (tmp_path / "identified.urdf").write_text(urdf)
    offset = np.array([2.0, -2.0, 1.0, 0.5, 0.3, -0.3, 0.2])
    config = yaml.safe_load(open(SIM_CONFIG_FILE))
    config.update(urdf=str(tmp_path / "identified.urdf"), label="simulation (identified)",
                  friction={"phi1": [0.3] * 7, "phi2": [50.0] * 7, "phi3": [0.01] * 7},
                  torque_sensor={"offset": offset.tolist(), "noise_std": [0.0] * 7})
    (tmp_path / "identified.yaml").write_text(yaml.safe_dump(config))
    gazebo = resimulate(pairs, str(tmp_path / "gazebo.bag"), "gazebo", str(tmp_path / "identified.yaml"))
    pybullet = resimulate(pairs, str(tmp_path / "pybullet.bag"), "pybullet",
                          str(tmp_path / "identified.yaml"))
    assert gazebo["label"] == "Gazebo 11 simulation (identified)" and gazebo["commands"] == 2
    assert gazebo["sim_states"] == pybullet["sim_states"]
    gz, pb = (sim_stream(str(tmp_path / f"{n}.bag")) for n in ("gazebo", "pybullet"))
    nominal = sim_stream(pairs)
    np.testing.assert_allclose([s[0] for s in gz], [s[0] for s in pb], atol=1e3)   # stamps [ns]
    q_gz, q_pb = (np.array([s[1] for s in x]) for x in (gz, pb))
    tau_gz, tau_pb, tau_nominal = (np.array([s[3] for s in x]) for x in (gz, pb, nominal))
    assert np.max(np.abs(q_gz - q_pb)) < 2e-3
    assert np.sqrt(np.mean((tau_gz - tau_pb) ** 2)) < 0.05
    # at rest before the first move: the reported torques carry the offsets (joints whose
    # gravity load the heavier hand leaves nearly unchanged)
    rest = slice(100, 150)
    shift = np.mean(tau_gz[rest] - tau_nominal[rest], axis=0)
    assert np.all(np.abs(shift - offset)[[0, 2, 4, 6]] < 0.1), shift
    read_with_the_tools(str(tmp_path / "gazebo.bag"), tmp_path)


def test_record_pairs_launch_sim_gazebo_records_a_bag_the_tools_read(tmp_path):
    """The pair runner against Gazebo and the ROS-native stand-in on Gazebo's /clock."""
    bag = str(tmp_path / "pairs.bag")
    output = run_launch("panda_pairs", "record_pairs.launch", "sim:=gazebo", "trajectories:=2",
                       f"bag:={bag}", timeout=240)
    assert "REQUIRED process" not in output, output[-3000:]
    assert read_with_the_tools(bag, tmp_path)["trajectories"] == 2
