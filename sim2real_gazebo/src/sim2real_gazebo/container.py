"""gzserver in the Gazebo image (docker/gazebo/), run from the host: the engine command, start,
readiness and a stop within seconds. The container shares the host's network and process
namespaces (``--network host --pid host``); ROS, Gazebo and ignition transport are kept on
127.0.0.1, each server on a Gazebo master port of its own."""
from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from sim2real_gazebo.errors import GazeboError
from sim2real_gazebo.world import WorldConfig

IMAGE = "localhost/sim2real-gazebo"
SYSTEM_PLUGIN = "libsim2real_gazebo_ros_api.so"
STOP_SECONDS = 5.0
"""SIGINT first (gzserver shuts down cleanly); after this long the container is killed."""


def engine() -> str:
    """podman, or docker with a running engine; GazeboError saying what to install otherwise."""
    if shutil.which("podman"):
        return "podman"
    if shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        return "docker"
    raise GazeboError("no container engine: install podman (apt-get install podman runc uidmap "
                      "slirp4netns) or start docker, then build the image with `make gazebo`")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class ContainerConfig:
    """One gzserver: the ``world``, the ROS master it joins, the parameter whose model text the
    ROS API plugin spawns (``spawn``, "" for none), started ``paused`` or not; ``mounts`` are
    (host path, container path) pairs mounted read-only (e.g. a user's actuator library)."""

    world: WorldConfig = field(default_factory=WorldConfig)
    master_uri: str = ""
    spawn: str = "robot_description"
    paused: bool = False
    image: str = IMAGE
    name: str = ""
    gazebo_port: int = 0
    mounts: tuple[tuple[str, str], ...] = ()
    verbose: bool = True


def gzserver_command(config: ContainerConfig, engine_name: str, world_path: str,
                     name: str, gazebo_port: int) -> list[str]:
    """The engine command that runs gzserver for ``config`` (the world file at ``world_path``)."""
    master = config.master_uri or os.environ.get("ROS_MASTER_URI", "http://127.0.0.1:11311")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = 20000 if hard == resource.RLIM_INFINITY else min(hard, 1 << 20)
    cmd = [engine_name, "run", "--rm", "--name", name, "--network", "host", "--pid", "host",
           "--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", "nproc=32768:32768"]
    if engine_name == "podman" and shutil.which("runc"):
        cmd += ["--runtime", "runc"]      # crun cannot handle this VM's hybrid cgroups
    env = {"ROS_MASTER_URI": master, "ROS_IP": "127.0.0.1", "SIM2REAL_SPAWN": config.spawn,
           "GAZEBO_IP": "127.0.0.1", "IGN_IP": "127.0.0.1",
           "GAZEBO_MASTER_URI": f"http://127.0.0.1:{gazebo_port}",
           "SIM2REAL_OWNER_PID": str(os.getpid())}   # gzserver ends with this process
    for key, value in env.items():
        cmd += ["-e", f"{key}={value}"]
    cmd += ["-v", f"{world_path}:/sim2real/world.sdf:ro"]
    for host, inside in config.mounts:
        cmd += ["-v", f"{host}:{inside}:ro"]
    cmd += [config.image, "gzserver", *(["--verbose"] if config.verbose else []),
            *(["-u"] if config.paused else []), "-s", SYSTEM_PLUGIN, "/sim2real/world.sdf",
            "__name:=gazebo"]
    return cmd


class GzserverContainer:
    """A running gzserver container (a context manager): :meth:`start`, :meth:`stop`; its output
    goes to ``log`` (a path) or is inherited."""

    def __init__(self, config: ContainerConfig, log: Optional[str] = None) -> None:
        self.config = config
        self.engine = engine()
        self.name = config.name or f"sim2real-gzserver-{os.getpid()}-{int(time.time() * 1e3) % 10**7}"
        self.gazebo_port = config.gazebo_port or free_port()
        self._dir = tempfile.mkdtemp(prefix="sim2real-gazebo-")
        self.world_path = os.path.join(self._dir, "world.sdf")
        with open(self.world_path, "w") as f:
            f.write(config.world.sdf())
        os.chmod(self._dir, 0o755)
        os.chmod(self.world_path, 0o644)
        self.log = log
        self.process: Optional[subprocess.Popen] = None

    @property
    def command(self) -> list[str]:
        return gzserver_command(self.config, self.engine, self.world_path, self.name, self.gazebo_port)

    def start(self) -> "GzserverContainer":
        exists = subprocess.run([self.engine, "image", "inspect", self.config.image],
                                capture_output=True).returncode == 0
        if not exists:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise GazeboError(f"no image {self.config.image}: build it with `make gazebo`")
        out = open(self.log, "ab") if self.log else None
        try:
            self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT if out else None)
        except OSError:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        finally:
            if out:
                out.close()
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = STOP_SECONDS) -> Optional[int]:
        """SIGINT (forwarded to gzserver), then kill after ``timeout`` s; the exit code."""
        if self.process is None:
            shutil.rmtree(self._dir, ignore_errors=True)
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                subprocess.run([self.engine, "kill", self.name], capture_output=True)
                try:
                    self.process.wait(5.0)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        subprocess.run([self.engine, "rm", "-f", self.name], capture_output=True)
        shutil.rmtree(self._dir, ignore_errors=True)
        return self.process.returncode

    def __enter__(self) -> "GzserverContainer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def pids_of(container: str, engine_name: str) -> Sequence[int]:
    """The host pids of a running container's processes: its first process (``State.Pid``; with
    ``--pid host`` a host pid) and all that descend from it."""
    done = subprocess.run([engine_name, "inspect", "--format", "{{.State.Pid}}", container],
                          capture_output=True, text=True)
    first = done.stdout.strip()
    if done.returncode != 0 or not first.isdigit() or first == "0":
        return []
    found, todo = [], [int(first)]
    while todo:
        pid = todo.pop()
        found.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:                 # gone meanwhile
            continue
    return found
