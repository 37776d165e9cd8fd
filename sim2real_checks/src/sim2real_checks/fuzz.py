"""Hostile variants of a ROS message, generated from its type: every float field set to NaN,
±Inf and extreme finite values, every array one element short, one too long and empty, joint
names unknown and repeated, header stamps in the far future and at zero. Pure functions over
genpy messages; the ``fuzz_graph`` rostest node sends them."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import genpy

EXTREME_VALUES = (float("nan"), float("inf"), -float("inf"), 1e308, -1e308, 1e6, -1e6)
FAR_FUTURE = genpy.Time(4_000_000_000)
FLOAT_TYPES = ("float64", "float32")


@dataclass(frozen=True)
class Case:
    name: str
    message: Any


def hostile_cases(good: Any) -> list[Case]:
    """Every hostile variant of ``good`` (which is left unchanged)."""
    cases: list[Case] = []
    for path, slot_type, get, set_ in _fields(good):
        base = slot_type.rstrip("[]").split("[")[0]
        is_array = "[" in slot_type
        if base in FLOAT_TYPES:
            for value in EXTREME_VALUES:
                cases.append(_variant(good, path, f"{path}={value:g}",
                                      lambda m, v=value: _set_float(m, get, set_, is_array, v)))
        if is_array and base in FLOAT_TYPES + ("string",) + _message_types(slot_type):
            cases.append(_variant(good, path, f"{path} one short",
                                  lambda m: set_(m, list(get(m))[:-1])))
            cases.append(_variant(good, path, f"{path} one too many",
                                  lambda m: set_(m, list(get(m)) + list(get(m))[-1:])))
            cases.append(_variant(good, path, f"{path} empty", lambda m: set_(m, [])))
        if is_array and base == "string":
            cases.append(_variant(good, path, f"{path} unknown",
                                  lambda m: set_(m, [f"no_such_{k}" for k in range(len(get(m)))])))
            cases.append(_variant(good, path, f"{path} repeated",
                                  lambda m: set_(m, list(get(m))[:1] * len(get(m)))))
        if base == "time" and not is_array:
            cases.append(_variant(good, path, f"{path} far future",
                                  lambda m: set_(m, FAR_FUTURE)))
    return [c for c in cases if c is not None]


def _message_types(slot_type: str) -> tuple[str, ...]:
    base = slot_type.split("[")[0]
    return (base,) if "/" in base else ()


def _set_float(msg: Any, get, set_, is_array: bool, value: float) -> None:
    if is_array:
        values = list(get(msg))
        if not values:
            return
        values[0] = value
        set_(msg, values)
    else:
        set_(msg, value)


def _variant(good: Any, path: str, name: str, mutate: Callable[[Any], None]):
    msg = copy.deepcopy(good)
    mutate(msg)
    if msg == good:
        return None
    return Case(name, msg)


def _fields(msg: Any, prefix: str = "", root_get=lambda m: m) -> Iterator[tuple]:
    """(path, slot type, getter, setter) of every field; a message array descends into its
    first element (the others are like it)."""
    for name, slot_type in zip(msg.__slots__, msg._slot_types):
        path = f"{prefix}{name}"
        get = lambda m, n=name, g=root_get: getattr(g(m), n)  # noqa: E731
        set_ = lambda m, v, n=name, g=root_get: setattr(g(m), n, v)  # noqa: E731
        yield path, slot_type, get, set_
        value = getattr(msg, name)
        if isinstance(value, genpy.Message):
            yield from _fields(value, f"{path}.", get)
        elif isinstance(value, list) and value and isinstance(value[0], genpy.Message):
            first = lambda m, g=get: g(m)[0]  # noqa: E731
            yield from _fields(value[0], f"{path}[0].", first)
