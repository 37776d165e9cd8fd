"""The reality stand-in served over the libfranka network protocol (franky-sim's server).

A libfranka client (``fci_bridge``, franky, or any libfranka program) connects to
:class:`FciStandin` on a loopback address exactly as it connects to a robot: TCP commands on port
1337, robot states and control commands over UDP at 1 kHz. Behind the protocol runs the same
:class:`~panda_sim2real.robot.SimulatedRobot` as the ROS-native stand-in node, from the same YAML
(identified dynamics on MuJoCo, friction, joint elasticity, torque-sensor offset and noise,
encoder noise, the robot's internal joint impedance controller, command latency):

- joint position and velocity motion generators (and Cartesian ones, through franky-sim's IK)
  feed the stand-in's own joint impedance controller (:class:`~panda_sim2real.robot.JointReference`);
- torque control (libfranka's external controller, e.g. franky's ``JointImpedanceTracker``)
  commands the joint torque; the stand-in adds gravity from its own model, as the robot does
  (:class:`~panda_sim2real.robot.JointTorque`);
- every command reaches the physics ``latency`` seconds late (the config's command latency);
- the robot model a protocol-10 client asks for is the stand-in's Panda URDF with its inertials,
  not franky-sim's FR3.

The server steps the physics once per received 1 ms tick in wall-clock time; :meth:`FciStandin.
drop_connection` closes the client's connection, as a robot that is switched off does.
"""
from __future__ import annotations

import logging
import struct
import time
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np
import pinocchio as pin
from franky_sim.base_simulator import BaseRobot, BaseSimulator, InnerRobotState, RobotParameters
from franky_sim.franka_robot_protocol import (AutomaticErrorRecoveryCommand, AutomaticErrorRecoveryStatus,
                                              GetRobotModelCommand, MoveCommand, MoveStatus, RobotCommand,
                                              RobotMode)
from franky_sim.franka_robot_server import FrankaRobotServer
from franky_sim.franka_server import BaseCommand, Command, ConnectCommand, ConnectStatus, MessageHeader

from panda_sim2real import (ConfigError, ExternalCommand, JointLimits, JointReference, JointTorque,
                            RobotConfig, SimulatedRobot, load_urdf, prepare_dynamics_urdf)
from panda_fci.errors import RobotError
from panda_fci.reflexes import ReflexMonitor, error_flags

TICK = 0.001                 # s: libfranka's control period
COMMAND_PORT = 1337          # libfranka's TCP port
PROTOCOL_VERSION = 10        # robot server protocol of libfranka 0.21 (FR3, system >= 5.9)
RESYNC_AFTER = 0.05          # s behind the wall clock after which the server stops catching up
SUCCESS_WINDOW = 100         # ticks: libfranka's control_command_success_rate window
EXT_FILTER = 0.05            # per tick: first-order filter of the external torque estimate
RECOVERY_STATES = 2          # clean states sent before the automatic error recovery is answered

logger = logging.getLogger(__name__)


def check_loopback(host: str) -> str:
    """``host`` if it is an IPv4 loopback address (127.0.0.0/8); ConfigError otherwise: the
    stand-in never listens beyond this machine."""
    parts = host.split(".")
    if len(parts) != 4 or parts[0] != "127" or not all(p.isdigit() and int(p) < 256 for p in parts):
        raise ConfigError(f"--host {host!r}: the stand-in serves on a loopback address "
                          f"127.x.y.z only")
    return host


FLANGE = "panda_link8"
LINK_PREFIX = "panda_"   # libfranka finds the flange by its own name, link8 (kLastLinkName)


