"""The Panda's set-state interface (config/panda_set_state.yaml, loaded by panda_kernels.launch):
the kernel manager's message for f_k(s, a) is one panda_sim accepts and sets the state to."""
import os

import numpy as np
import pytest
import rospy
import yaml

from panda_sim2real import JointLimits, SET_JOINT_STATE, joint_state_target, set_state_spec

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.manager_node import SetStateInterface
from kernel_manager_ros.state_spec import StateSpec

CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config")


@pytest.fixture
def panda(monkeypatch):
    """The Panda's state spec and set-state mapping as roslaunch loads them; a stamp without a
    master (the interface stamps its message with rospy.Time.now())."""
    monkeypatch.setattr(rospy.Time, "now", staticmethod(lambda: rospy.Time(12, 5)))
    spec = StateSpec.from_yaml(os.path.join(CONFIG, "panda_topics.yaml"))
    with open(os.path.join(CONFIG, "panda_set_state.yaml")) as f:
        return spec, yaml.safe_load(f)


def test_motor_kernel_state_is_a_set_state_panda_sim_accepts(panda):
    spec, config = panda
    interface = SetStateInterface(config, spec.state_names)
    limits = JointLimits.from_yaml()
    q = np.asarray(limits.home) + np.linspace(0.01, 0.07, 7)
    qd = np.linspace(-0.3, 0.3, 7)
    msg = interface.message(np.concatenate([q, qd]))      # state order: 7 positions, 7 velocities
    assert interface.topic == f"/sim/{SET_JOINT_STATE}"
    assert msg.header.stamp == rospy.Time(12, 5)
    assert list(msg.name) == list(limits.joint_names)
    got_q, got_qd = joint_state_target(msg, set_state_spec(limits))   # panda_sim's own parser
    np.testing.assert_array_equal(got_q, q)
    np.testing.assert_array_equal(got_qd, qd)


def test_a_mapping_from_a_state_the_spec_lacks_is_refused(panda):
    spec, config = panda
    config["fields"]["joint_states.effort[0]"] = "effort[0]"
    with pytest.raises(KernelError, match="effort"):
        SetStateInterface(config, spec.state_names)
