"""Output files of the tools and libraries: numpy values as plain data (for JSON and YAML) and
JSON figures written atomically into a folder created on demand (CONTRIBUTING.md, "Tools").
Imports without ROS."""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Optional


def plain(value: Any) -> Any:
    """``value`` as plain Python data: numpy arrays and scalars to lists and numbers, tuples to
    lists, mapping keys to strings; anything else unchanged."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "dtype"):   # numpy arrays and scalars
        return plain(value.tolist())
    return value


def write_json(path: Optional[str], figures: Any, sort_keys: bool = True, allow_nan: bool = True) -> None:
    """Write ``figures`` (made :func:`plain`) to ``path`` if given, creating its folder; the file
    is replaced atomically. ``allow_nan=False``: ValueError for a NaN or infinity (strict JSON),
    and the old file is kept."""
    if not path:
        return
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(plain(figures), f, indent=2, sort_keys=sort_keys, allow_nan=allow_nan)
            f.write("\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
