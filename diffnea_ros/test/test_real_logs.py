"""Identification on logs as real robots write them (issue 38): 1 kHz stamps jittered by up to
half a period, no measured velocities, one 20 s excitation as the whole training set, CSV logs
(plain and rostopic echo -p), and franka_ros bags (franka_state_controller's topic and names)."""
import csv
import json

import numpy as np
import pytest
from test_identification import iiwa_path, run_identify, sine_samples, true_model

from diffnea_ros.acceleration import savgol_derivatives
from diffnea_ros.data import bag_topic, load_bag, load_csv, load_npz
from diffnea_ros.errors import DataError
from diffnea_ros.urdf import load_robot

RATE = 1000.0
PANDA_ARM = [f"panda_joint{i}" for i in range(1, 8)]


def sines(t):
    """q, qd (N, 2) of two sine waves at the (true, uniform) sample times ``t``."""
    w = np.array([np.pi, 2.0 * np.pi])
    return np.sin(w * t[:, None]), w * np.cos(w * t[:, None])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("jitter, drops", [(0.5, 0), (0.3, 6)])
def test_jittered_stamps_are_put_on_the_robots_clock(seed, jitter, drops):
    """A robot samples at 1 kHz, its host stamps the samples +-jitter periods off: velocities
    from the jittered stamps are as good as from the true ones, dropped samples included."""
    rng = np.random.default_rng(seed)
    true_t = np.arange(20000) / RATE
    keep = np.ones(true_t.size, dtype=bool)
    keep[rng.choice(np.arange(100, true_t.size - 100), drops, replace=False)] = False
    true_t = true_t[keep]
    q, qd = sines(true_t)
    stamps = true_t + rng.uniform(-jitter, jitter, true_t.size) / RATE
    exact = savgol_derivatives(true_t, q)
    jittered = savgol_derivatives(stamps, q)
    inner = slice(200, -200)
    np.testing.assert_allclose(jittered.qd[inner], exact.qd[inner], atol=2e-5)   # of |qd| up to 6
    np.testing.assert_allclose(jittered.qdd[inner], exact.qdd[inner], atol=2e-3)  # of up to 40
    assert np.max(np.abs(exact.qd[inner] - qd[inner])) < 1e-3


def test_stamps_that_jump_or_wander_are_no_jitter():
    t = np.arange(4000) / RATE
    q, _ = sines(t)
    jump = t.copy()
    jump[2000:] += 0.45 / RATE          # the clock jumps by 0.45 periods once
    wander = t + np.cumsum(np.random.default_rng(0).normal(0.0, 0.05, t.size)) / RATE
    for stamps in (jump, wander):
        with pytest.raises(DataError, match="not a steady clock"):
            savgol_derivatives(stamps, q)


def write_plain_csv(path, t, q, tau, names, qd=None):
    header = ["t"] + [f"q_{n}" for n in names] + [f"tau_{n}" for n in names]
    header += [f"qd_{n}" for n in names] if qd is not None else []
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for i in range(t.size):
            writer.writerow([f"{x:.17g}" for x in (t[i], *q[i], *tau[i],
                                                   *(qd[i] if qd is not None else []))])


def write_rostopic_csv(path, t, q, tau, names):
    """What ``rostopic echo -b BAG -p /franka_state_controller/joint_states`` writes."""
    k = range(len(names))
    header = (["%time", "field.header.seq", "field.header.stamp", "field.header.frame_id"]
              + [f"field.name{i}" for i in k] + [f"field.position{i}" for i in k]
              + [f"field.effort{i}" for i in k])
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for i in range(t.size):
            ns = int(round(t[i] * 1e9))
            writer.writerow([ns + 20000, i, ns, "", *names, *(f"{x:.17g}" for x in (*q[i], *tau[i]))])