def served_urdf(urdf_text: str, limits: JointLimits) -> str:
    """The stand-in's URDF as a protocol-10 robot serves it: the arm up to the flange
    (``panda_link8``; the hand's inertia reaches the client as the state's end-effector load,
    as on the robot), link names without the ``panda_`` prefix (``link0`` .. ``link8``, the
    names libfranka's model looks for), and each arm joint with the ``<position_based_velocity_limits>`` that
    libfranka 0.21 reads (an FR3 feature). The Panda's velocity limits do not depend on the
    position, so each joint gets its constant limit as the offset and its acceleration limit as
    the deceleration: min(v_max, offset + sqrt(2 a (q_max - q))) = v_max."""
    root = ET.fromstring(urdf_text)
    children = {j.find("parent").get("link"): [] for j in root.findall("joint")}
    for j in root.findall("joint"):
        children[j.find("parent").get("link")].append(j)
    below, stack = set(), [FLANGE]
    while stack:
        for j in children.get(stack.pop(), []):
            child = j.find("child").get("link")
            below.add(child)
            root.remove(j)
            stack.append(child)
    for link in [lk for lk in root.findall("link") if lk.get("name") in below]:
        root.remove(link)
    for element in root.iter():
        for key in ("name", "link"):
            value = element.get(key)
            if element.tag in ("link", "parent", "child") and value and value.startswith(LINK_PREFIX):
                element.set(key, value[len(LINK_PREFIX):])
    for joint in root.iter("joint"):
        name = joint.get("name")
        if name in limits.joint_names and joint.find("position_based_velocity_limits") is None:
            j = limits.joint_names.index(name)
            ET.SubElement(joint, "position_based_velocity_limits", {
                "velocity_offset": f"{limits.velocity[j]:g}",
                "deceleration_limit": f"{limits.acceleration[j]:g}"})
    return ET.tostring(root, encoding="unicode")


def end_effector_load(full_urdf: str, arm_urdf: str) -> RobotParameters:
    """What the robot reports as its end-effector load (m_ee, F_x_Cee, I_ee in the flange frame):
    everything the full model carries beyond the flange (hand and fingers), so that the client's
    model (``arm_urdf`` plus this load, as libfranka adds it) has the stand-in's dynamics."""
    full, arm = pin.buildModelFromXML(full_urdf), pin.buildModelFromXML(arm_urdf)
    flange = arm.frames[arm.getFrameId(FLANGE[len(LINK_PREFIX):])]
    joint = flange.parentJoint
    beyond = full.inertias[joint] - arm.inertias[joint]          # in the joint's frame
    load = flange.placement.actInv(beyond)                       # in the flange's frame
    return RobotParameters(ee_mass=float(load.mass), ee_com=tuple(load.lever.tolist()),
                           ee_inertia=tuple(load.inertia.flatten(order="F").tolist()))


