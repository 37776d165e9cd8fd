"""The nodes' scalar parameters (CONTRIBUTING.md, "Nodes"): a private parameter read once, of its
type, or a KernelError naming it (run_node turns that into one [FATAL] line and exit status 1)."""
from __future__ import annotations

import math
from typing import Any, Optional

import rospy

from kernel_manager_ros.errors import KernelError


def _get(name: str, default: Any) -> Any:
    return rospy.get_param(f"~{name}", default)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_param(name: str, default: float, minimum: float = -math.inf,
                 positive: bool = False) -> float:
    """``~name`` as a finite float >= ``minimum`` (> 0 with ``positive``)."""
    value = _get(name, default)
    if not (_is_number(value) and math.isfinite(value) and value >= minimum
            and (value > 0 or not positive)):
        bound = " > 0" if positive else f" >= {minimum:g}" if minimum > -math.inf else ""
        raise KernelError(f"~{name} must be a finite number{bound}, got {value!r}")
    return float(value)


def optional_number_param(name: str, minimum: float = -math.inf) -> Optional[float]:
    """``~name`` as :func:`number_param`, or None when it is not set (or set to "")."""
    if _get(name, None) in (None, ""):
        return None
    return number_param(name, 0.0, minimum)


def integer_param(name: str, default: Optional[int],
                  minimum: Optional[int] = None) -> Optional[int]:
    """``~name`` as an int (>= ``minimum``); ``default`` (may be None) when it is not set."""
    value = _get(name, default)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not (isinstance(value, int) and not isinstance(value, bool)
            and (minimum is None or value >= minimum)):
        more = "" if minimum is None else f" >= {minimum}"
        raise KernelError(f"~{name} must be an integer{more}, got {value!r}")
    return value


def flag_param(name: str, default: bool) -> bool:
    """``~name`` as a bool (true/false; 1/0)."""
    value = _get(name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise KernelError(f"~{name} must be true or false, got {value!r}")