@pytest.mark.parametrize("layout", ["plain", "rostopic"])
def test_csv_logs_read_as_the_npz_would(tmp_path, layout):
    rng = np.random.default_rng(4)
    clock = np.arange(3000) / RATE
    t = 100.0 + clock + rng.uniform(-0.4, 0.4, 3000) / RATE
    q = np.column_stack([sines(clock)[0], 0.1 * clock])
    tau = rng.normal(size=q.shape)
    names = ["panda_joint1", "panda_joint2", "panda_joint3"]
    path = tmp_path / "log.csv"
    (write_plain_csv if layout == "plain" else write_rostopic_csv)(path, t, q, tau, names)
    npz = tmp_path / "log.npz"
    np.savez(npz, t=t, q=q, tau=tau, joint_names=np.array(names))
    wanted = list(reversed(names))
    from_csv, from_npz = load_csv(str(path), wanted), load_npz(str(npz), wanted)
    assert from_csv.joint_names == tuple(wanted)
    np.testing.assert_allclose(from_csv.q, from_npz.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(from_csv.qd, from_npz.qd, rtol=0, atol=1e-6)
    np.testing.assert_allclose(from_csv.tau, from_npz.tau, rtol=0, atol=1e-12)


@pytest.mark.parametrize("content, message", [
    ("t,q_a\n0.0,1.0\n", "no column tau_a"),
    ("time_s,q_a,tau_a\n0.0,1.0,2.0\n", "one time column 't'"),
    ("t,q_a,tau_a\n0.0,x,2.0\n", "row 2 has a non-numeric value 'x'"),
    ("t,q_a,tau_a\n0.0,1.0\n", "row 2 has a different number of columns"),
    ("t,q_a,tau_a\n", "a header and at least one sample row"),
    ("t,q_a,qd_b,tau_a\n0,1,2,3\n", "no column qd_a"),
])
def test_bad_csv_logs(tmp_path, content, message):
    path = tmp_path / "log.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        load_csv(str(path))


def write_franka_ros_bag(path, t, q, tau):
    """franka_state_controller's JointState (arm joints, effort = tau_J, no velocity field
    filled here) and franka_gripper's finger joints on their own topic."""
    import genpy
    import rosbag
    from sensor_msgs.msg import JointState
    with rosbag.Bag(str(path), "w") as bag:
        for i in range(t.size):
            stamp = genpy.Time.from_sec(t[i])
            arm = JointState(name=PANDA_ARM, position=q[i].tolist(), effort=tau[i].tolist())
            arm.header.stamp = stamp
            bag.write("/franka_state_controller/joint_states", arm, stamp)
            if i % 10 == 0:
                fingers = JointState(name=["panda_finger_joint1", "panda_finger_joint2"],
                                     position=[0.04, 0.04], velocity=[0.0, 0.0], effort=[0.0, 0.0])
                fingers.header.stamp = stamp
                bag.write("/franka_gripper/joint_states", fingers, stamp)


def test_a_franka_ros_bag_is_found_and_read_by_joint_name(tmp_path):
    rng = np.random.default_rng(5)
    clock = np.arange(2000) / RATE                     # when the robot sampled
    t = 50.0 + clock + rng.uniform(-0.5, 0.5, 2000) / RATE
    q = np.column_stack([np.sin((k + 1) * 0.5 * clock) for k in range(7)])
    tau = rng.normal(size=q.shape)
    bag = tmp_path / "franka.bag"
    write_franka_ros_bag(bag, t, q, tau)
    assert bag_topic(str(bag)) == "/franka_state_controller/joint_states"
    data = load_bag(str(bag), joint_names=PANDA_ARM)
    assert data.joint_names == tuple(PANDA_ARM) and len(data) == 2000
    np.testing.assert_allclose(data.q, q, atol=1e-12)
    np.testing.assert_allclose(data.qd[100:-100, 0], 0.5 * np.cos(0.5 * clock[100:-100]), atol=1e-5)
    empty = tmp_path / "other.bag"
    import rosbag
    from std_msgs.msg import String
    with rosbag.Bag(str(empty), "w") as b:
        b.write("/label", String(data="x"))
    with pytest.raises(DataError, match="none of the JointState topics"):
        bag_topic(str(empty))


def identified_nmse(tmp_path, name, stamps, q, tau):
    """Held-out NMSE after ``identify`` (4 epochs) on the npz log (stamps, q, tau), no velocities."""
    data, report = tmp_path / f"{name}.npz", tmp_path / f"{name}.json"
    np.savez(data, t=stamps, q=q, tau=tau, joint_names=np.array(load_robot(iiwa_path()).joint_names))
    done = run_identify("--data", str(data), "--urdf", iiwa_path(), "--epochs", "4", "--lr", "0.02",
                        "--batch-size", "512", "--out", str(tmp_path / f"{name}.urdf"),
                        "--json", str(report), "--quiet")
    assert done.returncode == 0, done.stderr
    figures = json.loads(report.read_text())
    assert figures["consistent"]
    return np.array(figures["nmse_heldout_before"]), np.array(figures["nmse_heldout_after"])


def test_identify_on_one_jittered_velocity_free_20_s_excitation(tmp_path):
    """The whole training set is one 20 s excitation at 1 kHz, stamped +-0.5 ms off the robot's
    clock, without velocities: the identifier derives them and recovers the dynamics as well as
    from the true stamps."""
    rng = np.random.default_rng(6)
    t, q, _, _, tau = sine_samples(true_model(), seconds=20.0, rate=RATE)
    tau = tau + rng.normal(0.0, 0.05, tau.shape)      # a torque sensor's noise
    before, after = identified_nmse(tmp_path, "jittered", 1.7e9 + t + rng.uniform(-0.5, 0.5, t.size) / RATE,
                                    q, tau)
    assert np.all(after < 0.2 * before)
    _, reference = identified_nmse(tmp_path, "exact", 1.7e9 + t, q, tau)
    np.testing.assert_allclose(after, reference, rtol=0.05, atol=1e-4)
