"""The robot over libfranka (fci_bridge's library) against the stand-in served over the same
protocol (fci_standin, a separate process as on a robot PC), and the pure parts of both:
configuration, the served robot model, the protocol's failure modes. Loopback addresses only."""
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np
import pinocchio as pin
import pytest
import yaml

from panda_sim2real import (ConfigError, FAST_MOVES_FILE, GeneratorSettings, JointLimits, PlannedTrajectory,
                            REALITY_CONFIG_FILE, RobotConfig, SimulatedRobot, TrajectoryGenerator,
                            TrajectoryRejected, load_urdf, motion_extremes, prepare_dynamics_urdf)
from panda_fci.errors import RobotError
from panda_fci.fci_bridge import BRIDGE_CONFIG_FILE, QUEUE_SIZE, BridgeConfig, FciBridge
from panda_fci.fci_standin import FciStandin, check_loopback, end_effector_load, served_urdf
from panda_fci.homing import HomingSettings, homing_trajectory
from panda_fci.reflexes import TICK, ReflexMonitor, error_flags
from panda_fci.realtime_host import realtime_kernel

LIMITS = JointLimits.from_yaml()
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts",
                      "fci_standin")
BRIDGE_YAML = BRIDGE_CONFIG_FILE
STANDIN_PRIORITY = 40


def bridge_config(**overrides) -> BridgeConfig:
    with open(BRIDGE_YAML) as f:
        raw = yaml.safe_load(f)
    raw.update(overrides)
    return BridgeConfig.from_dict(raw)


@contextmanager
def standin_process(host: str):
    """fci_standin serving the default reality stand-in on ``host``, as a user runs it; as root
    at SCHED_FIFO 40 (a robot's controller is a computer of its own and never late: at normal
    priority a busy 2-core CI machine made the Python stand-in late by 80-140 ms, which its
    reflexes count as lost commands and abort on)."""
    fifo = ["--fifo-priority", str(STANDIN_PRIORITY)] if os.geteuid() == 0 else []
    proc = subprocess.Popen([sys.executable, SCRIPT, "--host", host, *fifo], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        assert "serving 'reality stand-in'" in line, line + proc.stdout.read()
        yield proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def connected(host: str, **overrides):
    bridge = FciBridge(host, LIMITS, bridge_config(**overrides), realtime="ignore")
    bridge.connect()
    bridge.start()
    try:
        yield bridge
    finally:
        bridge.close()


def drain(bridge: FciBridge) -> list:
    out = []
    while (sample := bridge.next_sample()) is not None:
        out.append(sample)
    return out


def wait_robot_time(bridge: FciBridge, t: float, timeout: float = 30.0) -> list:
    """Wait until the robot's clock passes ``t``, consuming the states meanwhile (as the node
    does); returns them."""
    deadline = time.monotonic() + timeout
    samples = []
    while bridge._robot_time < t and time.monotonic() < deadline:
        samples += drain(bridge)
        time.sleep(0.01)
    assert bridge._robot_time >= t, "the robot's clock did not advance"
    return samples + drain(bridge)


# --- pure parts ------------------------------------------------------------------------------

def test_a_consumer_that_falls_behind_loses_the_oldest_states():
    bridge = FciBridge("127.0.0.1", LIMITS, bridge_config(), realtime="ignore")
    for k in range(QUEUE_SIZE + 3):
        bridge._queue(k, 0.0, 0.0)
    assert bridge.dropped == 3
    assert bridge._raw.get_nowait()[0] == 3                  # the newest QUEUE_SIZE are kept


def test_bridge_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="'stiffness' needs 7 finite non-negative"):
        bridge_config(stiffness=[1, 2, 3])
    with pytest.raises(ConfigError, match="'max_delta_tau' must be a positive finite"):
        bridge_config(max_delta_tau=float("nan"))
    with pytest.raises(ConfigError, match=r"unknown keys \['stifness'\]"):
        bridge_config(stifness=1.0)
    with pytest.raises(ConfigError, match="expected a mapping"):
        BridgeConfig.from_dict([1, 2])
    with pytest.raises(ConfigError, match="~realtime must be one of"):
        FciBridge("127.0.0.1", LIMITS, bridge_config(), realtime="sometimes")


