"""What the host offers a 1 kHz control loop: a real-time (PREEMPT_RT) kernel or not."""
from __future__ import annotations

import os


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
