"""``franka_ros_relay``: /real for a robot that franka_ros already runs (franka_control).

franka_ros's ``franka_state_controller`` publishes the arm's joint states (measured torque tau_J
as effort) and a ``position_joint_trajectory_controller`` (or any JointTrajectoryController)
takes trajectories. The relay republishes the former on ``joint_states`` in the Panda's joint
order (each message checked by :class:`~sim2real_checks.joint_state.JointStateLayout`:
names, lengths, NaN/Inf; the finger joints are dropped) and forwards ``joint_trajectory_controller/
command`` to the latter after fci_bridge's checks of the knots and of the executed interpolant,
with the checked velocities (so the controller follows the cubic that was checked). It does not
know the controller's reference, so it cannot check continuity with it, and a trajectory it
drops leaves the controller with what it had. Bad messages (and measured states beyond the
limits widened by ``JointLimits.bounds(measured=True)``) are dropped, counted per reason in
/diagnostics and logged once per reason and second; nothing non-finite is published. Topics
are relative to the node's namespace (``/real``). ``~limits``: the joint limits, a mapping the
launch file loads (config/panda_limits.yaml).
"""
from __future__ import annotations

import rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from sim2real_checks import GuardDiagnostics, JointStateLayout, mapping_param, node_guard, run_node

from panda_sim2real import (COMMAND, JOINT_STATES, JointLimits, JointMeasurement, PandaError,
                            PlannedTrajectory, TrajectoryRejected, check_motion_limits, joint_state_msg,
                            joint_trajectory_msg, trajectory_from_msg)


class FrankaRosRelay:
    def __init__(self) -> None:
        self.limits = mapping_param("~limits", JointLimits.from_dict, JointLimits.from_yaml)
        self.layout = JointStateLayout(self.limits.joint_names, self.limits.bounds(measured=True))
        self.guard = node_guard()
        self._diagnostics = GuardDiagnostics(self.guard)
        self.state_in = rospy.get_param("~joint_states_in", "/franka_state_controller/joint_states")
        self.joint_pub = rospy.Publisher(JOINT_STATES, JointState, queue_size=100)
        self.command_pub = rospy.Publisher(
            rospy.get_param("~command_out", "/position_joint_trajectory_controller/command"),
            JointTrajectory, queue_size=2)
        label = rospy.Publisher("label", String, queue_size=1, latch=True)
        label.publish(String(str(rospy.get_param("~label", "real robot"))))
        rospy.Subscriber(self.state_in, JointState, self._on_state, queue_size=100)
        rospy.Subscriber(COMMAND, JointTrajectory, self._on_command, queue_size=5)

    def _on_state(self, msg: JointState) -> None:
        arrays = self.guard.check(self.state_in, lambda m: self.layout.arrays(
            m.name, m.position, m.velocity, m.effort), msg)
        if arrays is not None:
            self.guard.publish(self.joint_pub, joint_state_msg(
                JointMeasurement(msg.header.stamp.to_sec(), *arrays), self.limits.joint_names))

    def _on_command(self, msg: JointTrajectory) -> None:
        """Forward the checked trajectory with its velocities (given or estimated) in the Panda's
        joint order, so that the controller's cubic is the one checked."""
        plan = self.guard.check(COMMAND, self._checked_plan, msg, errors=(TrajectoryRejected,))
        if plan is not None:
            self.guard.publish(self.command_pub, joint_trajectory_msg(plan, self.limits.joint_names))

    def _checked_plan(self, msg: JointTrajectory) -> PlannedTrajectory:
        plan = trajectory_from_msg(msg, self.limits)
        check_motion_limits(plan, self.limits)
        return plan


def main() -> None:
    run_node("franka_ros_relay", FrankaRosRelay, errors=(PandaError,))
