"""Checks of the tool conventions (sim2real_checks.cli, CONTRIBUTING.md "Tools") for the
packages' tests: run a tool as a user does, its ``--help``, and a bad argument. Imports
without ROS; the checks raise AssertionError with the tool's output."""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Optional, Sequence


def run_tool(script: str, *args: object, cwd: Optional[str] = None,
             timeout: float = 120.0) -> subprocess.CompletedProcess:
    """Run the Python tool ``script`` (a path) with ``args`` (one thread for BLAS)."""
    return subprocess.run([sys.executable, script, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=timeout)


def check_help(script: str, prog: str, quiet: bool = True) -> None:
    """``--help`` exits 0, names ``prog`` and the common flags (``--quiet`` only if ``quiet``)
    and hides the ``--no-progress`` alias."""
    done = run_tool(script, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {prog}"), done.stdout[:200]
    assert "--json PATH" in done.stdout
    assert ("--quiet" in done.stdout) == quiet, done.stdout
    assert "--no-progress" not in done.stdout


def check_argument_error(script: str, prog: str, args: Sequence[object], cwd: str,
                         message: str = "") -> subprocess.CompletedProcess:
    """A bad argument: exit code 2, nothing on stdout, one stderr line ``PROG: error: ...``
    (starting with ``message`` after the prefix, if given) and nothing written in ``cwd``."""
    before = sorted(os.listdir(cwd))
    done = run_tool(script, *args, cwd=cwd)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"{prog}: error: {message}"), done.stderr
    assert done.stdout == "", done.stdout
    assert sorted(os.listdir(cwd)) == before, "the tool wrote files"
    return done


def check_conventions(script: str, prog: str, bad_value: Sequence[object], cwd: str, quiet: bool = True) -> None:
    """The conventions in one check: :func:`check_help`, and :func:`check_argument_error` for an
    unknown option and for ``bad_value`` (arguments one of the tool's own checks refuses)."""
    check_help(script, prog, quiet)
    check_argument_error(script, prog, ["--no-such-option"], cwd)
    check_argument_error(script, prog, bad_value, cwd)