def test_the_standin_serves_only_on_loopback_and_at_1khz():
    assert check_loopback("127.0.3.4") == "127.0.3.4"
    for bad in ("0.0.0.0", "192.168.1.10", "localhost", "127.0.0.256"):
        with pytest.raises(ConfigError, match="loopback address"):
            check_loopback(bad)
    config = RobotConfig.from_yaml(REALITY_CONFIG_FILE)
    slow = RobotConfig(**{**config.__dict__, "physics_rate": 500.0, "publish_rate": 100.0})
    with pytest.raises(ConfigError, match="physics_rate must be 1000"):
        FciStandin(slow, LIMITS, "127.0.0.1")


def test_the_served_model_is_the_standins_panda_with_libfrankas_names():
    """The URDF a protocol-10 client builds its model from: arm to link8, Panda joints, each with
    position-based velocity limits. With the end-effector load the robot reports added at the
    flange (as libfranka adds it), its gravity is the stand-in physics' gravity."""
    config = RobotConfig.from_yaml(REALITY_CONFIG_FILE)
    full = prepare_dynamics_urdf(load_urdf(config.urdf), config.inertials)
    text = served_urdf(full, LIMITS)
    model = pin.buildModelFromXML(text)
    assert model.nq == 7 and list(model.names[1:]) == list(LIMITS.joint_names)
    assert model.existFrame("link8") and not model.existFrame("panda_hand")
    assert text.count("<position_based_velocity_limits") == 7
    load = end_effector_load(full, text)
    hand, fingers = config.inertials["panda_hand"], config.inertials["panda_leftfinger"]
    assert load.ee_mass == pytest.approx(hand.mass + 2 * fingers.mass)
    flange = model.frames[model.getFrameId("link8")]
    model.inertias[flange.parentJoint] += flange.placement.act(pin.Inertia(
        load.ee_mass, np.array(load.ee_com), np.array(load.ee_inertia).reshape(3, 3, order="F")))
    data = model.createData()
    robot = SimulatedRobot(config, LIMITS)
    rng = np.random.default_rng(2)
    for _ in range(5):
        q = rng.uniform(LIMITS.position_min, LIMITS.position_max)
        g_client = pin.computeGeneralizedGravity(model, data, q)
        np.testing.assert_allclose(g_client, robot.gravity_torque(q), atol=1e-6)
    robot.close()


# --- against the served stand-in --------------------------------------------------------------

def test_unreachable_address_is_one_clear_error():
    bridge = FciBridge("127.0.0.231", LIMITS, bridge_config(), realtime="ignore")
    with pytest.raises(RobotError, match=r"cannot reach a robot at 127\.0\.0\.231: .*check ~robot_ip"):
        bridge.connect()


def test_another_protocol_version_is_one_clear_error():
    config = RobotConfig.from_yaml(REALITY_CONFIG_FILE)
    standin = FciStandin(config, LIMITS, "127.0.0.232", protocol_version=5)   # an older robot
    standin.start()
    stop = threading.Event()
    serving = threading.Thread(target=standin.serve, kwargs={"should_stop": stop.is_set})
    serving.start()
    try:
        bridge = FciBridge("127.0.0.232", LIMITS, bridge_config(), realtime="ignore")
        with pytest.raises(RobotError, match="speaks another protocol version.*libfranka 0.9"):
            bridge.connect()
    finally:
        stop.set()
        serving.join()
        standin.close()


@pytest.mark.skipif(realtime_kernel(), reason="this machine has a real-time kernel")
def test_enforced_realtime_on_an_ordinary_kernel_says_what_to_do():
    with standin_process("127.0.0.233"):
        bridge = FciBridge("127.0.0.233", LIMITS, bridge_config(), realtime="enforce")
        with pytest.raises(RobotError, match="realtime.*PREEMPT_RT kernel.*~realtime:=ignore"):
            bridge.connect()


