"""What the host offers a 1 kHz control loop: a real-time (PREEMPT_RT) kernel or not, and memory
locked against page faults."""
from __future__ import annotations

import ctypes
import ctypes.util
import os

from panda_fci.errors import RobotError

MCL_CURRENT, MCL_FUTURE = 1, 2     # <sys/mman.h>


def realtime_kernel(sys_flag: str = "/sys/kernel/realtime", version: str = "") -> bool:
    """True on a PREEMPT_RT kernel: ``/sys/kernel/realtime`` reads 1, or the kernel version
    string (``uname -v``) names PREEMPT_RT (libfranka's own test)."""
    try:
        with open(sys_flag) as f:
            if f.read().strip() == "1":
                return True
    except OSError:
        pass
    return "PREEMPT_RT" in (version or os.uname().version)


def lock_memory() -> None:
    """mlockall(MCL_CURRENT | MCL_FUTURE): no page fault in the control loop (RobotError if refused)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE) != 0:
        raise RobotError(f"~lock_memory: mlockall refused: {os.strerror(ctypes.get_errno())} "
                         f"(needs CAP_IPC_LOCK and memlock unlimited; see docker/README.md)")


def set_fifo_priority(priority: int, what: str = "SCHED_FIFO") -> None:
    """Run this process (and the threads it starts afterwards) at SCHED_FIFO ``priority``
    (1-99); RobotError (one line naming ``what``) if out of range or not permitted."""
    if not 1 <= priority <= 99:
        raise RobotError(f"{what} {priority}: give 1..99")
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError as exc:
        raise RobotError(f"{what}: SCHED_FIFO {priority} refused: {exc.strerror} (needs root or "
                         f"CAP_SYS_NICE; see docker/README.md)") from None
