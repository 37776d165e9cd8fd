"""trifinger_sim's ~camera and ~physics (sim_node._sim_options): a name, the model
trifinger_sim.launch loads from its YAML file (a mapping), or a file path (the old way, one
release, with a warning); a bad one is one ConfigurationError naming the parameter. No ROS master
needed; trifinger_nodes.test checks the node's [FATAL] exit."""
import os

import pytest

from sim2real_checks import StandInParameters, launch_params
from trifinger_controllers.errors import ConfigurationError
from trifinger_controllers.perception import DEFAULT_CONFIG as PERCEPTION_FILE
from trifinger_controllers.physics import DEFAULT_CONFIG as PHYSICS_FILE
from trifinger_controllers.sim_node import _sim_options
from trifinger_controllers.sim_options import SimOptions

LAUNCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch",
                      "trifinger_sim.launch")
NODE = "/trifinger/trifinger_sim/"


@pytest.fixture
def params(monkeypatch):
    return StandInParameters().install(monkeypatch)


def node_params(*args: str) -> dict:
    """The sim node's ~camera and ~physics as trifinger_sim.launch sets them (nested)."""
    flat = launch_params(LAUNCH, *args)
    out: dict = {}
    for key, value in flat.items():
        if key.startswith(NODE + "camera") or key.startswith(NODE + "physics"):
            *path, last = key[len(NODE):].split("/")
            node = out
            for part in path:
                node = node.setdefault(part, {})
            node[last] = value
    return {"~" + k: v for k, v in out.items()}


@pytest.mark.parametrize("args, camera, physics", [
    ((), "tracker", "randomised"),
    (("camera:=ideal", "physics:=nominal"), "ideal", "nominal"),
    ((f"camera:={PERCEPTION_FILE}", f"physics:={PHYSICS_FILE}"), "tracker", "randomised"),
])
def test_the_launch_files_models_are_the_named_ones(params, args, camera, physics):
    params.update(node_params(*args))
    assert all(isinstance(params[k], dict) for k in params if params[k] not in ("ideal", "nominal"))
    assert _sim_options().describe() == SimOptions.named(camera, physics).describe()
    assert params.warnings == []


def test_defaults_names_and_deprecated_paths(params):
    assert _sim_options().describe() == SimOptions.named().describe()
    params.update({"~camera": "", "~physics": ""})       # empty launch arguments: the defaults
    assert _sim_options().describe() == SimOptions.named().describe() and params.warnings == []
    params.update({"~camera": str(PERCEPTION_FILE), "~physics": "nominal"})
    assert _sim_options().describe() == SimOptions.named("tracker", "nominal").describe()
    assert len(params.warnings) == 1 and "deprecated" in params.warnings[0] \
        and "/node/camera" in params.warnings[0]


@pytest.mark.parametrize("values, message", [
    ({"~camera": {"nonsense": 1.0}}, "parameter /node/camera: unknown perception parameter 'nonsense'"),
    ({"~camera": {"miss_rate": {"source": "x"}}}, "parameter /node/camera: miss_rate has no 'value'"),
    ({"~physics": {"cube_mass_scale": [2.0, 1.0]}}, "parameter /node/physics: physics randomisation"),
    ({"~physics": {"cube_mass_scale": 1.0}}, "parameter /node/physics: cube_mass_scale must be [low, high]"),
    ({"~camera": 3}, "/node/camera must be one of ['tracker', 'ideal'] or a YAML mapping, got 3"),
    ({"~physics": "heavy"}, "heavy: cannot read the physics randomisation"),
])
def test_bad_values_are_one_configuration_error(params, values, message):
    params.update(values)
    with pytest.raises(ConfigurationError) as info:
        _sim_options()
    assert message in str(info.value) and "\n" not in str(info.value)
