"""controller_node.load_params: ~params as the mapping controller.launch loads
(<rosparam file=... ns="params"/>), the file path of before (one release, with a warning) or
nothing (the defaults), read from a stand-in parameter server; a bad one is one
ConfigurationError naming the parameter (the node's one [FATAL] line; trifinger_nodes.test checks
the exit). No ROS master needed."""
import pytest
import rospy
import yaml

from trifinger_controllers.controller_node import load_params
from trifinger_controllers.controllers import default_parameters
from trifinger_controllers.errors import ConfigurationError


@pytest.fixture
def params(monkeypatch):
    """A dict as the parameter server of a node named /node ("~x" is "/node/x"); the warnings
    logged."""
    server: dict = {}
    warnings: list = []

    def key(name):
        return "/node/" + name[1:] if name.startswith("~") else "/" + name.lstrip("/")

    monkeypatch.setattr(rospy, "get_param", lambda name, *default: server.get(key(name), *default))
    monkeypatch.setattr(rospy, "resolve_name", key)
    monkeypatch.setattr(rospy, "logwarn", lambda message, *args: warnings.append(message))

    def set_params(**values):
        server.clear()
        warnings.clear()
        server.update({key("~" + k): v for k, v in values.items()})
    set_params.warnings = warnings
    return set_params


def written(tmp_path, controller, **values):
    path = tmp_path / f"{controller}.yaml"
    default_parameters(controller).replace(**values).save_yaml(path, header="a test")
    return str(path)


@pytest.mark.parametrize("controller, values", [
    ("cpc", {"kp": 2.0, "damping": 3e-6, "speed": 0.1}),
    ("cic", {}),
    ("mp", {}),
])
def test_the_mapping_gives_the_files_parameters(params, tmp_path, controller, values):
    defaults = default_parameters(controller)
    name = defaults.names[0]
    values = values or {name: defaults.parameter(name).high}
    path = written(tmp_path, controller, **values)
    params(params=path)                                  # the old way: a file path
    from_file = load_params(controller)
    assert len(params.warnings) == 1 and "deprecated" in params.warnings[0] \
        and "/node/params" in params.warnings[0]
    with open(path, encoding="utf-8") as f:
        params(params=yaml.safe_load(f))                 # as <rosparam ns="params"> loads it
    from_mapping = load_params(controller)
    assert params.warnings == []
    assert from_mapping == from_file == defaults.replace(**values)


def test_no_parameters_are_the_defaults(params):
    params()
    assert load_params("cpc") is None
    params(params="")                                    # an empty launch argument, as before
    assert load_params("cpc") is None


@pytest.mark.parametrize("value, message", [
    ({"nonsense": 1.0}, "parameter /node/params: cpc: unknown parameter 'nonsense'"),
    ({"kp": 100.0}, "parameter /node/params: parameter kp: 100 outside its interval [0.3, 6]"),
    ({"kp": "high"}, "parameter /node/params: parameter kp: 'high' is not a number"),
    ([1.5], "parameter /node/params: expected a mapping 'name: value', got list"),
    ("/nonexistent/params.yaml", "~params file not found: /nonexistent/params.yaml"),
])
def test_bad_parameters_are_one_configuration_error(params, value, message):
    params(params=value)
    with pytest.raises(ConfigurationError) as info:
        load_params("cpc")
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_a_bad_file_names_the_file(params, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("kp: [1\n")
    params(params=str(path))
    with pytest.raises(ConfigurationError, match=f"^{path}: not valid YAML"):
        load_params("cpc")