def test_tracks_a_generated_trajectory_and_rejects_bad_ones_while_holding():
    with standin_process("127.0.0.234"), connected("127.0.0.234") as bridge:
        wait_robot_time(bridge, bridge._robot_time + 0.2)
        settings = GeneratorSettings.from_yaml(FAST_MOVES_FILE)
        move = TrajectoryGenerator(LIMITS, settings, seed=4).next(LIMITS.home, ("multi",))
        scheduled = bridge.command(move.trajectory)
        assert bridge._executor.plan_at(scheduled.start) is scheduled        # the checked plan runs,
        assert bridge._feedforward[id(scheduled)].plan is scheduled          # with its M(q) qdd
        end = scheduled.start + scheduled.duration
        samples = wait_robot_time(bridge, end + 0.05)
        assert bridge.dropped == 0
        assert all(s.is_finite() for s in samples)
        t = np.array([s.robot_time for s in samples])
        assert np.all(np.diff(t) > 0) and np.median(np.diff(t)) == pytest.approx(0.001)
        during = (t >= scheduled.start) & (t <= end)
        q = np.array([s.q for s in samples])[during]
        ref = np.array([scheduled.sample(x - scheduled.start)[0] for x in t[during]])
        rms = np.sqrt(np.mean((q - ref) ** 2, axis=0))
        assert np.all(rms < 0.01), rms                         # rad, every joint
        # The success rate is measured (share of the last 100 ticks with a command), so it
        # depends on this machine's load: the test checks it is a rate; its level is a figure
        # of bench/fci_bridge.py, not an assertion.
        assert all(0.0 <= s.success_rate <= 1.0 for s in samples) and samples[-1].success_rate > 0.0
        stamps = np.array([s.stamp for s in samples])
        assert np.all(np.diff(stamps) > 0)                      # host stamps keep the robot's order

        held = samples[-1].q
        bad = [
            ("outside", PlannedTrajectory(np.array([0.0, 1.0]),
                                          np.vstack([held, held + np.r_[0, 0, 0, 3.0, 0, 0, 0]]),
                                          np.zeros((2, 7)))),
            ("exceeds the limit", PlannedTrajectory(np.array([0.0, 0.3]),
                                                    np.vstack([held, held + np.r_[0.6, 0, 0, 0, 0, 0, 0]]),
                                                    np.zeros((2, 7)))),
            ("at its start the trajectory is 0.300 rad from the reference",
             PlannedTrajectory(np.array([0.0, 2.0]), np.vstack([held + 0.3, held + 0.3]),
                               np.zeros((2, 7)))),
            # started 1 s ago (host time): taking over now would jump to mid-trajectory
            ("at now \\(its start is past\\) the trajectory is",
             PlannedTrajectory(np.array([0.0, 2.0]), np.vstack([held, held + np.r_[0.5, 0, 0, 0, 0, 0, 0]]),
                               np.zeros((2, 7)), start=time.time() - 1.0)),
        ]
        for reason, plan in bad:
            with pytest.raises(TrajectoryRejected, match=reason):
                bridge.command(plan)
        time.sleep(0.3)
        after = drain(bridge)
        assert bridge.error is None and not bridge.executing(bridge._robot_time)
        assert np.max(np.abs(after[-1].q - held)) < 0.005        # held where it was


