"""Histories (paper 001 eq. 4, time-stamped per eq. 9) from rosbags, and bags from episodes.

Reading (``read_history``). Messages are taken in bag (receive) time order. Each message on the
first action channel is one step: its state s is the latest value of every sensor, its action
the message's values and the latest values of the other action channels, and each sensor's time
stamp is that of its latest message (header stamp or receive time, as the spec says). Steps
start once every sensor and action channel has been heard from. Consecutive steps form the
transitions (s_t, a_t, r_t, s_{t+1}); r_t is the latest reward at step t + 1 (the reward that
followed a_t; 0 before the first reward message). Each bag is one episode, split further where
consecutive steps are more than ``episode_gap`` seconds apart (if given).

Writing (``write_episode_bag``) is the inverse, for harnesses that produce episodes without
ROS: at step t the sensors whose stamp changed are written (a sensor that held its value, like
a slow GPS, is not re-sent), then the reward of the previous transition, then the action
(the final state gets a repeat of the last action so that it is a step too; the reader drops
it as it has no successor). read_history(write_episode_bag(...)) returns the episodes.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union

import numpy as np

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.history import Episode, History
from kernel_manager_ros.state_spec import Channel, StateSpec

PathLike = Union[str, os.PathLike]
_ORDER_OFFSET = 1e-6      # s between a step's sensors, reward and action in written bags


def _open_bag(path: str, mode: str = "r") -> Any:
    import rosbag   # Debian's ROS 1 Python API; imported here so the library loads without it
    if mode == "r" and not os.path.isfile(path):
        raise KernelError(f"bag not found: {path}")
    try:
        return rosbag.Bag(path, mode)
    except (rosbag.ROSBagException, OSError, ValueError) as exc:
        raise KernelError(f"cannot open bag {path}: {exc}") from exc


def _check_topics(bag: Any, path: str, spec: StateSpec) -> None:
    topics = bag.get_type_and_topic_info().topics
    for channel in spec.sensors + spec.actions + (spec.reward,):
        if channel.topic not in topics:
            raise KernelError(f"bag {path} has no topic {channel.topic} (channel "
                              f"'{channel.name}'); it has: {', '.join(sorted(topics)) or 'none'}")
        found = topics[channel.topic].msg_type
        if found != channel.msg_type:
            raise KernelError(f"bag {path}: topic {channel.topic} holds {found}, the spec says "
                              f"{channel.msg_type} (channel '{channel.name}')")


def _stamp(channel: Channel, msg: Any, receive: float, where: str) -> float:
    if channel.stamp == "receive":
        return receive
    header = getattr(msg, "header", None)
    if header is None:
        raise KernelError(f"{where}: {channel.msg_type} has no header; use stamp: receive for "
                          f"channel '{channel.name}'")
    return header.stamp.to_sec()


def _read_bag(path: str, spec: StateSpec, episode_gap: Optional[float]) -> list[Episode]:
    bag = _open_bag(path)
    try:
        _check_topics(bag, path, spec)
        sensor_of = {c.topic: i for i, c in enumerate(spec.sensors)}
        action_of = {c.topic: i for i, c in enumerate(spec.actions)}
        sensors: list[Optional[np.ndarray]] = [None] * len(spec.sensors)
        stamps = np.full(len(spec.sensors), np.nan)
        actions: list[Optional[np.ndarray]] = [None] * len(spec.actions)
        reward = 0.0
        step_topic = spec.actions[0].topic
        times, states, acts, step_stamps, rewards = [], [], [], [], []
        topics = sorted({c.topic for c in spec.sensors + spec.actions + (spec.reward,)})
        for topic, msg, t in bag.read_messages(topics=topics):
            where = f"bag {path}, topic {topic}"
            receive = t.to_sec()
            try:
                if topic in sensor_of:
                    i = sensor_of[topic]
                    sensors[i] = spec.sensors[i].values(msg)
                    stamps[i] = _stamp(spec.sensors[i], msg, receive, where)
                if topic == spec.reward.topic:
                    reward = float(spec.reward.values(msg)[0])
                if topic in action_of:
                    actions[action_of[topic]] = spec.actions[action_of[topic]].values(msg)
            except KernelError as exc:
                raise KernelError(f"{where}: {exc}") from exc
            if topic != step_topic or any(v is None for v in sensors) \
                    or any(v is None for v in actions):
                continue
            times.append(receive)
            states.append(np.concatenate(sensors))
            acts.append(np.concatenate(actions))
            step_stamps.append(stamps.copy())
            rewards.append(reward)
    finally:
        bag.close()
    if not times:
        return []
    t = np.asarray(times)
    cuts = [0] + ([int(i) + 1 for i in np.flatnonzero(np.diff(t) > episode_gap)]
                  if episode_gap is not None else []) + [t.size]
    episodes = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        if hi - lo < 2:
            continue
        episodes.append(Episode(states=np.asarray(states[lo:hi]),
                                actions=np.asarray(acts[lo:hi - 1]),
                                rewards=np.asarray(rewards[lo + 1:hi], dtype=float),
                                stamps=np.asarray(step_stamps[lo:hi])))
    return episodes


def read_history(bag_paths: Union[PathLike, Sequence[PathLike]], spec: StateSpec,
                 episode_gap: Optional[float] = None, what: str = "history") -> History:
    """H of eq. 4 from one or more bags (see the module docstring)."""
    if isinstance(bag_paths, (str, os.PathLike)):
        bag_paths = [bag_paths]
    if not bag_paths:
        raise KernelError(f"{what}: no bag given")
    if episode_gap is not None and not episode_gap > 0.0:
        raise KernelError(f"episode_gap must be > 0 s, got {episode_gap}")
    episodes: list[Episode] = []
    for path in bag_paths:
        episodes.extend(_read_bag(os.fspath(path), spec, episode_gap))
    if not episodes:
        raise KernelError(f"{what}: no complete step in {', '.join(map(os.fspath, bag_paths))} "
                          f"(every sensor and action channel must be heard, and two action "
                          f"messages on {spec.actions[0].topic} make one transition)")
    return History.from_episodes(episodes, what).validate(what, len(spec.state_names),
                                                          len(spec.action_names))


def _message(channel: Channel, values: np.ndarray, stamp: Optional[float]) -> Any:
    import genpy
    from roslib.message import get_message_class
    cls = get_message_class(channel.msg_type)
    if cls is None:
        raise KernelError(f"unknown message type {channel.msg_type} (channel '{channel.name}')")
    msg = cls()
    for path, value in zip(channel.paths, values):
        path.set(msg, float(value))
    if stamp is not None and hasattr(msg, "header"):
        msg.header.stamp = genpy.Time.from_sec(float(stamp))
    return msg


def write_episode_bag(path: PathLike, spec: StateSpec, episodes: Sequence[Episode],
                      times: Sequence[np.ndarray]) -> str:
    """Write episodes as the spec's messages; ``times[k]`` (T_k + 1,) are episode k's step
    times [s] (strictly increasing across the bag). Returns the path."""
    import genpy
    if len(episodes) != len(times):
        raise KernelError(f"{len(episodes)} episodes but {len(times)} time arrays")
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    slices, a_slices = spec.sensor_slices, spec.action_slices
    bag = _open_bag(path, "w")
    try:
        for episode, step_times in zip(episodes, times):
            step_times = np.asarray(step_times, dtype=float)
            n = episode.states.shape[0]
            if step_times.shape != (n,) or episode.actions.shape[0] != n - 1 or n < 2:
                raise KernelError(f"an episode of {n} states needs {n} step times and "
                                  f"{n - 1} actions")
            for t in range(n):
                now = step_times[t]
                for i, channel in enumerate(spec.sensors):
                    if t > 0 and episode.stamps[t, i] == episode.stamps[t - 1, i]:
                        continue
                    stamp = float(episode.stamps[t, i])
                    msg = _message(channel, episode.states[t, slices[channel.name]], stamp)
                    at = stamp if channel.stamp == "receive" else now
                    bag.write(channel.topic, msg, genpy.Time.from_sec(at))
                if t > 0:
                    bag.write(spec.reward.topic,
                              _message(spec.reward, episode.rewards[t - 1:t], now),
                              genpy.Time.from_sec(now + _ORDER_OFFSET))
                action = episode.actions[min(t, n - 2)]
                for j, channel in reversed(list(enumerate(spec.actions))):
                    # the step channel (actions[0]) last, so the others are already current
                    bag.write(channel.topic,
                              _message(channel, action[a_slices[channel.name]], now),
                              genpy.Time.from_sec(now + (2 + (j == 0)) * _ORDER_OFFSET))
    finally:
        bag.close()
    return path
