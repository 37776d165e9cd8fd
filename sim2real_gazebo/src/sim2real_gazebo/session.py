"""Driving gzserver from a host process (the reproductions, the Gazebo tests, the benchmarks):
a ROS master if none runs, gzserver in its container with the model spawned from a parameter,
and lock-step stepping through /gazebo/step_world. The caller subscribes the model's
topics with rospy and hands std_msgs/Float64 inputs and trajectory_msgs/JointTrajectory commands
to :meth:`GazeboSession.step`, which has gzserver publish them in its own process just before the
steps: they apply from the first one (a message published over TCP may reach the plugin a step
late)."""
from __future__ import annotations

import atexit
import os
import subprocess
import time
from typing import Any, Mapping, Optional, Sequence

from sim2real_gazebo.container import ContainerConfig, GzserverContainer, free_port
from sim2real_gazebo.errors import GazeboError
from sim2real_gazebo.world import WorldConfig

_master: Optional[subprocess.Popen] = None
_master_uri = ""
_node_started = False


def _master_online(uri: str) -> bool:
    import rosgraph
    return rosgraph.Master("/sim2real_gazebo", master_uri=uri).is_online()


def ensure_master(private: bool = False) -> str:
    """A ROS master for this process; its URI, also put in ROS_MASTER_URI. The private one this
    process started, if any; else, unless ``private``, the master of ROS_MASTER_URI if it
    answers; else a new private one on a free 127.0.0.1 port (ended with this process). A tool
    asks for a private one so that it never writes parameters into a user's running graph."""
    global _master, _master_uri
    if _master is not None and _master.poll() is None:
        os.environ["ROS_MASTER_URI"] = _master_uri     # a caller may have dropped it meanwhile
        return _master_uri
    uri = os.environ.get("ROS_MASTER_URI", "")
    if uri and not private and _master_online(uri):
        return uri
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    env = dict(os.environ, ROS_MASTER_URI=uri, ROS_IP="127.0.0.1")
    _master = subprocess.Popen(["rosmaster", "--core", "-p", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _master_uri = uri
    atexit.register(_stop_master)
    os.environ["ROS_MASTER_URI"] = uri
    os.environ.setdefault("ROS_IP", "127.0.0.1")
    deadline = time.monotonic() + 20.0
    while not _master_online(uri):
        if _master.poll() is not None or time.monotonic() > deadline:
            raise GazeboError(f"could not start a ROS master on {uri}")
        time.sleep(0.1)
    return uri


def _stop_master() -> None:
    if _master is not None and _master.poll() is None:
        _master.terminate()
        _master.wait(10)


def init_node(name: str = "sim2real_gazebo_session") -> None:
    """rospy's node of this process (once; signals left to the caller)."""
    global _node_started
    if _node_started:
        return
    import rospy
    rospy.init_node(name, anonymous=True, disable_signals=True)
    _node_started = True


class GazeboSession:
    """gzserver with ``model_text`` (URDF or SDF) spawned from parameter ``spawn``, started
    paused; ``params`` are set on the parameter server first (e.g. the compliant plugin's
    /<robot>/publish_rate). Waits until /gazebo/step_world answers and every topic of
    ``ready_topics`` has a publisher. ``private``: on a master of this process's own
    (:func:`ensure_master`). A context manager."""

    def __init__(self, model_text: str, world: WorldConfig, params: Optional[Mapping[str, Any]] = None,
                 ready_topics: Sequence[str] = (), spawn: str = "/robot_description",
                 log: Optional[str] = None, timeout: float = 60.0,
                 mounts: tuple[tuple[str, str], ...] = (), private: bool = False) -> None:
        import rospy

        uri = ensure_master(private)
        init_node()
        rospy.set_param(spawn, model_text)
        for key, value in (params or {}).items():
            rospy.set_param(key, value)
        self.world = world
        self.container = GzserverContainer(ContainerConfig(world=world, master_uri=uri, spawn=spawn,
                                                           paused=True, mounts=mounts), log=log)
        try:
            self.container.start()
            self._wait_ready(ready_topics, timeout)
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, topics: Sequence[str], timeout: float) -> None:
        import rosgraph
        import rospy
        from sim2real_gazebo.srv import StepWorld

        deadline = time.monotonic() + timeout
        master = rosgraph.Master("/sim2real_gazebo")
        missing = list(topics)
        while True:
            if not self.container.running():
                raise GazeboError(f"gzserver exited with status {self.container.process.returncode} "
                                  f"before it was ready (log: {self.container.log or 'stdout'})")
            try:
                state = master.getSystemState()        # one look-up: publishers, services
                services = {s for s, _ in state[2]}
                published = {t for t, _ in state[0]}
            except Exception:   # the master is busy: ask again
                services, published = set(), set()
            missing = [t for t in topics if t not in published]
            if "/gazebo/step_world" in services and not missing:
                break
            if time.monotonic() > deadline:
                raise GazeboError(f"gzserver not ready after {timeout:g} s: "
                                  + (f"no publisher of {', '.join(missing)}" if missing
                                     else "no /gazebo/step_world service")
                                  + f" (log: {self.container.log or 'stdout'})")
            time.sleep(0.1)
        self._step = rospy.ServiceProxy("/gazebo/step_world", StepWorld, persistent=True)

    def step(self, steps: int = 1, inputs: Optional[Mapping[str, float]] = None,
             trajectories: Sequence[tuple[str, Any]] = ()) -> tuple[float, int]:
        """Advance the paused world ``steps`` physics steps: (sim time [s], iterations).
        ``inputs`` ({topic: value}, std_msgs/Float64) and ``trajectories`` ((topic,
        trajectory_msgs/JointTrajectory) pairs, published in this order) are published inside
        gzserver's process just before the steps, so they apply from the first one."""
        import rospy
        topics = list(inputs or {})
        try:
            response = self._step(steps, topics, [float(inputs[t]) for t in topics],
                                  [t for t, _ in trajectories], [m for _, m in trajectories])
        except (rospy.ServiceException, rospy.ROSException, OSError) as exc:
            raise GazeboError(f"/gazebo/step_world failed ({exc}); gzserver "
                              f"{'runs' if self.container.running() else 'exited'}") from None
        return response.sim_time, response.iterations

    def call_empty(self, service: str) -> None:
        """One of the std_srvs/Empty services, e.g. /gazebo/reset_simulation."""
        import rospy
        from std_srvs.srv import Empty
        rospy.ServiceProxy(service, Empty)()

    def close(self) -> Optional[int]:
        """Stops gzserver (SIGINT, then kill) and removes its container; its exit status."""
        step = getattr(self, "_step", None)
        if step is not None:
            step.close()
        return self.container.stop()

    def __enter__(self) -> "GazeboSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
