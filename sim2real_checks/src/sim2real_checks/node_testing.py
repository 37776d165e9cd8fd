"""Checks of the node start-up convention (CONTRIBUTING.md, "Nodes") for the packages' rostests:
start a node as a user does (``rosrun``, private parameters as ``_name:=value``) and check what
the user sees when a parameter is bad: exit status 1, one ``[FATAL]`` line naming the node and
the problem, no traceback. The checks raise AssertionError with the node's stderr."""
from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Any, Optional, Sequence


@dataclass(frozen=True)
class StartUp:
    """What a user sees of a node's start-up: its exit status (None: still running when the
    timeout struck; it was killed) and its stderr."""

    status: Optional[int]
    stderr: str

    def lines(self, level: str) -> list[str]:
        """The stderr lines of a rospy log level (``FATAL``, ``WARN``, ...)."""
        return [line for line in self.stderr.splitlines() if f"[{level}]" in line]


def start_node(package: str, node: str, name: str, args: Sequence[str] = (), timeout: float = 60.0,
               env: Optional[dict[str, str]] = None) -> StartUp:
    """``rosrun PACKAGE NODE __name:=NAME ARGS`` until it exits (killed with its process group
    after ``timeout`` seconds)."""
    proc = subprocess.Popen(["rosrun", package, node, f"__name:={name}", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=None if env is None else {**os.environ, **env})
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, stderr = proc.communicate()
        return StartUp(None, stderr)
    return StartUp(proc.returncode, stderr)


def check_fails_at_start(startup: StartUp, expected: str, name: Optional[str] = None) -> str:
    """Exit status 1, exactly one [FATAL] line, containing ``expected`` (and ``/NAME: ``, the
    node's name, if given), and no traceback; returns that line."""
    fatal = startup.lines("FATAL")
    assert startup.status == 1, f"exit status {startup.status}:\n{startup.stderr}"
    assert len(fatal) == 1, f"{len(fatal)} [FATAL] lines:\n{startup.stderr}"
    assert expected in fatal[0], f"{expected!r} not in {fatal[0]!r}"
    assert name is None or f"/{name}: " in fatal[0], f"/{name} not named in {fatal[0]!r}"
    assert "Traceback" not in startup.stderr, startup.stderr
    return fatal[0]


class StandInParameters(dict):
    """A node's private parameters for unit tests without a master: ``{"~name": value}``.
    :meth:`install` makes ``rospy.get_param`` read them, ``rospy.resolve_name`` resolve "~x" to
    "/node/x" and ``rospy.logwarn`` append to :attr:`warnings`."""

    def __init__(self) -> None:
        super().__init__()
        self.warnings: list[str] = []

    def install(self, monkeypatch: Any) -> "StandInParameters":
        import rospy

        monkeypatch.setattr(rospy, "get_param", lambda name, default=None: self.get(name, default))
        monkeypatch.setattr(rospy, "resolve_name", lambda name: "/node/" + name.lstrip("~"))
        monkeypatch.setattr(rospy, "logwarn", self.warnings.append)
        return self
