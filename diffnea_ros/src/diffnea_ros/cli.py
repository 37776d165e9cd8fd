"""Plumbing of the command-line tools: panda_sim2real's one-line errors (for DiffneaError) and
JSON figures."""
from __future__ import annotations

from typing import Callable, NoReturn, Optional, Sequence

from panda_sim2real.cli import run as run_tool
from panda_sim2real.cli import write_json

from diffnea_ros.errors import DiffneaError

__all__ = ["run", "write_json"]


def run(main: Callable[[Optional[Sequence[str]]], int]) -> NoReturn:
    """Call ``main(argv)``; a DiffneaError or OSError becomes ``error: ...`` and exit code 2."""
    run_tool(main, errors=(DiffneaError,))
