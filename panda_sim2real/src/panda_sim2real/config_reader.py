"""Checked reads from a configuration's YAML tree: each error names the file and the entry."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from panda_sim2real.errors import ConfigError

DOF = 7


class ConfigReader:
    """Reads numbers, vectors and sub-mappings from ``raw`` (the file ``source``), raising
    :class:`ConfigError` with the dotted name of the offending entry."""

    def __init__(self, raw: Any, source: str, what: str = "robot config") -> None:
        if not isinstance(raw, dict):
            raise ConfigError(f"{what} {source}: expected a mapping at the top level")
        self.raw = raw
        self.source = source
        self.what = what

    def fail(self, key: str, why: str) -> ConfigError:
        return ConfigError(f"{self.what} {self.source}: '{key}' {why}")

    def get(self, tree: dict, key: str, prefix: str = "") -> Any:
        if key not in tree:
            raise self.fail(prefix + key, "is missing")
        return tree[key]

    def vector(self, tree: dict, key: str, prefix: str = "", positive: bool = False,
               size: int = DOF) -> np.ndarray:
        value = self.get(tree, key, prefix)
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise self.fail(prefix + key, f"must be a list of {size} numbers") from None
        if arr.shape != (size,):
            raise self.fail(prefix + key, f"must be a list of {size} numbers, got {value!r}")
        if not np.all(np.isfinite(arr)):
            raise self.fail(prefix + key, "must be finite (no NaN/Inf)")
        if positive and np.any(arr < 0):
            raise self.fail(prefix + key, "must not be negative")
        return arr

    def number(self, tree: dict, key: str, prefix: str = "", minimum: float = 0.0,
               above: bool = False) -> float:
        """A finite number >= ``minimum`` (> with ``above``)."""
        value = self.get(tree, key, prefix)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise self.fail(prefix + key, f"must be a number, got {value!r}")
        if value < minimum or (above and value <= minimum):
            relation = "above" if above else "at least"
            raise self.fail(prefix + key, f"must be {relation} {minimum}, got {value}")
        return float(value)

    def section(self, key: str, tree: Optional[dict] = None, prefix: str = "") -> Optional[dict]:
        """The mapping at ``key`` of ``tree`` (default: the top level), None if absent or null."""
        value = (self.raw if tree is None else tree).get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(prefix + key, "must be a mapping or null")
        return value
