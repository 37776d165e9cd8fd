"""Running the packages' command-line tools as pipeline steps.

Each step is the command a user runs by hand (``rosrun <package> <tool> ...``): the pipeline
shows its progress bar, records the command line, and turns a failure into a PipelineError whose
cause is the tool's own one-line ``PROG: error: ...`` message.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections import deque
from typing import Sequence

from sim2real_pipeline.errors import PipelineError


def command_line(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def run_tool(stage: str, argv: Sequence[str], quiet: bool = False) -> None:
    """Run ``argv``; its standard output goes to ours (unless ``quiet``), its standard error
    (progress bars, error lines) is relayed as it comes. PipelineError(stage, the tool's last
    error line) if it fails."""
    tail: deque[str] = deque(maxlen=40)
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL if quiet else None,
                                stderr=subprocess.PIPE)
    except OSError as exc:
        raise PipelineError(stage, f"cannot run {argv[0]}: {exc}") from exc
    assert proc.stderr is not None
    buffer = b""
    while True:
        chunk = proc.stderr.read1(4096)
        if not chunk:
            break
        if not quiet:
            sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.flush()
        buffer += chunk
        *lines, buffer = buffer.replace(b"\r", b"\n").split(b"\n")
        tail.extend(line.decode(errors="replace") for line in lines if line.strip())
    if buffer.strip():
        tail.append(buffer.decode(errors="replace"))
    code = proc.wait()
    if code != 0:
        raise PipelineError(stage, f"{command_line(argv[:3])} ... exited with {code}: "
                                   f"{_cause(tail)}")


ERROR_LINE = re.compile(r"^(?:[\w.-]+: )?error: (.*)$")   # sim2real_checks.cli: "PROG: error: MESSAGE"


def _cause(lines: Sequence[str]) -> str:
    """The message of the tool's ``PROG: error: MESSAGE`` line, else its last line of output."""
    for line in reversed(lines):
        match = ERROR_LINE.match(line.strip())
        if match:
            return match.group(1).strip()
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line.strip()
    return lines[-1].strip() if lines else "no output"
