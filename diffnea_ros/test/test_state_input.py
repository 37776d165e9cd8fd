"""The identifier node's input without ROS: sim2real_checks' joint-state check with the robot's
bounds, one error line per reason and second under alternating bad input (before: one line
every time the text changed, hundreds per second), counters per reason, and a bad first message
never deciding which joints are identified."""
from __future__ import annotations

import os
from xml.etree import ElementTree

import numpy as np
import pytest
import yaml
from sensor_msgs.msg import JointState

import rospy
from diffnea_ros.joint_bounds import measured_bounds
from diffnea_ros.online_identifier import OnlineConfig, OnlineIdentifier
from diffnea_ros.state_input import StateInput
from diffnea_ros.urdf import load_robot, lock_joints
from panda_sim2real import JointLimits
from sim2real_checks import Guard

pybullet_data = pytest.importorskip("pybullet_data")
PANDA = os.path.join(pybullet_data.getDataPath(), "franka_panda", "panda.urdf")
TOPIC = "/real/joint_states"
FUZZ_TEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz.test")


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def limits():
    return JointLimits.from_yaml()


def state(limits, stamp, **fields) -> JointState:
    msg = JointState(name=list(limits.joint_names), position=limits.home.tolist(),
                     velocity=[0.1] * 7, effort=[1.0] * 7)
    msg.header.stamp = rospy.Time.from_sec(stamp)
    for key, value in fields.items():
        setattr(msg, key, value)
    return msg


def make_input(limits):
    lines, clock, built = [], FakeClock(), []
    guard = Guard("/diffnea/identifier", period=1.0, log=lines.append, clock=clock)

    def build(description, bounds):
        built.append(description.joint_names)
        return OnlineIdentifier(description, OnlineConfig(), bounds=bounds)

    return StateInput(load_robot(PANDA), limits, build, guard, TOPIC), guard, lines, clock, built


def bad(limits, k: int) -> JointState:
    """The k-th of an alternating series of bad states, each with its own text."""
    j, stamp = k % 7, 10.0 + k * 1e-3
    q, qd, tau = limits.home.copy(), np.full(7, 0.1), np.ones(7)
    kind = k % 5
    if kind == 0:
        q[j] = np.nan
    elif kind == 1:
        return state(limits, stamp, name=list(limits.joint_names[:j] + limits.joint_names[j + 1:]),
                     position=list(np.delete(q, j)), velocity=list(np.delete(qd, j)),
                     effort=list(np.delete(tau, j)))
    elif kind == 2:
        return state(limits, stamp, velocity=list(qd[:j % 6 + 1]))   # 1 to 6 values for 7
    elif kind == 3:
        qd[j] = (3.0 + k) * limits.velocity[j]
    else:
        return state(limits, 5.0)   # the stamp of the first good state, again
    return state(limits, stamp, position=list(q), velocity=list(qd), effort=list(tau))


def test_alternating_bad_input_logs_one_line_per_reason_and_second(limits):
    node_input, guard, lines, clock, _ = make_input(limits)
    assert node_input(state(limits, 5.0))
    for k in range(1000):                     # 1 kHz for one second, every text different
        clock.t = k * 1e-3
        assert not node_input(bad(limits, k))
    reasons = ("non_finite", "missing_joint", "malformed", "bounds", "stamp")
    assert len(lines) == len(reasons), lines
    for reason in reasons:
        assert guard.counts[(TOPIC, reason)] == 200
        assert sum(f"[{reason}]" in line for line in lines) == 1
    clock.t = 1.5                             # a second after the first bounds line
    assert not node_input(bad(limits, 3))
    assert len(lines) == 6 and "(+199 more since the last line)" in lines[-1]
    assert node_input(state(limits, 12.0))    # a good state afterwards is taken
    counters = node_input.identifier.counts()
    assert counters["received"] == 1003 and counters["rejected"] == 1001
    status = {kv.key: kv.value for kv in guard.status().values}
    assert status[f"{TOPIC} [bounds]"] == "201"
    node_input.identifier.stop()


def test_a_bad_first_message_does_not_decide_the_joints(limits):
    node_input, guard, _, _, built = make_input(limits)
    short = state(limits, 5.0, name=list(limits.joint_names[:6]))     # 6 names, 7 values
    fast = state(limits, 5.0, velocity=[10.0] * 7)
    assert not node_input(short) and not node_input(fast)
    assert node_input.identifier is None and built == []
    assert guard.counts[(TOPIC, "malformed")] == 1 and guard.counts[(TOPIC, "bounds")] == 1
    assert node_input(state(limits, 5.0))
    assert built == [limits.joint_names]      # the fingers locked, the arm's seven identified
    node_input.identifier.stop()


def test_measured_bounds_cover_the_joints_the_limits_name(limits):
    names = ["panda_joint2", "gripper", "panda_joint1"]
    bounds, unbounded = measured_bounds(names, limits)
    assert unbounded == ("gripper",)
    measured = limits.bounds(measured=True)
    assert bounds.velocity_max[0] == measured.velocity_max[1] == 2.0 * limits.velocity[1]
    assert bounds.position_min[2] == pytest.approx(limits.position_min[0] - 0.1)
    assert np.isinf(bounds.effort_max[1]) and np.isinf(bounds.position_min[1])


def test_the_fuzz_tests_expected_effort_is_the_initial_estimates_torque(limits):
    """test/fuzz.test expects the predicted effort of its good state after the fuzzing: at rest
    (qd = 0, and qdd = 0 for a segment's first sample) the Panda URDF's gravity torque."""
    rosparam = ElementTree.parse(FUZZ_TEST).getroot().find("test/rosparam")
    expect = yaml.safe_load(rosparam.text)["expect"][0]
    send = expect["send"]
    robot = load_robot(PANDA)
    identifier = OnlineIdentifier(lock_joints(robot, [n for n in robot.joint_names
                                                      if n not in limits.joint_names]))
    q, qd, _ = identifier.mapper.arrays(send["name"], send["position"], send["velocity"],
                                        send["effort"])
    assert not qd.any()
    predicted = identifier.predict(q, qd, np.zeros(7))[0]
    np.testing.assert_allclose(predicted, expect["value"], atol=0.1 * expect["tolerance"])
