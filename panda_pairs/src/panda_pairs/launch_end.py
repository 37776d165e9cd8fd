"""Ending the roslaunch that started this node, as Ctrl-C does. roslaunch has no call by which a
node ends the launch, and it reports any exit of a ``required`` node as "REQUIRED process has
died" in red; a node whose normal end is the end of the launch (the pair runner) interrupts its
parent roslaunch instead, which stops every node with SIGINT (``rosbag record`` closes its bag)."""
from __future__ import annotations

import os
import signal
from typing import Optional


def _command_line(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [part.decode(errors="replace") for part in f.read().split(b"\0") if part]
    except OSError:
        return []


def parent_roslaunch(pid: Optional[int] = None) -> Optional[int]:
    """The process id of the roslaunch that started process ``pid`` (default: this one), or None
    when its parent is something else (rostest, a shell, rosrun)."""
    parent = os.getppid() if pid is None else _parent_of(pid)
    if parent is None or parent <= 1:
        return None
    words = _command_line(parent)[:2]     # roslaunch itself, or python3 running it
    return parent if any(os.path.basename(w) == "roslaunch" for w in words) else None


def _parent_of(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def end_parent_roslaunch() -> bool:
    """SIGINT to the roslaunch that started this process; False if there is none."""
    parent = parent_roslaunch()
    if parent is None:
        return False
    os.kill(parent, signal.SIGINT)
    return True