class StandinFrankaRobot(BaseRobot):
    """franky-sim's robot interface over a :class:`SimulatedRobot` (one physics step per tick)."""

    def __init__(self, robot: SimulatedRobot, urdf_text: str, load: RobotParameters) -> None:
        super().__init__(robot_parameters=load, has_gripper=False)
        self.sim_robot = robot
        self.urdf_text = urdf_text
        self._effort = robot.limits.effort
        hold = robot.measure().position
        self._reference = JointReference(hold.copy(), np.zeros_like(hold))
        self.tau_ext = np.zeros_like(hold)     # what the robot's external-torque estimate reads
        self._command: ExternalCommand = self._reference
        self._delay: deque[ExternalCommand] = deque(
            maxlen=int(round(robot.config.latency / robot.dt)) + 1)
        self._measurement = robot.measure()

    # -- commands from franky-sim's server (one per tick, before the physics step) --
    def torque_control(self, torques: Sequence[float], has_new_command: bool = True) -> None:
        """Torque control: the stand-in adds its own gravity (franky-sim's FR3 model is not used)
        and saturates the sum at the effort limits. A joint motion that follows starts from the
        measured position at rest, as the robot's controller does."""
        tau = np.asarray(torques, dtype=float)
        if tau.shape != self._effort.shape or not np.all(np.isfinite(tau)):
            raise RobotError(f"torque command {tau!r} is not {self._effort.size} finite values")
        self._command = JointTorque(tau)
        self._reference = JointReference(self._measurement.position, np.zeros_like(tau))
        super().torque_control(tau, has_new_command)     # franky-sim's tau_J_d bookkeeping

    def _torque_control(self, torques: np.ndarray) -> None:
        """Nothing to do: :meth:`torque_control` has taken the command without FR3 gravity."""

    def _joint_position_control(self, target_q: np.ndarray) -> None:
        q = np.asarray(target_q, dtype=float)
        self._set_reference(q, (q - self._reference.position) / TICK)

    def _joint_velocity_control(self, target_dq: np.ndarray) -> None:
        dq = np.asarray(target_dq, dtype=float)
        self._set_reference(self._reference.position + dq * TICK, dq)

    def _set_reference(self, q: np.ndarray, dq: np.ndarray) -> None:
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
            raise RobotError("joint command with NaN/Inf")
        self._reference = JointReference(q, dq)
        self._command = self._reference
        # tau_J_d of the state: what the internal controller asks for, without gravity (the
        # last step's sensed joint torque less the model's gravity, noise included).
        m = self._measurement
        super().torque_control(m.effort - self.sim_robot.gravity_torque(m.position))

    def set_hand_goal(self, width: float, max_velocity: float, max_force: float) -> None:
        raise RobotError("the stand-in Panda has no hand (served without a gripper)")

    def _get_hand_width(self) -> float:
        raise RobotError("the stand-in Panda has no hand (served without a gripper)")

    # -- physics --
    @property
    def measured_q(self) -> np.ndarray:
        return self._measurement.position

    @property
    def measured_dq(self) -> np.ndarray:
        return self._measurement.velocity

    def _get_state(self) -> InnerRobotState:
        m = self._measurement
        return InnerRobotState(tuple(m.position), tuple(m.velocity), tuple(m.effort))

    def advance(self) -> None:
        """One 1 ms physics step with the command of ``latency`` seconds ago. The external
        torque estimate is the measured tau_J less the joint torque the arm needs (the stand-in
        knows it exactly; a robot models it): no contact, so sensor offset and noise, low-pass
        filtered as libfranka's tau_ext_hat_filtered."""
        self._delay.append(self._command)
        self.sim_robot.step(self._delay[0])
        self._measurement = self.sim_robot.measure()
        self.tau_ext += EXT_FILTER * (self._measurement.effort - self.sim_robot.joint_torque
                                      - self.tau_ext)


class StandinSimulator(BaseSimulator):
    """franky-sim's simulator interface over one :class:`StandinFrankaRobot`."""

    def __init__(self, robot: StandinFrankaRobot) -> None:
        super().__init__()
        self.robot = robot

    def _get_robots(self) -> list[BaseRobot]:
        return [self.robot]

    def _step(self) -> None:
        self.robot.advance()


class PandaModelCommand(GetRobotModelCommand):
    """kGetRobotModel answered with the served robot's URDF (the stand-in's Panda)."""

    def handle(self, server: "FciServer") -> None:
        self.reply(0, payload=server.robot.urdf_text.encode("ascii"))


class VersionCheckedConnect(ConnectCommand):
    """kConnect as a robot answers it: a client of another protocol version is refused with
    kIncompatibleLibraryVersion and the server's version (franky-sim accepts every client)."""

    def handle(self, server: "FciServer", command_type_struct: str = "I") -> None:
        if self.version == server.library_version:
            super().handle(server, command_type_struct)
            return
        logger.warning("refused a client of protocol version %d (this server speaks %d)",
                       self.version, server.library_version)
        header = MessageHeader(self.command_type, self.command_id, 8)
        reply = struct.pack("<HH4x", ConnectStatus.kIncompatibleLibraryVersion.value,
                            server.library_version)
        try:
            self.client_socket.sendall(header.to_bytes(command_type_struct=command_type_struct) + reply)
        except OSError:
            pass


class ReflexRejectingMove(MoveCommand):
    """kMove as a robot in reflex answers it: rejected until the error is recovered."""

    def handle(self, server: "FciServer") -> None:
        if server.reflex:
            self.reply(MoveStatus.kCommandNotPossibleRejected)
            return
        super().handle(server)


class ReflexClearingRecovery(AutomaticErrorRecoveryCommand):
    """kAutomaticErrorRecovery clears the stand-in's reflex (franky-sim has none to clear) and is
    answered once the client has been sent states without it, as a robot answers when its
    recovery is done (a client that reads the state on the answer must not see the error)."""

    def handle(self, server: "FciServer") -> None:
        if server.reflex:
            logger.info("automatic error recovery: %s cleared", ", ".join(server.reflex))
        server.reflex = ()
        server.answer_after_states(RECOVERY_STATES,
                                   lambda: self.reply(AutomaticErrorRecoveryStatus.kSuccess))


