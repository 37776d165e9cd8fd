"""The ROS face of :class:`ResidualStream`: the ``residual_publisher`` node (paper 000 Algorithms
2-3 on live joint states).

Topics (relative names; ``launch/residual_publisher.launch`` runs the node in ``/realeasy`` and
remaps them onto the simulator's):
  subscribes ``joint_states`` (sensor_msgs/JointState; -> /sim/joint_states),
  publishes ``joint_states_realistic`` (sensor_msgs/JointState, same header stamp; ->
  /sim/joint_states_realistic), ``residual`` (sensor_msgs/JointState holding the residual in
  position/velocity/effort; /realeasy/residual), and ``/diagnostics`` (latency and counters, and
  the input and output checks' counters per topic and reason, 1 Hz).
Service ``~reset`` (std_srvs/Trigger): forget the hidden state; warm-up starts again.

Every joint state goes through sim2real_checks' joint-state check with the bounds of a measured
state of the robot (``~limits``, a mapping the launch file loads, config/panda_limits.yaml by
default: ``JointLimits.bounds(measured=True)``); a rejected one is counted and logged by the
node's guard (one line per topic, reason and second) and leaves the hidden state alone. No output
with NaN/Inf is published (counted and logged the same way).
"""
from __future__ import annotations

import threading
import time
import warnings
from typing import Optional

import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger, TriggerResponse

from panda_sim2real import JointLimits, PandaError
from sim2real_checks import Rejected, check_not_ahead, integer_param, mapping_param, node_guard, run_node
from realeasy_ros.networks import REALTIME
from realeasy_ros.model import load_model
from realeasy_ros.residual_stream import InvalidJointState, LatencyStats, ResidualStream

MAX_STAMP_AHEAD = 10.0   # s a joint state may be stamped ahead of the node's clock
INPUT = "joint_states"
REALISTIC = "joint_states_realistic"
RESIDUAL = "residual"
RATE_CHECK_SAMPLES = 200      # input stamps used to compare the input rate with the model's
RATE_TOLERANCE = 0.2


