"""Plumbing of the command-line tools: one-line errors and JSON figures."""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, NoReturn, Optional, Sequence

from diffnea_ros.errors import DiffneaError


def run(main: Callable[[Optional[Sequence[str]]], int]) -> NoReturn:
    """Call ``main(argv)``; a DiffneaError or OSError becomes ``error: ...`` and exit code 2."""
    try:
        code = main(None)
    except (DiffneaError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code)


def write_json(path: Optional[str], figures: dict[str, Any]) -> None:
    """Write ``figures`` to ``path`` (if given), creating the folder."""
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(figures, handle, indent=2, sort_keys=True)
        handle.write("\n")
