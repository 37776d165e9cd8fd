"""The ROS face of :class:`~diffnea_ros.online_identifier.OnlineIdentifier`: the ``identifier``
node (paper 002 §4.1.2, online identification on live joint states).

Parameters: ``~urdf`` (required: path of the robot's URDF, the initial estimate),
``~parametrisation`` (nostr|symm|spd|tri|cov, default cov), ``~topic`` (default
/real/joint_states), ``~locked_joints`` (list; default: the URDF's movable joints missing from
the first valid message are locked at zero, e.g. the Panda's fingers), ``~learning_rate``
(1e-2), ``~buffer_seconds`` (60), ``~publish_rate`` [Hz] (2), ``~friction`` (false),
``~replay_rate`` [Hz] (20; training steps per second on buffered data when no new batch waits,
0 = the paper's pure online mode).

Publishes ``/diffnea/identified_params`` (diffnea_ros/IdentifiedParams) at ``~publish_rate``,
``/diffnea/predicted_effort`` (sensor_msgs/JointState: the input's stamp and the identified
joints' names; effort = the current estimate's torque at the sample's q, qd and a causal qdd;
published in batches at ``PREDICTION_RATE``), ``/diagnostics`` (counters, and the input and
output checks' counters per topic and reason, 1 Hz).

Input checks (:mod:`diffnea_ros.state_input`): names, sizes, NaN/Inf, stamps, and the bounds of
a measured state for the joints ``~limits`` names (a joint-limits mapping as panda_sim2real's
config/panda_limits.yaml, loaded by the launch file; default the Panda's); one error line per
reason and second. Nothing with NaN/Inf is published.
Service ``~write_urdf`` (diffnea_ros/WriteUrdf): writes the URDF and a .yaml beside it
atomically; a relative path is resolved against the node's working directory (for roslaunch,
ROS_HOME unless the node sets ``cwd``), and the answer names the absolute paths.
"""
from __future__ import annotations

from typing import Optional

import rospy
import torch
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Vector3
from sensor_msgs.msg import JointState

from diffnea_ros.errors import DiffneaError
from diffnea_ros.learnable import LearnableDynamics
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.msg import IdentifiedParams, LinkInertial
from diffnea_ros.online_identifier import OnlineConfig, OnlineIdentifier, Snapshot
from diffnea_ros.srv import WriteUrdf, WriteUrdfResponse
from diffnea_ros.state_input import StateInput
from diffnea_ros.urdf import RobotDescription, load_robot
from panda_sim2real import JointLimits, PandaError
from sim2real_checks import JointBounds, flag_param, mapping_param, node_guard, number_param, run_node

PARAMS_TOPIC = "/diffnea/identified_params"
EFFORT_TOPIC = "/diffnea/predicted_effort"
PREDICTION_RATE = 50.0    # [Hz] batches of predicted efforts
STOP_SECONDS = 2.0        # the longest wait for the training thread's current step at shutdown
_INERTIA_INDEX = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))


def params_message(snapshot: Snapshot, stamp: rospy.Time) -> IdentifiedParams:
    """The IdentifiedParams message of a snapshot."""
    msg = IdentifiedParams()
    msg.header.stamp = stamp
    msg.parametrisation = snapshot.parametrisation
    msg.samples = snapshot.samples
    msg.updates = snapshot.updates
    msg.links = [LinkInertial(name=link.name, mass=link.mass, com=Vector3(*link.com.tolist()),
                              inertia=[float(link.inertia[i, j]) for i, j in _INERTIA_INDEX],
                              mass_positive=link.mass_positive,
                              inertia_positive_definite=link.inertia_positive_definite,
                              triangle_inequality=link.triangle_inequality)
                 for link in snapshot.links]
    msg.joint_names = list(snapshot.joint_names)
    msg.damping = snapshot.damping.tolist()
    msg.nmse = snapshot.nmse.tolist()
    msg.consistent = snapshot.consistent
    return msg


