"""NaN, Inf and magnitude checks over every float of a ROS message: the publish-side check of
every node, and the input check of message types without a dedicated one."""
from __future__ import annotations

import math
from typing import Any, Iterator

from sim2real_checks.errors import Rejected


def float_fields(msg: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    """(path, value) of every float of ``msg``: ``effort[2]``, ``pose.position.x``."""
    for name in getattr(msg, "__slots__", ()):
        value = getattr(msg, name)
        path = f"{prefix}{name}"
        if isinstance(value, float):
            yield path, value
        elif isinstance(value, (list, tuple)):
            for k, item in enumerate(value):
                if isinstance(item, float):
                    yield f"{path}[{k}]", item
                elif hasattr(item, "__slots__"):
                    yield from float_fields(item, f"{path}[{k}].")
        elif hasattr(value, "__slots__"):
            yield from float_fields(value, f"{path}.")


def non_finite_fields(msg: Any) -> list[str]:
    """Paths of the NaN/Inf floats of ``msg``."""
    return [path for path, value in float_fields(msg) if not math.isfinite(value)]


def require_finite(msg: Any, bound: float = math.inf) -> Any:
    """``msg`` itself if every float is finite (and within ``±bound``); else :class:`Rejected`
    (``non_finite`` or ``bounds``) naming the first fields at fault."""
    bad = non_finite_fields(msg)
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise Rejected("non_finite", f"NaN/Inf in {', '.join(bad[:3])}{more}")
    big = [path for path, value in float_fields(msg) if abs(value) > bound]
    if big:
        raise Rejected("bounds", f"{big[0]} beyond ±{bound:g}")
    return msg