class ResidualPublisherNode:
    def __init__(self) -> None:
        model_path = rospy.get_param("~model", "")
        if not model_path:
            raise PandaError("parameter ~model (path of a realtime model file) is not set")
        limits = mapping_param("~limits", JointLimits.from_dict, JointLimits.from_yaml)
        model = load_model(model_path, architecture=REALTIME)
        model.check_compatible(limits.joint_names, "the robot (~limits)")
        warmup = integer_param("~warmup_steps", None, PandaError, minimum=0)
        if warmup is not None:
            model.warmup_steps = warmup
        self.model = model
        # a measured state's bounds; the model's joints are the limits' (check_compatible), in
        # the same order
        self.stream = ResidualStream(model, limits.bounds(measured=True))
        self.guard = node_guard()
        self.latency = LatencyStats(integer_param("~latency_window", 60000, PandaError, minimum=1))
        self._lock = threading.Lock()
        self._stamps: list[float] = []
        self._rate_checked = False
        with warnings.catch_warnings():
            # queue_size=None publishes synchronously from the callback: no hand-over to a
            # queue thread on the 1 kHz path (rospy warns about it; here it is deliberate)
            warnings.simplefilter("ignore")
            self._realistic = rospy.Publisher(REALISTIC, JointState, queue_size=None,
                                              tcp_nodelay=True)
            self._residual = rospy.Publisher(RESIDUAL, JointState, queue_size=None,
                                             tcp_nodelay=True)
        self._diagnostics = rospy.Publisher("/diagnostics", DiagnosticArray, queue_size=1)
        rospy.Service("~reset", Trigger, self._on_reset)
        self._input_topic = rospy.resolve_name(INPUT)
        self._subscriber = rospy.Subscriber(INPUT, JointState, self._on_state, queue_size=10000,
                                            tcp_nodelay=True)
        rospy.loginfo("%s: %s model %s (hidden %d, %d layers, trained at %.0f Hz on '%s'), "
                      "warm-up %d steps", rospy.get_name(), model.architecture, model_path,
                      model.spec.hidden_size, model.spec.num_layers, model.rate,
                      model.data_label, model.warmup_steps)

    def _on_state(self, msg: JointState) -> None:
        received = time.perf_counter()
        stamp = msg.header.stamp.to_sec()
        try:    # a far-future stamp would make every following state look earlier: a reset
            check_not_ahead(stamp, rospy.get_time(), MAX_STAMP_AHEAD, "joint state")
        except Rejected as exc:
            self.guard.reject(self._input_topic, exc)
            return
        with self._lock:
            try:
                self.stream.process(stamp, msg.name, msg.position, msg.velocity, msg.effort)
            except InvalidJointState as exc:
                rejected: Optional[InvalidJointState] = exc
            else:
                rejected = None
                # the stream reuses its arrays: the output check takes the values each message
                # was built from
                corrected, correction = self.stream.corrected.copy(), self.stream.residual.copy()
                realistic = self.stream.layout.message(msg.header, corrected)
                residual = self.stream.layout.message(msg.header, correction)
        if rejected is not None:
            self.guard.reject(self._input_topic, rejected)
            return
        self.guard.publish(self._realistic, realistic, corrected)
        self.guard.publish(self._residual, residual, correction)
        self.latency.add(time.perf_counter() - received)
        if not self._rate_checked:
            self._check_rate(stamp)

    def _check_rate(self, stamp: float) -> None:
        """Warn once if the input rate differs from the rate the model was trained at: the LSTM
        learnt the residual per step of that rate."""
        self._stamps.append(stamp)
        if len(self._stamps) < RATE_CHECK_SAMPLES:
            return
        self._rate_checked = True
        steps = [b - a for a, b in zip(self._stamps, self._stamps[1:]) if b > a]
        if not steps:
            return
        steps.sort()
        rate = 1.0 / steps[len(steps) // 2]
        if abs(rate - self.model.rate) > RATE_TOLERANCE * self.model.rate:
            rospy.logwarn(f"{rospy.get_name()}: input at {rate:.0f} Hz, the model was trained at "
                          f"{self.model.rate:.0f} Hz; train it on data at the input rate "
                          f"(dataset --rate) for a faithful residual")

    def _on_reset(self, _request) -> TriggerResponse:
        with self._lock:
            self.stream.reset()
        return TriggerResponse(success=True, message=f"hidden state reset; warm-up of "
                                                     f"{self.model.warmup_steps} steps follows")

    def statistics(self) -> DiagnosticArray:
        counters = self.stream.counters
        latency = self.latency.summary()
        values = {"messages": counters.messages, "corrected": counters.corrected,
                  "warmup": counters.warmup, "rejected": counters.rejected,
                  "resets": counters.resets, "latency_median_us": f"{latency['median_us']:.1f}",
                  "latency_p99_us": f"{latency['p99_us']:.1f}",
                  "latency_max_us": f"{latency['max_us']:.1f}",
                  "latency_samples": latency["samples"]}
        status = DiagnosticStatus(
            level=DiagnosticStatus.OK if counters.rejected == 0 else DiagnosticStatus.WARN,
            name=f"{rospy.get_name()}: Realeasy residual", hardware_id="realeasy",
            message=f"{counters.corrected} corrected, {counters.rejected} rejected",
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
        array = DiagnosticArray(status=[status, self.guard.status()])
        array.header.stamp = rospy.Time.now()
        return array

    def spin(self) -> None:
        """Publish the statistics once a wall-clock second until shutdown (callbacks run in
        rospy's threads)."""
        while not rospy.is_shutdown():
            time.sleep(1.0)
            if not rospy.is_shutdown():
                self._diagnostics.publish(self.statistics())


def main() -> None:
    run_node("residual_publisher", ResidualPublisherNode, ResidualPublisherNode.spin, errors=(PandaError,),
             freeze_gc=True)
