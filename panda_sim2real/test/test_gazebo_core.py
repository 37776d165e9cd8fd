"""The Gazebo plugin's core (panda_gazebo._core, the C++ that libpanda_effort_plugin.so runs)
against this package's simulator: the same validation (reasons), the same time parametrisation of
a commanded trajectory and the same joint torques, so pairs recorded in Gazebo and in PyBullet
follow one reference."""
from __future__ import annotations

import numpy as np
import pytest

import panda_gazebo as pg
from panda_sim2real.controllers import PIDController
from panda_sim2real.errors import TrajectoryRejected
from panda_sim2real.friction import sigmoid_friction
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot_config import SIM_CONFIG_FILE, FrictionParams, RobotConfig
from panda_sim2real.trajectory import LIMIT_TOLERANCE, TrajectoryExecutor, validate_trajectory
from panda_sim2real.trajectory_generation import KINDS
from panda_sim2real.work_cycle import TASK, make_generator

LIMITS = JointLimits.from_yaml()
NAMES = list(LIMITS.joint_names)


def core_limits() -> pg.JointLimits:
    return pg.JointLimits(NAMES, LIMITS.position_min.tolist(), LIMITS.position_max.tolist(),
                          LIMITS.velocity.tolist(), LIMITS.effort.tolist())


def both(names, times, positions, velocities, start=None):
    """(python, c++) of one validation: a PlannedTrajectory or the rejection's reason."""
    try:
        py = validate_trajectory(names, times, positions, velocities, LIMITS, start)
    except TrajectoryRejected as exc:
        py = exc.reason
    cc = pg.validate_trajectory(names, list(times), [list(map(float, p)) for p in positions],
                                [list(map(float, v)) for v in velocities], core_limits(), start)
    return py, (cc[0] if isinstance(cc, tuple) else cc)


def moves(seed: int, count: int):
    generator = make_generator(KINDS, seed, LIMITS)
    tasks = make_generator((TASK,), seed, LIMITS)
    q = LIMITS.home.copy()
    for k in range(count):
        move = (tasks.next(q) if k % 4 == 3 else generator.next(q, KINDS)).trajectory
        q = move.positions[-1]
        yield move


def test_the_tolerance_is_the_same():
    assert pg._core.LIMIT_TOLERANCE == LIMIT_TOLERANCE


@pytest.mark.parametrize("estimate_velocities", [False, True])
def test_generated_moves_validate_to_the_same_knots(estimate_velocities):
    for move in moves(seed=3, count=12):
        perm = np.random.default_rng(len(move.times)).permutation(len(NAMES))
        names = [NAMES[i] for i in perm]
        positions = move.positions[:, perm]
        velocities = [[] for _ in move.times] if estimate_velocities else move.velocities[:, perm]
        py, cc = both(names, move.times, positions, velocities)
        assert not isinstance(py, str), py
        np.testing.assert_allclose(cc.times, py.times, rtol=0, atol=0)
        np.testing.assert_allclose(cc.positions, py.positions, rtol=0, atol=0)
        np.testing.assert_allclose(cc.velocities, py.velocities, rtol=1e-12, atol=1e-12)


def test_bad_commands_are_rejected_for_the_same_reason():
    t = [0.0, 0.5, 1.0]
    q = [LIMITS.home.tolist()] * 3
    out = LIMITS.home.copy()
    out[3] = 0.5
    fast = [[0.0] * 7, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0], [0.0] * 7]
    nan = [list(q[0]), [float("nan")] + q[0][1:], list(q[0])]
    cases = {
        "malformed": [(NAMES[:6], t, [r[:6] for r in q], []), (NAMES[:6] + ["elbow"], t, q, []),
                      (NAMES[:6] + [NAMES[0]], t, q, []), (NAMES, [], [], []),
                      (NAMES, t, [q[0], q[1][:6], q[2]], []), (NAMES, t, q, [[0.0] * 7])],
        "non_finite": [(NAMES, t, nan, []), (NAMES, [0.0, float("inf"), 1.0], q, [])],
        "timing": [(NAMES, [0.0, 0.5, 0.5], q, []), (NAMES, [-0.1, 0.5, 1.0], q, []),
                   (NAMES, [0.0, 1.0, 0.5], q, [])],
        "bounds": [(NAMES, t, [q[0], out.tolist(), q[2]], []), (NAMES, t, q, fast)],
    }
    for reason, commands in cases.items():
        for names, times, positions, velocities in commands:
            py, cc = both(names, times, positions, [v for v in velocities] or [[] for _ in times])
            assert py == cc == reason, (names, times, positions, velocities)