class FciServer(FrankaRobotServer):
    """franky-sim's robot server with five changes: the robot model is the stand-in's, a client
    of another protocol version is refused as a robot refuses it, the control command success
    rate is measured (the share of the last 100 ticks of a motion in which a command arrived;
    franky-sim reports a constant 1), the UDP socket binds the server's loopback address
    (franky-sim binds 0.0.0.0), and, with ``reflexes``, a motion is aborted as the robot aborts
    it (reflexes.py): the Move answered ``kReflexAborted``, the robot in ``kReflex`` with the
    error flagged in ``errors`` and ``reflex_reason`` and holding, new motions refused, until
    libfranka's automatic error recovery."""

    def __init__(self, robot: StandinFrankaRobot, host: str,
                 protocol_version: int = PROTOCOL_VERSION, reflexes: bool = True) -> None:
        super().__init__(robot, [host])
        commands = self._FrankaServer__command_class_map
        commands[RobotCommand.kGetRobotModel] = PandaModelCommand
        commands[Command.kConnect] = VersionCheckedConnect
        commands[RobotCommand.kMove] = ReflexRejectingMove
        commands[RobotCommand.kAutomaticErrorRecovery] = ReflexClearingRecovery
        self._FrankaServer__library_version = protocol_version
        self._arrived: deque[bool] = deque(maxlen=SUCCESS_WINDOW)
        self._window_motion = 0
        self.monitor = ReflexMonitor(robot.sim_robot.limits) if reflexes else None
        self.reflex: tuple[str, ...] = ()          # the active errors, libfranka's names
        self._answers: list[list] = []             # [states still to send, answer]

    def answer_after_states(self, states: int, answer: Callable[[], None]) -> None:
        """Call ``answer`` once ``states`` more robot states have been sent."""
        self._answers.append([states, answer])

    def send_state(self) -> None:
        super().send_state()
        for pending in self._answers:
            pending[0] -= 1
        due = [answer for left, answer in self._answers if left <= 0]
        self._answers = [p for p in self._answers if p[0] > 0]
        for answer in due:
            try:
                answer()
            except OSError:                        # the client went meanwhile
                pass

    def _post_process_commands(self) -> None:
        motion = self.current_motion_id
        if motion:
            new_motion = motion != self._window_motion
            if new_motion:                         # a new motion: a new window
                self._arrived.clear()
                self._window_motion = motion
            arrived = self._FrankaRobotServer__has_new_command
            self._arrived.append(arrived)
            if self.monitor is not None:
                if new_motion:
                    self.monitor.start()
                error = self.monitor.cycle(*self._commanded(arrived), self.robot.measured_q,
                                           self.robot.measured_dq)
                if error is not None:
                    self._abort(error)
        super()._post_process_commands()

    def _commanded(self, arrived: bool) -> tuple[str, bool, Optional[np.ndarray]]:
        """The motion's mode for the reflex checks, and this cycle's command."""
        mode = self._FrankaRobotServer__control_mode.name
        command = self._FrankaRobotServer__current_control_command
        value = {"TORQUE": ("torque", command.tau_J_d), "POSITION": ("position", command.q_c),
                 "VELOCITY": ("velocity", command.dq_c)}.get(mode, ("other", None))
        return value[0], arrived, (np.asarray(value[1], dtype=float) if value[1] is not None else None)

    def _abort(self, error: str) -> None:
        """End the motion as the robot does on a reflex; the arm holds where it is."""
        motion = self.current_motion_id
        logger.warning("motion %d aborted by reflex: %s", motion, error)
        self.reflex = (error,)
        self.stop_motion(send_preemption_signal=False)
        BaseCommand.send_response(self._tcp_socket, RobotCommand.kMove, motion, MoveStatus.kReflexAborted)
        self.reset_current_motion_id()

    @property
    def robot_state(self):
        rate = sum(self._arrived) / len(self._arrived) if self._arrived else 1.0
        state = super().robot_state.replace(control_command_success_rate=rate,
                                            tau_ext_hat_filtered=tuple(self.robot.tau_ext))
        if not self.reflex:
            return state
        flags = error_flags(self.reflex)
        return state.replace(robot_mode=RobotMode.kReflex, errors=flags, reflex_reason=flags)

    def _setup_udp_connection(self, network_udp_port: int) -> None:
        super()._setup_udp_connection(network_udp_port)
        wide = self._FrankaServer__udp_socket
        wide.close()
        narrow = type(wide)(wide.family, wide.type)
        narrow.bind((self.hostname, 0))
        narrow.setblocking(False)
        self._FrankaServer__udp_socket = narrow
        self._FrankaServer__udp_receiver = type(self._FrankaServer__udp_receiver)(narrow)