def test_a_lost_connection_is_reported_and_recover_resumes():
    with standin_process("127.0.0.235") as proc, connected("127.0.0.235") as bridge:
        wait_robot_time(bridge, bridge._robot_time + 0.2)
        errors = []
        bridge.on_error = errors.append
        proc.send_signal(signal.SIGUSR1)                     # the robot drops the connection
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:   # on_error follows bridge.error
            time.sleep(0.05)
        assert bridge.error and errors == [bridge.error]
        assert "Exception" in bridge.error
        with pytest.raises(RobotError, match="not ready.*call ~recover"):
            bridge.command(PlannedTrajectory(np.array([0.0, 1.0]), np.tile(LIMITS.home, (2, 1)),
                                             np.zeros((2, 7))))
        assert bridge.recover() == "recovered: holding the current position"
        assert bridge.error is None
        drain(bridge)
        samples = wait_robot_time(bridge, bridge._robot_time + 0.3)
        # states flow again, all finite; how many of the 300 ticks arrive is a rate, measured by
        # make bench (fci_bridge.json), not here: the Python stand-in ticks 450-1000 Hz on this
        # VM (issue 39), and CI got 179 of 300
        assert len(samples) > 30 and all(s.is_finite() for s in samples)
        assert bridge.recover().startswith("nothing to recover")


def test_a_homing_move_stays_inside_a_fraction_of_every_limit():
    """The quintic move keeps each joint's peak velocity, acceleration and jerk within speed x
    its limit (checked on the Hermite interpolant the robot follows), starts and ends at rest."""
    start = LIMITS.home + np.r_[0.8, -0.4, 0.6, 0.5, -0.9, 0.7, -1.2]
    plan = homing_trajectory(start, LIMITS.home, LIMITS, HomingSettings(speed=0.25))
    np.testing.assert_allclose(plan.positions[0], start)
    np.testing.assert_allclose(plan.positions[-1], LIMITS.home)
    assert np.all(plan.velocities[[0, -1]] == 0.0)
    extremes = motion_extremes(plan)
    for kind, limit in (("velocity", LIMITS.velocity), ("acceleration", LIMITS.acceleration),
                        ("jerk", LIMITS.jerk)):
        assert np.all(extremes[kind][0] <= 0.25 * limit * 1.05), kind
    assert np.max(extremes["velocity"][0] / LIMITS.velocity) > 0.2    # as fast as allowed
    slow = homing_trajectory(start, LIMITS.home, LIMITS, HomingSettings(speed=0.1))
    assert slow.duration > plan.duration * 2.0
    near = homing_trajectory(LIMITS.home + 1e-3, LIMITS.home, LIMITS)
    assert near.duration == pytest.approx(HomingSettings().min_duration)


@pytest.mark.parametrize("start, goal, message", [
    (LIMITS.home + np.r_[0, 0, 0, 2.3, 0, 0, 0], LIMITS.home, "current position puts panda_joint4"),
    (LIMITS.home, LIMITS.home + np.r_[0, 0, 0, 0, 0, -1.57, 0], "start pose puts panda_joint6"),
    (LIMITS.home, np.r_[LIMITS.home[:6], np.nan], "start pose must be 7 finite"),
    (LIMITS.home[:6], LIMITS.home, "current position must be 7 finite"),
])
def test_a_homing_move_outside_the_margins_is_refused_naming_the_joint(start, goal, message):
    with pytest.raises(TrajectoryRejected, match=message):
        homing_trajectory(start, goal, LIMITS)


def test_bad_homing_settings_name_the_field():
    for raw, message in (({"speed": 0.0}, "speed"), ({"margin": -1}, "margin"),
                         ({"fast": 1}, "unknown keys")):
        with pytest.raises(ConfigError, match=message):
            bridge_config(homing=raw)


