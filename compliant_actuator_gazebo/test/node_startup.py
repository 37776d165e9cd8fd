"""For the rostests: start one of the package's nodes with bad parameters and collect what a
user sees of its start-up (exit status, [FATAL] lines, stderr)."""
import subprocess


def start_with(node, name, args, timeout=60):
    """``rosrun compliant_actuator_gazebo NODE __name:=NAME ARGS``; (exit status, [FATAL] lines,
    stderr)."""
    done = subprocess.run(["rosrun", "compliant_actuator_gazebo", node, f"__name:={name}", *args],
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, [line for line in done.stderr.splitlines() if "[FATAL]" in line], done.stderr