class IdentifierNode:
    def __init__(self) -> None:
        urdf = rospy.get_param("~urdf", "")
        if not urdf:
            raise DiffneaError("parameter ~urdf (path of the robot's URDF, the initial estimate) "
                               "is not set")
        self.description = load_robot(str(urdf))
        self.config = OnlineConfig(
            parametrisation=str(rospy.get_param("~parametrisation", "cov")).lower(),
            learning_rate=number_param("~learning_rate", 1e-2, DiffneaError),
            buffer_seconds=number_param("~buffer_seconds", 60.0, DiffneaError),
            friction=flag_param("~friction", False, DiffneaError)).validate()
        self.publish_rate = number_param("~publish_rate", 2.0, DiffneaError, positive=True)
        self.replay_rate = number_param("~replay_rate", 20.0, DiffneaError, minimum=0.0)
        locked = rospy.get_param("~locked_joints", None)
        if locked is not None and (not isinstance(locked, list)
                                   or not all(isinstance(n, str) for n in locked)):
            raise DiffneaError(f"~locked_joints must be a list of joint names, got {locked!r}")
        # check the URDF, the parametrisation and the limits now, not at the first message
        LearnableDynamics(RigidBodyModel(self.description), self.config.parametrisation,
                          friction=self.config.friction)
        try:
            self.limits = mapping_param("~limits", JointLimits.from_dict, JointLimits.from_yaml)
        except PandaError as exc:
            raise DiffneaError(f"~limits: {exc}") from None
        self.guard = node_guard()
        self.topic = rospy.resolve_name(str(rospy.get_param("~topic", "/real/joint_states")))
        self.input = StateInput(self.description, self.limits, self._build, self.guard,
                                self.topic, locked)
        self._params = rospy.Publisher(PARAMS_TOPIC, IdentifiedParams, queue_size=2, latch=True)
        self._effort = rospy.Publisher(EFFORT_TOPIC, JointState, queue_size=1000)
        self._diagnostics = rospy.Publisher("/diagnostics", DiagnosticArray, queue_size=1)
        rospy.Service("~write_urdf", WriteUrdf, self._on_write)
        self._subscriber = rospy.Subscriber(self.topic, JointState, self.input,
                                            queue_size=10000, tcp_nodelay=True)
        self._timers = [rospy.Timer(rospy.Duration(1.0 / self.publish_rate), self._publish_params),
                        rospy.Timer(rospy.Duration(1.0 / PREDICTION_RATE), self._publish_efforts),
                        rospy.Timer(rospy.Duration(1.0), self._publish_diagnostics)]
        rospy.loginfo(f"{rospy.get_name()}: robot '{self.description.name}' from {urdf}, "
                      f"{self.config.parametrisation} parametrisation, learning from {self.topic}")

    @property
    def identifier(self) -> Optional[OnlineIdentifier]:
        """The identifier, once its joints are known (~locked_joints or the first good message)."""
        return self.input.identifier

    def _build(self, description: RobotDescription, bounds: JointBounds) -> OnlineIdentifier:
        identifier = OnlineIdentifier(description, self.config, bounds=bounds)
        unbounded = [n for n in description.joint_names if n not in self.limits.joint_names]
        locked = [n for n in self.description.joint_names if n not in description.joint_names]
        rospy.loginfo(f"{rospy.get_name()}: identifying joints {list(description.joint_names)}"
                      + (f"; locked at zero: {locked}" if locked else "")
                      + (f"; no limits for {unbounded} in ~limits: names, sizes and "
                         f"NaN/Inf checked, no bounds" if unbounded else ""))
        identifier.start(self.replay_rate)
        return identifier

    def _publish_efforts(self, _event) -> None:
        identifier = self.identifier
        if identifier is None:
            return
        names = list(identifier.joint_names)
        for header, tau in identifier.drain_predictions():
            self.guard.publish(self._effort, JointState(header=header, name=names,
                                                        effort=tau.tolist()))

    def _publish_params(self, _event) -> None:
        identifier = self.identifier
        if identifier is None:
            return
        # never NaN (e.g. a NoStr mass driven to zero makes its CoM infinite; the parametrisation
        # enforces no bounds): withheld, counted and logged; the training keeps going
        self.guard.publish(self._params, params_message(identifier.snapshot(), rospy.Time.now()))

    def _publish_diagnostics(self, _event) -> None:
        identifier = self.identifier
        values = identifier.counts() if identifier is not None else {}
        problem = identifier is not None and (values["rejected"] or values["skipped_updates"]
                                              or values["thread_errors"])
        status = DiagnosticStatus(
            level=DiagnosticStatus.WARN if problem else DiagnosticStatus.OK,
            name=f"{rospy.get_name()}: DiffNEA online identification", hardware_id="diffnea",
            message=("waiting for joint states" if identifier is None else
                     f"{values['updates']} updates, {values['rejected']} rejected"),
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
        if identifier is not None and identifier.last_error:
            status.values.append(KeyValue(key="last_error", value=identifier.last_error))
        array = DiagnosticArray(status=[status, self.guard.status()])
        array.header.stamp = rospy.Time.now()
        self._diagnostics.publish(array)

    def _on_write(self, request) -> WriteUrdfResponse:
        identifier = self.identifier
        if identifier is None:
            return WriteUrdfResponse(success=False, message="no joint state received yet: "
                                                            "nothing identified to write")
        try:
            urdf_path, yaml_path = identifier.write(request.path)
        except DiffneaError as exc:
            return WriteUrdfResponse(success=False, message=str(exc))
        snap = identifier.snapshot()
        note = "physically consistent" if snap.consistent else snap.consistency_text
        return WriteUrdfResponse(success=True, message=f"wrote {urdf_path} and {yaml_path} "
                                                       f"({snap.updates} updates; {note})")

    def shutdown(self) -> None:
        """Stop the timers and the training thread (waiting at most STOP_SECONDS for its current
        step; it is a daemon thread, so it never holds the exit)."""
        for timer in self._timers:
            timer.shutdown()
        if self.identifier is not None:
            self.identifier.stop(STOP_SECONDS)


def main() -> None:
    torch.set_num_threads(1)   # one core for training; the callbacks need the other
    run_node("identifier", IdentifierNode, close=IdentifierNode.shutdown, errors=(DiffneaError,))
