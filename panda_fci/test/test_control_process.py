"""The 1 kHz path in a process of its own (control_process.py) against the stand-in served over
FCI: the bridge's interface across the process boundary (states, trajectories, rejections with
their reasons, errors, recovery), the node's process holding the interpreter lock without
delaying the reference, and a child that ends. Loopback addresses only."""
import os
import random
import signal
import time
from contextlib import contextmanager

import numpy as np
import pytest

from panda_sim2real import (FAST_MOVES_FILE, GeneratorSettings, PlannedTrajectory, TrajectoryGenerator,
                            TrajectoryRejected)
from panda_fci.control_process import ControlProcess
from panda_fci.errors import RobotError
from test_fci import LIMITS, bridge_config, drain, standin_process, wait_robot_time


@contextmanager
def control_process(host: str):
    process = ControlProcess(host, LIMITS, bridge_config(), realtime="ignore")
    try:
        process.connect(timeout=5.0)
        process.start()
        yield process
    finally:
        process.close()
        assert process.process.poll() is not None          # the child is gone


def tracking_rms(samples, plan) -> np.ndarray:
    t = np.array([s.robot_time for s in samples])
    during = (t >= plan.start) & (t <= plan.start + plan.duration)
    q = np.array([s.q for s in samples])[during]
    ref = np.array([plan.sample(x - plan.start)[0] for x in t[during]])
    return np.sqrt(np.mean((q - ref) ** 2, axis=0))


def hold_the_interpreter_lock(seconds: float) -> float:
    """Keep this process's interpreter lock for about ``seconds`` in one C call (list.sort never
    releases it, unlike a Python loop); returns how long it was held."""
    values = [random.random() for _ in range(100_000)]
    times = []
    for _ in range(3):
        start = time.perf_counter()
        sorted(values)
        times.append(time.perf_counter() - start)
    repeats = int(np.ceil(1.3 * seconds / sorted(times)[1]))
    big = values * repeats
    start = time.perf_counter()
    sorted(big)
    return time.perf_counter() - start


def test_the_child_tracks_a_trajectory_and_rejects_bad_ones_as_the_bridge_does():
    with standin_process("127.0.0.247"), control_process("127.0.0.247") as robot:
        wait_robot_time(robot, robot._robot_time + 0.2)
        settings = GeneratorSettings.from_yaml(FAST_MOVES_FILE)
        move = TrajectoryGenerator(LIMITS, settings, seed=4).next(LIMITS.home, ("multi",))
        scheduled = robot.command(move.trajectory)
        assert isinstance(scheduled, PlannedTrajectory) and scheduled.start > 0  # robot time
        samples = wait_robot_time(robot, scheduled.start + scheduled.duration + 0.05)
        t = np.array([s.robot_time for s in samples])
        assert np.all(np.diff(t) > 0) and np.median(np.diff(t)) == pytest.approx(0.001)
        assert all(s.is_finite() for s in samples) and robot.dropped == 0
        assert np.all(tracking_rms(samples, scheduled) < 0.01)    # rad, as in-process
        held = samples[-1].q
        with pytest.raises(TrajectoryRejected, match="0.300 rad from the reference") as caught:
            robot.command(PlannedTrajectory(np.array([0.0, 2.0]), np.vstack([held + 0.3, held + 0.3]),
                                            np.zeros((2, 7))))
        assert caught.value.reason == "continuity"               # the reason crosses too
        with pytest.raises(TrajectoryRejected, match="start pose puts panda_joint4.*not inside"):
            robot.move_to(held + np.r_[0, 0, 0, 3.0, 0, 0, 0])
        time.sleep(0.2)
        after = drain(robot)
        assert robot.error is None and not robot.executing(after[-1].robot_time)
        assert np.max(np.abs(after[-1].q - held)) < 0.005         # held where it was


def test_the_node_holding_the_interpreter_lock_does_not_delay_the_reference():
    """The point of the child: while the node's process keeps its interpreter lock for 0.3 s (a
    ROS thread serialising, a slow callback), the child still sets each tick's reference, so the
    arm follows the trajectory on time. With the tick callback in the node's own process the
    reference stands still for those 0.3 s and then jumps: here the stand-in aborted that move
    with joint_velocity_violation (bench/fci_bridge.py measures both)."""
    with standin_process("127.0.0.248"), control_process("127.0.0.248") as robot:
        wait_robot_time(robot, robot._robot_time + 0.2)
        settings = GeneratorSettings.from_yaml(FAST_MOVES_FILE)
        move = TrajectoryGenerator(LIMITS, settings, seed=5).next(LIMITS.home, ("multi",))
        scheduled = robot.command(move.trajectory)
        samples = wait_robot_time(robot, scheduled.start + scheduled.duration / 2 - 0.15)
        held = hold_the_interpreter_lock(0.3)            # mid-move, where the arm is fastest
        assert held > 0.2
        samples += wait_robot_time(robot, scheduled.start + scheduled.duration + 0.05)
        assert robot.error is None
        t = np.array([s.robot_time for s in samples])
        assert np.max(np.diff(t)) < 0.0015                        # every state, none lost
        assert np.all(tracking_rms(samples, scheduled) < 0.01)    # on time through the stall


def test_errors_cross_the_process_as_one_line():
    with pytest.raises(RobotError, match=r"cannot reach a robot at 127\.0\.0\.249: .*check ~robot_ip"):
        with control_process("127.0.0.249"):
            pass


def test_a_child_that_ends_is_the_robots_error():
    with standin_process("127.0.0.250"), control_process("127.0.0.250") as robot:
        wait_robot_time(robot, robot._robot_time + 0.1)
        errors = []
        robot.on_error = errors.append
        os.kill(robot.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while robot.next_sample(timeout=0.1) is not None and time.monotonic() < deadline:
            pass
        assert robot.next_sample(timeout=0.1) is None
        assert "the control process ended" in robot.error and errors == [robot.error]
        with pytest.raises(RobotError, match="the control process ended .*restart the node"):
            robot.hold()
