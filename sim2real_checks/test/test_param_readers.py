"""sim2real_checks.params: the nodes' scalar parameters from a stand-in parameter server; a bad
value is the package's error naming the parameter."""
from __future__ import annotations

import math
from typing import Any

import pytest

from sim2real_checks.params import flag_param, integer_param, number_param, optional_number_param
from sim2real_checks.node_testing import StandInParameters


class BadParameter(ValueError):
    pass


@pytest.fixture
def params(monkeypatch: pytest.MonkeyPatch) -> StandInParameters:
    return StandInParameters().install(monkeypatch)


def test_numbers_and_their_defaults(params: dict[str, Any]) -> None:
    assert number_param("~rate", 100.0, BadParameter) == 100.0
    params["~rate"] = 50
    value = number_param("~rate", 100.0, BadParameter, positive=True)
    assert value == 50.0 and isinstance(value, float)
    params["~gain"] = -2.5
    assert number_param("~gain", 0.0, BadParameter) == -2.5
    params["~factor"] = 0
    assert number_param("~factor", 1.0, BadParameter, minimum=0.0) == 0.0


@pytest.mark.parametrize("value, kwargs, message", [
    (True, {}, "~rate must be a finite number, got True"),
    ("fast", {}, "~rate must be a finite number, got 'fast'"),
    ("10", {}, "~rate must be a finite number, got '10'"),
    ([1], {}, "~rate must be a finite number, got [1]"),
    (None, {}, "~rate must be a finite number, got None"),
    (math.nan, {}, "~rate must be a finite number, got nan"),
    (math.inf, {}, "~rate must be a finite number, got inf"),
    (-math.inf, {"minimum": 0.0}, "~rate must be a finite number >= 0, got -inf"),
    (0, {"positive": True}, "~rate must be a finite number > 0, got 0.0"),
    (-1, {"minimum": 0.0}, "~rate must be a finite number >= 0, got -1.0"),
    (0.5, {"minimum": 1.0, "positive": True}, "~rate must be a finite number >= 1, got 0.5"),
    (10 ** 400, {}, f"~rate must be a finite number, got {10 ** 400}"),
    (math.nan, {"finite": False}, "~rate must be a number, got nan"),
    (-1, {"finite": False, "positive": True}, "~rate must be a number > 0, got -1.0"),
    (0, {"positive": True, "what": "a positive number of Hz"},
     "~rate must be a positive number of Hz, got 0.0"),
])
def test_bad_numbers_are_the_packages_error(params: dict[str, Any], value: Any,
                                            kwargs: dict[str, Any], message: str) -> None:
    params["~rate"] = value
    with pytest.raises(BadParameter) as info:
        number_param("~rate", 1.0, BadParameter, **kwargs)
    assert str(info.value) == message


def test_infinity_only_when_allowed(params: dict[str, Any]) -> None:
    params["~rate"] = math.inf
    assert number_param("~rate", 1.0, BadParameter, positive=True, finite=False) == math.inf


@pytest.mark.parametrize("value", [None, ""])
def test_an_optional_number_not_set_is_none(params: dict[str, Any], value: Any) -> None:
    if value is not None:
        params["~gain"] = value
    assert optional_number_param("~gain", BadParameter) is None


def test_an_optional_number_set_is_checked(params: dict[str, Any]) -> None:
    params["~gain"] = 2
    assert optional_number_param("~gain", BadParameter, minimum=0.0) == 2.0
    params["~gain"] = "high"
    with pytest.raises(BadParameter, match="^~gain must be a finite number >= 0, got 'high'$"):
        optional_number_param("~gain", BadParameter, minimum=0.0)
    params["~gain"] = 0
    with pytest.raises(BadParameter, match="^~gain must be a finite number > 0, got 0.0$"):
        optional_number_param("~gain", BadParameter, positive=True)


def test_integers(params: dict[str, Any]) -> None:
    assert integer_param("~seed", None, BadParameter) is None
    assert integer_param("~seed", 3, BadParameter) == 3
    params["~seed"] = 7.0                      # an integral float is its int
    value = integer_param("~seed", None, BadParameter, minimum=0)
    assert value == 7 and isinstance(value, int)
    params["~seed"] = -2
    assert integer_param("~seed", None, BadParameter) == -2


@pytest.mark.parametrize("value, minimum, message", [
    (3.5, None, "~seed must be an integer, got 3.5"),
    ("x", None, "~seed must be an integer, got 'x'"),
    (True, None, "~seed must be an integer, got True"),
    (math.nan, None, "~seed must be an integer, got nan"),
    (-1, 0, "~seed must be an integer >= 0, got -1"),
])
def test_bad_integers_are_the_packages_error(params: dict[str, Any], value: Any,
                                             minimum: Any, message: str) -> None:
    params["~seed"] = value
    with pytest.raises(BadParameter) as info:
        integer_param("~seed", 0, BadParameter, minimum=minimum)
    assert str(info.value) == message


def test_flags(params: dict[str, Any]) -> None:
    assert flag_param("~clock", True, BadParameter) is True
    for value, expected in ((False, False), (True, True), (0, False), (1, True)):
        params["~clock"] = value
        assert flag_param("~clock", True, BadParameter) is expected


@pytest.mark.parametrize("value", ["maybe", "true", 2, 0.0, None])
def test_bad_flags_are_the_packages_error(params: dict[str, Any], value: Any) -> None:
    params["~clock"] = value
    with pytest.raises(BadParameter) as info:
        flag_param("~clock", False, BadParameter)
    assert str(info.value) == f"~clock must be true or false, got {value!r}"