def test_move_to_brings_the_arm_to_the_start_pose_and_refuses_while_a_move_runs():
    """Against the stand-in over FCI: away from home by a first move, back by move_to; a second
    move_to while the first runs and one to a pose outside the margins are refused, the arm
    holds; after a lost connection move_to asks for ~recover."""
    away = LIMITS.home + np.r_[0.3, 0.2, -0.3, 0.3, 0.2, -0.2, 0.4]
    with standin_process("127.0.0.236") as proc, connected("127.0.0.236") as bridge:
        wait_robot_time(bridge, bridge._robot_time + 0.2)
        first = bridge.move_to(away)
        with pytest.raises(TrajectoryRejected, match="a trajectory is running or scheduled"):
            bridge.move_to(LIMITS.home)
        bridge.wait_for(first, timeout=first.duration + 30.0)
        wait_robot_time(bridge, bridge._robot_time + 0.3)
        home = bridge.move_to(LIMITS.home)
        bridge.wait_for(home, timeout=home.duration + 30.0)
        samples = wait_robot_time(bridge, bridge._robot_time + 0.5)
        assert bridge.error is None and all(s.is_finite() for s in samples)
        assert np.max(np.abs(samples[-1].q - LIMITS.home)) < 0.01
        outside = LIMITS.home.copy()
        outside[3] = LIMITS.position_max[3] - 0.01
        with pytest.raises(TrajectoryRejected, match="start pose puts panda_joint4.*choose a ~start_pose"):
            bridge.move_to(outside)
        later = home.at(time.time() + 5.0)                   # scheduled, not yet started
        bridge.command(PlannedTrajectory(later.times, np.tile(samples[-1].q, (len(later.times), 1)),
                                         np.zeros_like(later.velocities), later.start))
        with pytest.raises(TrajectoryRejected, match="running or scheduled"):
            bridge.move_to(away)
        bridge.hold()
        before = drain(bridge)
        held = before[-1].q if before else samples[-1].q
        time.sleep(0.3)
        assert np.max(np.abs(drain(bridge)[-1].q - held)) < 0.005
        proc.send_signal(signal.SIGUSR1)                     # the robot drops the connection
        deadline = time.monotonic() + 10
        while bridge.error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(RobotError, match="not ready.*call ~recover"):
            bridge.move_to(LIMITS.home)


def test_the_reflex_checks_abort_as_the_robot_does():
    """20 cycles without a command, a torque step above the rate limit, a joint past its limits or
    too fast, a generator command past the position, velocity, acceleration or jerk limits."""
    q, dq = LIMITS.home.copy(), np.zeros(7)
    monitor = ReflexMonitor(LIMITS)
    monitor.start()
    tau = np.zeros(7)
    assert monitor.cycle("torque", True, tau, q, dq) is None
    assert [monitor.cycle("torque", False, None, q, dq) for _ in range(19)] == [None] * 19
    assert monitor.cycle("torque", False, None, q, dq) == "communication_constraints_violation"
    monitor.start()
    assert monitor.cycle("torque", True, tau, q, dq) is None
    assert monitor.cycle("torque", True, tau + 0.99, q, dq) is None          # within 1 N m a cycle
    assert monitor.cycle("torque", False, None, q, dq) is None              # one lost cycle:
    assert monitor.cycle("torque", True, tau + 2.9, q, dq) is None          # 2 N m allowed
    assert monitor.cycle("torque", True, tau + 4.0, q, dq) == "controller_torque_discontinuity"
    monitor.start()
    past = q.copy()
    past[3] = LIMITS.position_max[3] + 0.01
    assert monitor.cycle("torque", True, tau, past, dq) == "joint_position_limits_violation"
    assert monitor.cycle("torque", True, tau, q, 1.01 * LIMITS.velocity) == "joint_velocity_violation"
    step = 0.9 * LIMITS.velocity * TICK                         # a position step per cycle
    for commands, error in (
            ([past], "joint_motion_generator_position_limits_violation"),
            ([q, q + 1.1 * LIMITS.velocity * TICK], "joint_motion_generator_velocity_limits_violation"),
            ([q, q, q + step], "joint_motion_generator_velocity_discontinuity"),
    ):
        monitor.start()
        results = [monitor.cycle("position", True, c, q, dq) for c in commands]
        assert results[:-1] == [None] * (len(commands) - 1) and results[-1] == error
    monitor.start()
    jerk = LIMITS.jerk * TICK ** 2 * 1.5                        # velocity commands: jerk
    results = [monitor.cycle("velocity", True, v * np.ones(7), q, dq) for v in (0.0, 0.0, jerk)]
    assert results == [None, None, "joint_motion_generator_acceleration_discontinuity"]
    assert error_flags(("communication_constraints_violation",))[25]
    assert sum(error_flags(("joint_velocity_violation",))) == 1


