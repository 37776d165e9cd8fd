"""command_hold: when the watchdog starts and ends a hold, the hold law, and (in
trifinger_simulation) that the hold keeps a lifted cube where the last torque alone throws it."""
import numpy as np
import pytest

from trifinger_controllers.command_hold import HOLD, RESUME, CommandWatchdog, Hold, HoldLog
from trifinger_controllers.types import TORQUE_LIMIT, RobotState

KP = np.tile([15.0, 15.0, 9.0], 3)
KD = np.tile([0.5, 1.0, 0.5], 3)


def robot(step, position=None, velocity=None):
    q = np.full(9, 0.1 * step) if position is None else position
    return RobotState(step, step / 1000, q, np.zeros(9) if velocity is None else velocity,
                      np.zeros(9))


def test_a_torque_command_goes_stale_after_the_timeout_and_a_new_one_ends_the_hold():
    dog = CommandWatchdog(timeout_steps=100)
    tau = np.array([0.1, -0.2, 0.3, 0.5, -0.5, 0.0, 0.0, 0.0, 0.0])
    for step in range(10, 111):                 # arrived at step 10: fresh up to step 110
        assert dog.update(robot(step), 10, tau) is None
        assert dog.hold is None
    assert dog.update(robot(111), 10, tau) == HOLD
    hold = dog.hold
    assert hold.step == 111 and hold.command_step == 10
    np.testing.assert_array_equal(hold.position, robot(111).position)
    np.testing.assert_array_equal(hold.feedforward, np.clip(tau, -TORQUE_LIMIT, TORQUE_LIMIT))
    assert dog.update(robot(500), 10, tau) is None and dog.hold is hold    # one hold, one event
    assert dog.update(robot(501), 501, tau) == RESUME and dog.hold is None
    assert dog.last is hold
    assert dog.update(robot(700), 501, tau) == HOLD and dog.holds == 2


def test_a_position_command_never_goes_stale_and_ends_a_hold():
    dog = CommandWatchdog(timeout_steps=5)
    assert dog.update(robot(100), 0, None) is None
    assert dog.update(robot(101), 0, np.zeros(9)) == HOLD
    assert dog.update(robot(102), 0, None) == RESUME


def test_hold_law_is_the_joint_pd_around_the_hold_position_plus_the_feedforward():
    hold = Hold(np.full(9, 0.5), np.full(9, 0.1), step=3, command_step=1)
    q, v = np.full(9, 0.4), np.full(9, 2.0)
    np.testing.assert_allclose(hold.torque(KP, KD, q, v), 0.1 + KP * 0.1 - KD * 2.0, atol=1e-12)
    np.testing.assert_allclose(hold.torque(KP, KD, hold.position, np.zeros(9)), 0.1)


def test_hold_log_tells_the_state_at_most_once_a_second_and_never_stays_wrong():
    now = [0.0]
    log = HoldLog(period=1.0, clock=lambda: now[0])
    assert log.due(False, 0) is None                 # not holding, as said: nothing
    assert log.due(True, 1) == 1                     # a hold: WARN
    now[0] = 0.3
    assert log.due(False, 1) is None                 # back within the second: not yet
    now[0] = 0.5
    assert log.due(True, 2) is None                  # holding again: the last line is right
    now[0] = 0.9
    assert log.due(False, 3) is None
    now[0] = 1.2
    assert log.due(False, 3) == 2                    # then INFO, with the holds in between
    assert log.due(False, 3) is None
    now[0] = 2.5
    assert log.due(True, 4) == 1


def test_timeout_must_be_a_step_at_least():
    with pytest.raises(ValueError, match="timeout_steps"):
        CommandWatchdog(0)


def _lifted_by_cic():
    """A platform on which CIC (level 3, seed 1) has lifted the cube, and CIC's last torque."""
    from trifinger_controllers import evaluation
    from trifinger_controllers.controllers import make_controller
    from trifinger_controllers.kinematics import FingerKinematics
    from trifinger_controllers.platform import SimulatedPlatform
    goal, initial, platform_seed = evaluation.episode_specs(3, 1, 1)[0]
    platform = SimulatedPlatform(seed=platform_seed)
    controller = make_controller("cic", None, None, FingerKinematics(), level=3)
    obs = platform.reset(initial, goal)
    controller.reset(obs)
    period = evaluation.control_period(controller)
    for step in range(4000):
        if step % period == 0:
            torque = controller.compute(obs)
        obs = platform.step(torque)
    assert platform.true_cube_pose().position[2] > 0.07, "CIC did not lift the cube"
    return platform, obs, torque


@pytest.mark.parametrize("law", ["last torque", "hold"])
def test_the_hold_keeps_a_lifted_cube_that_the_last_torque_alone_throws(law):
    from trifinger_controllers.sim_node import DEFAULT_POSITION_KD, DEFAULT_POSITION_KP
    kp, kd = np.tile(DEFAULT_POSITION_KP, 3), np.tile(DEFAULT_POSITION_KD, 3)
    platform, obs, last = _lifted_by_cic()
    dog = CommandWatchdog(timeout_steps=100)
    cube = platform.true_cube_pose().position
    q0 = obs.robot.position
    arrived = obs.robot.step
    for _ in range(1500):
        dog.update(obs.robot, arrived, last)
        hold = dog.hold
        torque = (hold.torque(kp, kd, obs.robot.position, obs.robot.velocity)
                  if law == "hold" and hold is not None else last)
        obs = platform.step(torque)
    final = platform.true_cube_pose().position
    moved, drift = np.linalg.norm(final - cube), np.abs(obs.robot.position - q0).max()
    platform.close()
    if law == "hold":              # still lifted, within a cm of where it was; fingers held
        assert dog.holds == 1
        assert final[2] > 0.07 and moved < 0.01 and drift < 0.05, (final, moved, drift)
    else:                          # dropped onto the table (resting height 0.0325 m)
        assert final[2] < 0.04, (final, moved, drift)