def test_the_executor_gives_the_same_reference():
    """Trajectories commanded now, with a later start (pending) and replacing one another while
    running, one with its first knot after t = 0; a rejection holds the current reference."""
    py = TrajectoryExecutor(LIMITS.home)
    cc = pg.TrajectoryExecutor(LIMITS.home.tolist())
    rng = np.random.default_rng(7)
    now = 0.0
    for k, move in enumerate(moves(seed=11, count=8)):
        if k == 2:       # a first knot after t = 0: reached from the reference at the start
            move = type(move)(move.times + 0.3, move.positions, move.velocities)
        start = None if k % 3 == 0 else now + float(rng.uniform(0.0, 0.5))
        planned = move.at(start)
        py.command(planned, now)
        cc.command(pg.PlannedTrajectory(planned.times.tolist(), planned.positions.tolist(),
                                        planned.velocities.tolist(), start), now)
        until = now + (0.6 if k % 2 else planned.duration + 0.7)   # odd ones are replaced
        ticks = np.arange(now, until, 0.0007)
        ref_py = [py.reference(t) for t in ticks]          # in time order: activation is stateful
        ref_cc = [cc.reference(float(t)) for t in ticks]
        np.testing.assert_allclose([r[0] for r in ref_cc], [r[0] for r in ref_py], rtol=0, atol=1e-12)
        np.testing.assert_allclose([r[1] for r in ref_cc], [r[1] for r in ref_py], rtol=0, atol=1e-12)
        now = until
        if k == 5:
            py.stop(now)
            cc.stop(now)
            np.testing.assert_allclose(cc.reference(now + 1.0)[0], py.reference(now + 1.0)[0], atol=0)


def test_the_effort_step_is_the_simulators():
    """PID with its clamped integral, the effort saturation and the sigmoid friction."""
    gains = RobotConfig.from_yaml(SIM_CONFIG_FILE).controller
    friction = FrictionParams(np.full(7, 0.5), np.full(7, 40.0), np.linspace(-0.05, 0.05, 7))
    py = PIDController(gains)
    cc = pg.PidController(gains.p.tolist(), gains.i.tolist(), gains.d.tolist(), gains.i_clamp.tolist())
    cc_friction = pg.SigmoidFriction(friction.phi1.tolist(), friction.phi2.tolist(), friction.phi3.tolist())
    rng = np.random.default_rng(5)
    saturated = False
    for step in range(2000):
        q, q_ref = rng.uniform(-2, 2, 7), rng.uniform(-2, 2, 7) * (step % 3 == 0)
        qd, qd_ref = rng.uniform(-2, 2, 7), rng.uniform(-2, 2, 7)
        tau_m = np.clip(py.compute(q, qd, q_ref, qd_ref, np.zeros(7), 1e-3), -LIMITS.effort, LIMITS.effort)
        motor, link = pg.effort_step(cc, cc_friction, LIMITS.effort.tolist(), q.tolist(), qd.tolist(),
                                     q_ref.tolist(), qd_ref.tolist(), 1e-3)
        np.testing.assert_allclose(motor, tau_m, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(link, tau_m - sigmoid_friction(friction, qd), rtol=1e-12, atol=1e-12)
        saturated = saturated or bool(np.any(np.abs(tau_m) == LIMITS.effort))
    assert saturated                                   # the saturation was exercised
