"""The real-time preflight: each host check against a prepared sysfs or a refusing libc, and the
robot checks against fci_standin (a protocol match, another protocol version, an unreachable
address), with the tool's exit status and override."""
import json
import os
import subprocess
import sys


from panda_fci import preflight
from panda_fci.preflight import (FAIL, OK, WARN, format_table, governor_check, kernel_check,
                                      memlock_check, scheduling_check, verdict)
from test_fci import standin_process

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts",
                      "preflight")


def run_tool(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=120, env={k: v for k, v in os.environ.items() if k != "ROBOT_IP"})


def test_kernel_is_real_time_by_the_sys_flag_or_the_version_string(tmp_path):
    flag = tmp_path / "realtime"
    flag.write_text("1\n")
    assert kernel_check(str(flag), "#1 SMP").status == OK
    assert kernel_check(str(tmp_path / "absent"), "#1 SMP PREEMPT_RT Debian").status == OK
    plain = kernel_check(str(tmp_path / "absent"), "#1 SMP PREEMPT_DYNAMIC")
    assert plain.status == WARN and "linux-image-rt-amd64" in plain.fix


def test_governor_per_cpu(tmp_path):
    assert governor_check(str(tmp_path)).status == WARN                 # not exposed
    for cpu, governor in (("cpu0", "performance"), ("cpu1", "performance")):
        (tmp_path / cpu / "cpufreq").mkdir(parents=True)
        (tmp_path / cpu / "cpufreq" / "scaling_governor").write_text(governor + "\n")
    assert governor_check(str(tmp_path)).status == OK
    (tmp_path / "cpu1" / "cpufreq" / "scaling_governor").write_text("powersave\n")
    slow = governor_check(str(tmp_path))
    assert slow.status == WARN and slow.found == "cpu1: powersave"


def test_refused_memory_locking_and_scheduling_fail_with_the_fix(monkeypatch):
    class RefusingLibc:
        def mlockall(self, flags):
            return -1

    locked = memlock_check(RefusingLibc())
    assert locked.status == FAIL and "IPC_LOCK" in locked.fix

    def refuse(*_):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(preflight.os, "sched_setscheduler", refuse)
    scheduling = scheduling_check(80)
    assert scheduling.status == FAIL and "refused: Operation not permitted" in scheduling.found
    assert "SYS_NICE" in scheduling.fix and "rtprio 99" in scheduling.fix
    assert verdict([locked, scheduling]) == FAIL
    table = format_table([locked, scheduling])
    assert "what to change:" in table and table.endswith("verdict: FAIL")


def test_this_host_is_probed_without_being_changed():
    before = os.sched_getscheduler(0)
    checks = [scheduling_check(), memlock_check()]
    assert os.sched_getscheduler(0) == before
    assert all(c.status in (OK, FAIL) for c in checks)


def test_against_the_served_standin_protocol_and_communication(tmp_path):
    with standin_process("127.0.0.236"):
        out = tmp_path / "pre.json"
        done = run_tool("--robot-ip", "127.0.0.236", "--seconds", "2", "--json", str(out))
    rows = {c["name"]: c for c in json.loads(out.read_text())["checks"]}
    assert rows["robot protocol"]["status"] == OK, done.stdout
    assert "libfranka 0.21.2" in rows["robot protocol"]["found"]
    # states arrived; the rate's level (OK, WARN or FAIL) depends on this machine's load
    assert "success rate" in rows["communication"]["found"], rows["communication"]
    assert done.returncode in (0, 3) and "verdict:" in done.stdout


def test_another_protocol_version_and_an_unreachable_robot_fail_with_the_fix(tmp_path):
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(SCRIPT), "fci_standin"),
                             "--host", "127.0.0.237", "--protocol-version", "5"],
                            stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()
        older = run_tool("--robot-ip", "127.0.0.237", "--seconds", "1")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert older.returncode == 3
    assert "another protocol version" in older.stdout and "FRANKY_WHEEL" in older.stdout
    gone = run_tool("--robot-ip", "127.0.0.238", "--seconds", "1", "--connect-timeout", "0")
    assert gone.returncode == 3 and "check ROBOT_IP" in gone.stdout
    degraded = run_tool("--robot-ip", "127.0.0.238", "--seconds", "1", "--connect-timeout", "0",
                        "--allow-degraded")
    assert degraded.returncode == 0 and "overridden by --allow-degraded" in degraded.stdout
