"""The nodes' scalar parameters (CONTRIBUTING.md, "Nodes"): a private parameter (``name`` with
its leading ``~``, as ``rospy.get_param`` takes it) read once, of its type, or the package's error
``error`` naming it, "~NAME must be ..., got VALUE" (run_node turns that into one [FATAL] line and
exit status 1). A bool is never a number, a number never a bool (but 0 and 1), a string neither."""
from __future__ import annotations

import math
from typing import Any, Optional

import rospy


def _float(value: Any) -> Optional[float]:
    """``value`` as a float when it is an int or a float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:          # an int beyond the float range
        return None


def number_param(name: str, default: float, error: type[Exception], minimum: float = -math.inf,
                 positive: bool = False, finite: bool = True, what: Optional[str] = None) -> float:
    """``name`` as a float >= ``minimum`` (> 0 with ``positive``), finite (with ``finite=False``:
    ±inf allowed, NaN never). ``what``: the message's wording of the range instead of "a finite
    number > 0" and the like."""
    value = rospy.get_param(name, default)
    number = _float(value)
    if number is None or math.isnan(number) or (finite and math.isinf(number)) \
            or number < minimum or (positive and number <= 0):
        if what is None:
            bound = (f" >= {minimum:g}" if minimum > 0 or (minimum > -math.inf and not positive)
                     else " > 0" if positive else "")
            what = f"{'a finite' if finite else 'a'} number{bound}"
        raise error(f"{name} must be {what}, got {(value if number is None else number)!r}")
    return number


def optional_number_param(name: str, error: type[Exception], minimum: float = -math.inf,
                          positive: bool = False, finite: bool = True) -> Optional[float]:
    """``name`` as :func:`number_param`, or None when it is not set (or set to "")."""
    if rospy.get_param(name, None) in (None, ""):
        return None
    return number_param(name, 0.0, error, minimum, positive, finite)


def integer_param(name: str, default: Optional[int], error: type[Exception],
                  minimum: Optional[int] = None) -> Optional[int]:
    """``name`` as an int (>= ``minimum``; an integral float is its int); ``default`` (may be
    None) when it is not set."""
    value = rospy.get_param(name, default)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not (isinstance(value, int) and not isinstance(value, bool)
            and (minimum is None or value >= minimum)):
        raise error(f"{name} must be an integer{'' if minimum is None else f' >= {minimum}'}, "
                    f"got {value!r}")
    return value


def flag_param(name: str, default: bool, error: type[Exception]) -> bool:
    """``name`` as a bool (true/false; 1/0)."""
    value = rospy.get_param(name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise error(f"{name} must be true or false, got {value!r}")
