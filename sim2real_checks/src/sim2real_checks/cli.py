"""The command-line conventions every sim2real tool follows (CONTRIBUTING.md, "Tools").

* :class:`ToolParser`: argparse whose argument errors are one line, ``PROG: error: MESSAGE``,
  exit code 2 (plain argparse prints the usage before it); :func:`add_common` gives a tool the common
  flags ``--json PATH`` (optional: the figures as JSON) and ``--quiet`` (no progress bars or
  lines; ``--no-progress`` is its alias for one release).
* :func:`run`: calls a tool's ``main``; the package's base error or an OSError becomes one line,
  ``PROG: error: MESSAGE``, exit code 2; Ctrl-C exits with 130.
* output files: :func:`sim2real_checks.outputs.write_json`; inside :func:`run` every JSON mapping
  a tool writes records the tool's commit and command (``commit``, ``command``).

Imports without ROS.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, NoReturn, Optional, Sequence


class ToolParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def add_common(parser: argparse.ArgumentParser, json_help: str = "write the figures here",
               progress: bool = True) -> None:
    """Add ``--json PATH`` (optional) and, for a tool with progress output, ``--quiet`` (with
    the deprecated alias ``--no-progress``)."""
    parser.add_argument("--json", metavar="PATH", default=None, help=json_help)
    if progress:
        parser.add_argument("--quiet", action="store_true", help="no progress output")
        parser.add_argument("--no-progress", dest="quiet", action="store_true", help=argparse.SUPPRESS)


def run(main: Callable[[Optional[Sequence[str]]], int], prog: Optional[str] = None,
        errors: tuple[type[Exception], ...] = ()) -> NoReturn:
    """Exit with ``main(None)``'s code; one of ``errors`` (the package's base error) or an
    OSError becomes ``PROG: error: MESSAGE`` on stderr and exit code 2, Ctrl-C exit code 130."""
    from sim2real_checks.outputs import tool_run

    prog = prog or os.path.basename(sys.argv[0])
    try:
        with tool_run(prog):
            code = main(None)
    except (*errors, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code)