def wait_for_error(bridge: FciBridge, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while bridge.error is None and time.monotonic() < deadline:
        drain(bridge)
        time.sleep(0.01)
    assert bridge.error is not None, "the stand-in did not abort"
    return bridge.error


def recover_and_hold(bridge: FciBridge) -> None:
    """~recover clears the reflex: the robot holds again, states are finite, no error remains."""
    assert bridge.recover() == "recovered: holding the current position"
    drain(bridge)
    samples = wait_robot_time(bridge, bridge._robot_time + 0.3)
    assert bridge.error is None and samples and all(s.is_finite() for s in samples)
    assert samples[-1].mode != "Reflex" and samples[-1].errors == ()


def test_a_command_over_the_torque_rate_limit_makes_the_standin_abort():
    """The bridge's own checks let through a trajectory 0.3 rad from the held reference and a
    torque rate 20x the limit: the impedance controller's torque jumps, the robot aborts."""
    with standin_process("127.0.0.238"), connected("127.0.0.238", max_delta_tau=20.0,
                                                   start_tolerance=1.0) as bridge:
        held = wait_robot_time(bridge, bridge._robot_time + 0.2)[-1].q
        bridge.command(PlannedTrajectory(np.array([0.0, 2.0]), np.vstack([held + 0.3, held + 0.3]),
                                         np.zeros((2, 7))))
        error = wait_for_error(bridge)
        assert "controller_torque_discontinuity" in error, error
        time.sleep(0.1)
        reflex = [s for s in drain(bridge) if s.mode == "Reflex"]
        assert reflex and "controller_torque_discontinuity" in reflex[-1].errors
        with pytest.raises(RobotError, match="not ready.*call ~recover"):
            bridge.move_to(LIMITS.home)
        recover_and_hold(bridge)


def test_the_standin_can_be_served_without_reflexes():
    """FciStandin(reflexes=False): no reflex checks (franky-sim's own behaviour)."""
    standin = FciStandin(RobotConfig.from_yaml(REALITY_CONFIG_FILE), LIMITS, "127.0.0.239",
                         reflexes=False)
    assert standin.server.monitor is None
    standin.close()


class StallingExecutor:
    """Fault injection: the bridge's trajectory executor, one of whose reference samplings (in the
    tick callback) takes ``stall`` seconds, as a GIL-holding ROS thread would delay it."""

    def __init__(self, executor, stall: float) -> None:
        self._executor, self._stall = executor, stall

    def reference(self, t):
        if self._stall:
            stall, self._stall = self._stall, 0.0
            time.sleep(stall)
        return self._executor.reference(t)

    def __getattr__(self, name):
        return getattr(self._executor, name)


def test_a_stalled_tick_callback_costs_the_robot_no_cycle():
    """franky runs the 1 kHz control loop in compiled code and calls the Python tick callback
    apart from it: a 60 ms stall of the callback (the stand-in aborts after 20 cycles without a
    command) loses no cycle and raises no reflex; only the reference it sets is late meanwhile
    (issue 39: the reference still comes from Python)."""
    with standin_process("127.0.0.244"), connected("127.0.0.244") as bridge:
        wait_robot_time(bridge, bridge._robot_time + 0.2)
        with bridge._lock:
            bridge._executor = StallingExecutor(bridge._executor, 0.06)
        samples = wait_robot_time(bridge, bridge._robot_time + 0.5)
        assert bridge.error is None
        walls = np.diff([s.tick_wall for s in samples])
        assert np.max(walls) > 0.05                               # the callback did stall
        robot_times = np.array([s.robot_time for s in samples])
        assert np.max(np.diff(robot_times)) < 0.0015              # and the robot ticked on
        assert all(s.mode != "Reflex" for s in samples)