@dataclass
class ServeStats:
    """Pacing of the 1 kHz loop: ticks served, ticks later than one period, resynchronisations."""

    ticks: int = 0
    late_ticks: int = 0
    resyncs: int = 0
    drops: int = 0
    started: float = field(default_factory=time.monotonic)

    def as_dict(self) -> dict:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return {"ticks": self.ticks, "late_ticks": self.late_ticks, "resyncs": self.resyncs,
                "connection_drops": self.drops, "tick_rate_hz": self.ticks / elapsed}


class FciStandin:
    """The stand-in robot behind a libfranka-protocol server on ``host`` (loopback)."""

    def __init__(self, config: RobotConfig, limits: JointLimits, host: str = "127.0.0.1",
                 protocol_version: int = PROTOCOL_VERSION, reflexes: bool = True) -> None:
        if abs(config.dt - TICK) > 1e-12:
            raise ConfigError(f"the stand-in served over FCI steps at libfranka's 1 kHz: "
                              f"physics_rate must be 1000, the config has {1.0 / config.dt:g}")
        self.host = check_loopback(host)
        full_text = prepare_dynamics_urdf(load_urdf(config.urdf), config.inertials)
        urdf_text = served_urdf(full_text, limits)
        self.robot = StandinFrankaRobot(SimulatedRobot(config, limits), urdf_text,
                                        end_effector_load(full_text, urdf_text))
        self.simulator = StandinSimulator(self.robot)
        self.server = FciServer(self.robot, self.host, protocol_version, reflexes)
        self.stats = ServeStats()
        self._drop_requested = False

    def start(self) -> None:
        """Bind the server (RobotError if the address is taken) and start the physics."""
        self.simulator.init()
        try:
            self.server.init()
        except OSError as exc:
            raise RobotError(f"cannot serve on {self.host}:{COMMAND_PORT}: {exc}") from exc
        self.simulator.start()

    def tick(self) -> None:
        """One control period: the client's commands, one physics step, the state to the client."""
        if self._drop_requested:
            self._drop_requested = False
            if self.server.current_motion_id and self.server.monitor is not None:
                self.server.reflex = ("communication_constraints_violation",)   # as a robot would
            self.server.reset_state()
            self.stats.drops += 1
        self.server.process_commands()
        self.simulator.step()
        self.server.send_state()
        self.stats.ticks += 1

    def drop_connection(self) -> None:
        """Close the client's connection at the next tick (safe to call from a signal handler)."""
        self._drop_requested = True

    def serve(self, duration: Optional[float] = None, should_stop=lambda: False) -> ServeStats:
        """Tick at 1 kHz of wall-clock time until ``duration`` [s] or ``should_stop()``; a server
        more than RESYNC_AFTER behind stops catching up (counted in ``stats.resyncs``)."""
        self.stats = ServeStats()
        deadline = time.monotonic()
        end = None if duration is None else deadline + duration
        while not should_stop() and (end is None or deadline < end):
            self.tick()
            deadline += TICK
            lag = time.monotonic() - deadline
            if lag > 0.0:
                self.stats.late_ticks += 1
                if lag > RESYNC_AFTER:
                    self.stats.resyncs += 1
                    deadline = time.monotonic()
            else:
                time.sleep(-lag)
        return self.stats

    def close(self) -> None:
        self.server.cleanup()
        if self.simulator.is_initialized and not self.simulator.is_cleaned_up:
            self.simulator.cleanup()
        self.robot.sim_robot.close()
