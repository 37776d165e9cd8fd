"""Is this host fit to run the robot at 1 kHz? The checks a Franka user makes by hand before the
robot stops with ``communication_constraints_violation``, each with a verdict and what to change:

- the kernel: PREEMPT_RT or not (``/sys/kernel/realtime``, ``uname -v``);
- real-time scheduling: the SCHED_FIFO priority a thread actually obtains (RLIMIT_RTPRIO,
  CAP_SYS_NICE);
- memory locking: whether ``mlockall`` succeeds (RLIMIT_MEMLOCK, CAP_IPC_LOCK);
- the CPU frequency governor of every CPU;
- with a robot address: libfranka's protocol against the robot server's (a connection), and a
  communication test, the control command success rate while holding position for a few seconds.

No check changes the host: the scheduling probe runs in a thread that ends, memory is unlocked
again. ``ok`` passes, ``warn`` is reported (a non-RT kernel: the loop runs but may miss ticks),
``fail`` stops a container's entrypoint unless the user sets the documented override.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import resource
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional, Sequence

from panda_fci.errors import RobotError
from panda_fci.realtime_host import MCL_CURRENT, MCL_FUTURE, realtime_kernel

OK, WARN, FAIL = "ok", "warn", "fail"
CONTROL_PRIORITY = 80            # libfranka's control thread runs at the highest; 80 is customary
SUCCESS_OK, SUCCESS_WARN = 0.999, 0.95
SETTLE = 0.25                    # s: a new motion's first 100-tick window holds no command yet


@dataclass(frozen=True)
class Check:
    """One line of the verdict table: what was checked, the status, what was found, the fix."""

    name: str
    status: str
    found: str
    fix: str = ""


def kernel_check(sys_flag: str = "/sys/kernel/realtime", version: str = "") -> Check:
    version = version or os.uname().version
    if realtime_kernel(sys_flag, version):
        return Check("kernel", OK, f"PREEMPT_RT ({version})")
    return Check("kernel", WARN, f"not real-time ({version})",
                 "boot a PREEMPT_RT kernel (Debian: linux-image-rt-amd64) on the robot PC; "
                 "without it libfranka's loop may miss ticks under load")


def scheduling_check(priority: int = CONTROL_PRIORITY) -> Check:
    """The SCHED_FIFO priority a new thread obtains (the thread ends; nothing else changes)."""
    result: list[str] = []

    def probe() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
            result.append("")
        except OSError as exc:
            result.append(exc.strerror or str(exc))

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
    limit = "unlimited" if soft == resource.RLIM_INFINITY else str(soft)
    if not result[0]:
        return Check("real-time scheduling", OK, f"SCHED_FIFO {priority} obtained (rtprio limit {limit})")
    return Check("real-time scheduling", FAIL,
                 f"SCHED_FIFO {priority} refused: {result[0]} (rtprio limit {limit})",
                 "give the process CAP_SYS_NICE and rtprio 99: compose.yaml's cap_add SYS_NICE and "
                 "ulimits rtprio 99; on a bare host, a limits.conf entry '@realtime - rtprio 99' "
                 "for the robot user")


def memlock_check(libc: Optional[ctypes.CDLL] = None) -> Check:
    """Whether mlockall(MCL_CURRENT | MCL_FUTURE) succeeds (undone at once)."""
    libc = libc or ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    limit = "unlimited" if soft == resource.RLIM_INFINITY else f"{soft // 1024} KiB"
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE) == 0:
        libc.munlockall()
        return Check("memory locking", OK, f"mlockall succeeded (memlock limit {limit})")
    return Check("memory locking", FAIL,
                 f"mlockall refused: {os.strerror(ctypes.get_errno())} (memlock limit {limit})",
                 "give the process CAP_IPC_LOCK and memlock unlimited: compose.yaml's cap_add "
                 "IPC_LOCK and ulimits memlock -1; on a bare host, '@realtime - memlock unlimited'")


def governor_check(sysfs: str = "/sys/devices/system/cpu") -> Check:
    paths = sorted(glob.glob(os.path.join(sysfs, "cpu[0-9]*", "cpufreq", "scaling_governor")))
    if not paths:
        return Check("CPU governor", WARN, "not exposed (a VM, or no cpufreq driver)",
                     "on the robot PC set every CPU to 'performance' (cpupower frequency-set -g "
                     "performance) and disable deep C-states in the BIOS")
    governors = {}
    for path in paths:
        with open(path) as f:
            governors[path.split(os.sep)[-3]] = f.read().strip()
    others = {cpu: g for cpu, g in governors.items() if g != "performance"}
    if not others:
        return Check("CPU governor", OK, f"performance on all {len(governors)} CPUs")
    return Check("CPU governor", WARN,
                 ", ".join(f"{cpu}: {g}" for cpu, g in sorted(others.items())),
                 "set every CPU to 'performance': cpupower frequency-set -g performance")


def robot_checks(connect: Callable[[], "object"], seconds: float) -> list[Check]:
    """The protocol check (a connection) and the communication test (hold for ``seconds``,
    control command success rate as the robot reports it). ``connect`` returns a started
    :class:`~panda_fci.fci_bridge.FciBridge`; it raises RobotError with the reason."""
    try:
        bridge = connect()
    except RobotError as exc:
        text = str(exc)
        if "another protocol version" in text:
            fix = ("use a franky build whose libfranka matches the robot's system image "
                   "(docker build --build-arg FRANKY_WHEEL=..., see docker/README.md)")
        elif "realtime" in text.lower():
            fix = "boot a PREEMPT_RT kernel, or set the documented override for a test"
        else:
            fix = ("check ROBOT_IP, the cable (a direct link to the robot's control box), and "
                   "that FCI is activated in Desk")
        return [Check("robot protocol", FAIL, text, fix)]
    checks = [Check("robot protocol", OK, f"{bridge.address} speaks the protocol of this "
                                           f"build ({client_version()})")]
    try:
        rates, settled = [], time.monotonic() + SETTLE
        deadline = settled + seconds
        while time.monotonic() < deadline:
            sample = bridge.next_sample(timeout=0.1)
            if sample is not None and time.monotonic() >= settled:
                rates.append(sample.success_rate)
        error = bridge.error
    finally:
        bridge.close()
    if error or not rates:
        return checks + [Check("communication", FAIL, error or "no robot state in "
                               f"{seconds:g} s", "check the network path to the robot")]
    mean, worst = sum(rates) / len(rates), min(rates)
    found = f"success rate {100 * mean:.2f} % over {seconds:g} s (worst 100 ticks {100 * worst:.0f} %)"
    status = OK if mean >= SUCCESS_OK else WARN if mean >= SUCCESS_WARN else FAIL
    fix = ("" if status == OK else "a PREEMPT_RT kernel, the 'performance' governor, a direct cable "
           "and no other load on the control PC's cores")
    return checks + [Check("communication", status, found, fix)]


def client_version() -> str:
    """franky's version and the libfranka it bundles (from the wheel's library file name)."""
    from importlib import metadata

    version = metadata.version("franky-control")
    libs = glob.glob(os.path.join(os.path.dirname(os.path.dirname(__import__("franky").__file__)),
                                  "franky_control.libs", "libfranka-*.so.*"))
    libfranka = libs[0].rsplit(".so.", 1)[1] if libs else "unknown"
    return f"franky {version}, libfranka {libfranka}"


def run_preflight(connect: Optional[Callable[[], object]] = None, seconds: float = 3.0,
                  priority: int = CONTROL_PRIORITY) -> list[Check]:
    checks = [kernel_check(), scheduling_check(priority), memlock_check(), governor_check()]
    if connect is not None:
        checks += robot_checks(connect, seconds)
    return checks


def verdict(checks: Sequence[Check]) -> str:
    return FAIL if any(c.status == FAIL for c in checks) else WARN if any(
        c.status == WARN for c in checks) else OK


def format_table(checks: Sequence[Check]) -> str:
    """The verdict table: one row per check, then the fixes of what did not pass."""
    width = max(len(c.name) for c in checks)
    lines = [f"{'check':<{width}}  status  found", "-" * (width + 60)]
    lines += [f"{c.name:<{width}}  {c.status.upper():<6}  {c.found}" for c in checks]
    fixes = [c for c in checks if c.status != OK and c.fix]
    if fixes:
        lines += ["", "what to change:"] + [f"- {c.name}: {c.fix}" for c in fixes]
    lines += ["", f"verdict: {verdict(checks).upper()}"]
    return "\n".join(lines)


def as_dicts(checks: Sequence[Check]) -> list[dict]:
    return [asdict(c) for c in checks]
