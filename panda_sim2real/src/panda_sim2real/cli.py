"""Shared plumbing of the command-line tools: one-line errors, JSON figures."""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, NoReturn, Optional, Sequence

from panda_sim2real.errors import Sim2RealError


def run(main: Callable[[Optional[Sequence[str]]], int],
        errors: tuple[type[Exception], ...] = (Sim2RealError,)) -> NoReturn:
    """Call ``main(argv)``; one of ``errors`` or an OSError becomes ``error: ...`` and exit code 2."""
    try:
        code = main(None)
    except (*errors, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code)


def write_json(path: Optional[str], figures: dict[str, Any]) -> None:
    """Write ``figures`` to ``path`` (if given), creating the folder."""
    if not path:
        return
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(figures, f, indent=2, sort_keys=True)
        f.write("\n")
