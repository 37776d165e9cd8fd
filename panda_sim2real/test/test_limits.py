"""Joint limits from a file or from a mapping (a node's ``~limits`` parameter, issue 21): the
same limits, the same checks, errors naming the file or the parameter."""
import dataclasses

import numpy as np
import pytest
import yaml

from panda_sim2real.errors import ConfigError
from panda_sim2real.limits import DEFAULT_LIMITS_FILE, JointLimits

SOURCE = "parameter /sim/panda_sim/limits"


def raw_limits() -> dict:
    with open(DEFAULT_LIMITS_FILE, encoding="utf-8") as f:
        return yaml.safe_load(f)


def assert_same(a: JointLimits, b: JointLimits) -> None:
    for field in dataclasses.fields(JointLimits):
        np.testing.assert_array_equal(getattr(a, field.name), getattr(b, field.name),
                                      err_msg=field.name)


def test_a_mapping_gives_the_files_limits():
    limits = JointLimits.from_dict(raw_limits(), SOURCE)
    assert_same(limits, JointLimits.from_yaml())
    assert_same(limits, JointLimits.from_yaml(DEFAULT_LIMITS_FILE))
    assert limits.dof == 7 and limits.joint_names[0] == "panda_joint1"


@pytest.mark.parametrize("change, phrase", [
    (lambda r: r.pop("jerk"), "missing or malformed entry 'jerk'"),
    (lambda r: r.__setitem__("velocity", r["velocity"][:6]), "'velocity' needs 7 finite numbers"),
    (lambda r: r.__setitem__("effort", [float("nan")] * 7), "'effort' needs 7 finite numbers"),
    (lambda r: r.__setitem__("home", ["a"] * 7), "missing or malformed entry"),
    (lambda r: r.__setitem__("position_min", r["position_max"]), "position_min must be below"),
])
def test_a_malformed_mapping_names_the_source(change, phrase):
    raw = raw_limits()
    change(raw)
    with pytest.raises(ConfigError, match=f"joint limits {SOURCE}: .*{phrase}"):
        JointLimits.from_dict(raw, SOURCE)


@pytest.mark.parametrize("raw", ["/opt/limits.yaml", [1, 2], None])
def test_not_a_mapping(raw):
    with pytest.raises(ConfigError, match=f"joint limits {SOURCE}: expected a mapping"):
        JointLimits.from_dict(raw, SOURCE)


def test_a_file_error_names_the_file(tmp_path):
    raw = raw_limits()
    raw["velocity"] = raw["velocity"][:3]
    path = tmp_path / "limits.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=f"joint limits {path}: 'velocity' needs 7"):
        JointLimits.from_yaml(str(path))
    with pytest.raises(ConfigError, match="joint limits not found"):
        JointLimits.from_yaml(str(tmp_path / "nope.yaml"))


def test_limits_compare_by_value():
    a, b = JointLimits.from_yaml(), JointLimits.from_yaml()
    assert a == b and a is not b
    raw = yaml.safe_load(open(DEFAULT_LIMITS_FILE, encoding="utf-8"))
    raw["velocity"][0] += 0.1
    assert JointLimits.from_dict(raw, "test") != a
