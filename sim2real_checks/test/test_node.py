"""sim2real_checks.node: mapping_param (a mapping, a file path or nothing); node_testing and launch_testing."""
from __future__ import annotations

from typing import Any, Optional

import pytest

from sim2real_checks.node import mapping_param
from sim2real_checks.node_testing import StandInParameters


class BadConfig(ValueError):
    pass


def from_mapping(raw: Any, source: str) -> tuple[str, Any]:
    if not isinstance(raw, dict):
        raise BadConfig(f"{source}: expected a mapping, got {type(raw).__name__}")
    return ("mapping", raw)


def from_file(path: Optional[str]) -> tuple[str, Any]:
    return ("file", path)


@pytest.fixture
def params(monkeypatch: pytest.MonkeyPatch) -> StandInParameters:
    return StandInParameters().install(monkeypatch)


def test_a_mapping_goes_to_from_mapping_with_its_source(params: StandInParameters) -> None:
    params["~limits"] = {"velocity": [1.0]}
    assert mapping_param("~limits", from_mapping, from_file) == ("mapping", {"velocity": [1.0]})
    assert params.warnings == []


@pytest.mark.parametrize("value", [None, ""])
def test_absent_or_empty_reads_the_default_file(params: StandInParameters, value: Any) -> None:
    if value is not None:
        params["~limits"] = value
    assert mapping_param("~limits", from_mapping, from_file) == ("file", None)


def test_a_path_still_works_with_a_warning(params: StandInParameters) -> None:
    params["~limits"] = "/some/limits.yaml"
    assert mapping_param("~limits", from_mapping, from_file) == ("file", "/some/limits.yaml")
    assert len(params.warnings) == 1 and "deprecated" in params.warnings[0]


def test_a_scalar_is_the_packages_error(params: StandInParameters) -> None:
    params["~limits"] = 3
    with pytest.raises(BadConfig, match="/node/limits: expected a mapping, got int"):
        mapping_param("~limits", from_mapping, from_file)


def test_check_fails_at_start_accepts_only_one_fatal_line_exit_1_and_no_traceback() -> None:
    from sim2real_checks.node_testing import StartUp, check_fails_at_start

    good = StartUp(1, "[WARN] x\n[FATAL] [1.0]: /bad_0: ~rate must be > 0, got 0\n")
    assert check_fails_at_start(good, "~rate must be > 0", "bad_0").endswith("got 0")
    for startup, expected, name in (
            (StartUp(0, good.stderr), "~rate", None),                          # exit status
            (StartUp(None, good.stderr), "~rate", None),                       # did not stop
            (StartUp(1, good.stderr + "[FATAL] again\n"), "~rate", None),      # two lines
            (StartUp(1, good.stderr), "~seed", None),                          # another message
            (StartUp(1, good.stderr), "~rate", "bad_1"),                       # another node
            (StartUp(1, "Traceback (most recent call last):\n" + good.stderr), "~rate", None)):
        with pytest.raises(AssertionError):
            check_fails_at_start(startup, expected, name)


def test_param_mapping_rebuilds_the_nested_mapping_a_launch_file_loaded() -> None:
    from sim2real_checks.launch_testing import param_mapping

    params = {"/n/limits/velocity": [1.0, 2.0], "/n/limits/gains/kp": 3, "/n/limits/gains/kd": 0.1,
              "/n/rate": 100, "/n/limits_extra": 1}
    assert param_mapping(params, "/n/limits") == {"velocity": [1.0, 2.0], "gains": {"kp": 3, "kd": 0.1}}
    with pytest.raises(AssertionError, match="nothing under /n/other"):
        param_mapping(params, "/n/other")
