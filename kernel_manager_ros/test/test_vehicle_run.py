"""The in-process runner, its step hook (where the kernel manager plugs in), the recorded bag,
and the vehicle's message conversions (their checks: test_vehicle_checks.py)."""
import math
import os

import numpy as np
import pytest
import rosbag

from kernel_manager_ros.bag_history import read_history
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.vehicle.mission import MissionConfig
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.vehicle.messages import GPS_TOPIC, PITCH_TOPIC, SensorFields
from kernel_manager_ros.vehicle.model import VehicleConfig
from kernel_manager_ros.vehicle.run import SensorOverride, run_missions, write_bag

CONFIG = os.path.join(os.path.dirname(__file__), "..", "config")
MISSION = MissionConfig.from_yaml(os.path.join(CONFIG, "mission.yaml"))
SPEC = StateSpec.from_yaml(os.path.join(CONFIG, "vehicle_topics.yaml"))
DESIGN = VehicleConfig.from_yaml(os.path.join(CONFIG, "vehicle_design.yaml"))


@pytest.fixture(scope="module")
def recorded():
    return run_missions(DESIGN, MISSION, SPEC, 3, seed=4, record_messages=True)


def test_episodes_follow_the_spec_and_sum_to_the_totals(recorded):
    d, m = len(SPEC.state_names), len(SPEC.action_names)
    for log in recorded.missions:
        e = log.episode
        t = e.actions.shape[0]
        assert e.states.shape == (t + 1, d) and e.actions.shape == (t, m)
        assert e.stamps.shape == (t + 1, len(SPEC.sensors)) and e.rewards.shape == (t,)
        assert e.rewards.sum() + log.perf[0] == log.total_reward == 3.0
        np.testing.assert_allclose(np.diff(log.times), MISSION.period, atol=1e-9)
        # GPS position in the state is the true position up to the sensor noise
        np.testing.assert_allclose(e.states[:, :2], log.poses[:, :2], atol=0.03)
        assert np.all(e.stamps <= log.times[:, None] + 1e-9)
    history = recorded.history()
    assert len(history) == sum(len(x.episode.actions) for x in recorded.missions)
    assert set(history.episodes) == {0, 1, 2}


def test_bag_round_trip_gives_back_the_history(recorded, tmp_path):
    path = tmp_path / "design.bag"
    count = write_bag(path, recorded)
    with rosbag.Bag(str(path)) as bag:
        info = bag.get_type_and_topic_info().topics
        assert info[GPS_TOPIC].msg_type == "geometry_msgs/PointStamped"
        assert info["/vehicle/cmd"].msg_type == "kernel_manager_ros/VehicleCommand"
        assert sum(t.message_count for t in info.values()) == count
        duration = sum(log.times[-1] - log.times[0] for log in recorded.missions)
        assert info[GPS_TOPIC].message_count == pytest.approx(20 * duration, rel=0.02)
        for _, msg, t in bag.read_messages(topics=[PITCH_TOPIC]):
            assert abs(msg.header.stamp.to_sec() - t.to_sec()) < 1e-5    # stamped when sensed
    history = read_history(path, SPEC, episode_gap=1.0)
    expected = recorded.history()
    np.testing.assert_array_equal(history.episodes, expected.episodes)
    for name in ("states", "actions", "rewards", "next_states", "stamps", "next_stamps"):
        np.testing.assert_allclose(getattr(history, name), getattr(expected, name),
                                   atol=1e-8, err_msg=name)


def test_write_bag_needs_recorded_messages(tmp_path):
    run = run_missions(DESIGN, MISSION, SPEC, 1)
    with pytest.raises(KernelError, match="record_messages"):
        write_bag(tmp_path / "x.bag", run)


def test_identity_hook_changes_nothing():
    plain = run_missions(DESIGN, MISSION, SPEC, 2, seed=5)
    seen = []

    def hook(ctx):
        seen.append(ctx.t)
        return SensorOverride(ctx.next_state)

    hooked = run_missions(DESIGN, MISSION, SPEC, 2, seed=5, hook=hook)
    np.testing.assert_array_equal(plain.totals, hooked.totals)
    for a, b in zip(plain.missions, hooked.missions):
        np.testing.assert_array_equal(a.episode.states, b.episode.states)
    assert len(seen) == sum(len(m.episode.actions) for m in plain.missions)


def test_a_motor_hook_through_set_state_slows_the_design_vehicle():
    """What a motor kernel does near the ramp: the configuration interface sets a pitch."""
    fields = SensorFields.of(SPEC)

    def hook(ctx):
        x, y = ctx.state[fields.x], ctx.state[fields.y]
        if abs(x) < 2.5 and y > 11.0:                  # where the deployment had its ramp
            state = ctx.next_state.copy()
            state[fields.pitch] = 0.24
            ctx.vehicle.set_state(**fields.set_state_arguments(state))
            return SensorOverride(state)
        return None

    design = run_missions(DESIGN, MISSION, SPEC, 5, seed=6)
    kernels = run_missions(DESIGN, MISSION, SPEC, 5, seed=6, hook=hook)
    assert np.all(design.totals == 3.0)
    assert np.all(kernels.totals < 0)                  # it misses the site 2 deadline now


def test_a_sensor_hook_only_changes_what_the_program_reads():
    fields = SensorFields.of(SPEC)

    def freeze_gps(ctx):
        """A slow-GPS sensor kernel: report the previous GPS values and stamps (eq. 9)."""
        state, stamps = ctx.next_state.copy(), ctx.next_stamps.copy()
        for k, channel in enumerate(SPEC.sensors):
            if channel.topic != PITCH_TOPIC:
                sl = SPEC.sensor_slices[channel.name]
                state[sl], stamps[k] = ctx.state[sl], ctx.stamps[k]
        return SensorOverride(state, stamps)

    run = run_missions(DESIGN, MISSION, SPEC, 1, seed=7, hook=freeze_gps,
                       record_messages=True)
    log = run.missions[0]
    # the program never sees a fix after the first, so it never arrives, and times out
    assert not log.completed and np.all(log.episode.states[:, fields.x] ==
                                        log.episode.states[0, fields.x])
    assert log.poses[-1, 1] > 5.0                       # while the vehicle itself moved


def test_sensor_fields_map_the_state_to_the_configuration_interface():
    f = SensorFields.of(SPEC)
    state = np.zeros(len(SPEC.state_names))
    state[[f.x, f.y, f.vx, f.vy, f.pitch]] = [1.0, 2.0, 0.0, 1.5, 0.1]
    args = f.set_state_arguments(state)
    assert args == pytest.approx({"x": 1.0, "y": 2.0, "speed": 1.5, "yaw": math.pi / 2,
                                  "pitch": 0.1})
    state[[f.vx, f.vy]] = 0.0
    assert "yaw" not in f.set_state_arguments(state)   # no course at standstill
