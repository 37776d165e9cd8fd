"""Parameter sets: BO unit vectors, dict/YAML round trips, one-line errors for bad files and
bad mappings (a launch file's <rosparam>)."""
import numpy as np
import pytest
import yaml

from trifinger_controllers.params import Parameter, ParameterSet

SET = ParameterSet("demo", [
    Parameter("k_p", 20.0, 5.0, 50.0, "position gain", log=True),
    Parameter("damping", 1e-5, 1e-6, 1e-2, "pseudo-inverse damping", log=True),
    Parameter("ratio", 0.5, 0.0, 1.0),
    Parameter("steps", 10, 2, 20, integer=True),
])


def test_defaults_and_access():
    assert SET["k_p"] == 20.0 and SET.k_p == 20.0 and SET.steps == 10
    assert list(SET) == ["k_p", "damping", "ratio", "steps"] and len(SET) == 4
    with pytest.raises(KeyError):
        SET["nope"]
    with pytest.raises(AttributeError):
        SET.nope
    changed = SET.replace(ratio=0.25)
    assert changed.ratio == 0.25 and SET.ratio == 0.5  # immutable
    assert changed.defaults() == SET


def test_vector_round_trip():
    u = SET.to_vector()
    assert np.all((u >= 0) & (u <= 1))
    assert SET.from_vector(u).to_dict() == pytest.approx(SET.to_dict())
    low = {"k_p": 5.0, "damping": 1e-6, "ratio": 0.0, "steps": 2}
    high = {"k_p": 50.0, "damping": 1e-2, "ratio": 1.0, "steps": 20}
    assert SET.from_vector(np.zeros(4)).to_dict() == pytest.approx(low)
    assert SET.from_vector(np.ones(4)).to_dict() == pytest.approx(high)
    # log scale: the midpoint is the geometric mean
    assert SET.from_vector([0.5, 0.5, 0.5, 0.5]).k_p == pytest.approx(np.sqrt(5.0 * 50.0))
    assert SET.from_vector([2.0, -1.0, 0.5, 0.5]).to_vector()[:2] == pytest.approx([1.0, 0.0])
    with pytest.raises(ValueError, match="4 values"):
        SET.from_vector([0.5])


def test_dict_validation_names_key_and_interval():
    with pytest.raises(ValueError, match=r"unknown parameter 'kp'"):
        SET.from_dict({"kp": 1.0})
    with pytest.raises(ValueError, match=r"k_p: 60 outside its interval \[5, 50\]"):
        SET.from_dict({"k_p": 60})
    with pytest.raises(ValueError, match=r"ratio: 'high' is not a number .*\[0, 1\]"):
        SET.from_dict({"ratio": "high"})
    with pytest.raises(ValueError, match="not a number"):
        SET.from_dict({"ratio": True})
    with pytest.raises(ValueError, match="outside"):
        SET.from_dict({"ratio": float("nan")})
    with pytest.raises(ValueError, match="not an integer"):
        SET.from_dict({"steps": 2.5})
    with pytest.raises(ValueError, match="duplicate"):
        ParameterSet("x", [Parameter("a", 1, 0, 2), Parameter("a", 1, 0, 2)])
    with pytest.raises(ValueError, match="interval"):
        Parameter("a", 1, 2, 0)
    with pytest.raises(ValueError, match="outside"):
        Parameter("a", 3, 0, 2)


def test_yaml_round_trip(tmp_path):
    path = tmp_path / "p.yaml"
    params = SET.replace(k_p=12.5, damping=3e-6, steps=4)
    params.save_yaml(path, header="from a test")
    text = path.read_text()
    assert "k_p: 12.5" in text and "[5, 50]" in text and "# from a test" in text
    assert SET.load_yaml(path) == params
    # partial files keep the other values; exponents without a dot are numbers
    path.write_text("k_p: 7\ndamping: 1e-3\n")
    loaded = SET.load_yaml(path)
    assert loaded.k_p == 7.0 and loaded.damping == 1e-3 and loaded.ratio == 0.5


@pytest.mark.parametrize("content, message", [
    ("kp: 1.0\n", r"p.yaml: demo: unknown parameter 'kp'"),
    ("k_p: 100\n", r"p.yaml: parameter k_p: 100 outside its interval \[5, 50\]"),
    ("ratio: [1, 2]\n", r"p.yaml: parameter ratio: \[1, 2\] is not a number"),
    ("- 1\n- 2\n", r"p.yaml: expected a mapping"),
    ("k_p: [1\n", r"p.yaml: not valid YAML"),
])
def test_bad_files_are_one_line_errors(tmp_path, content, message):
    path = tmp_path / "p.yaml"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        SET.load_yaml(path)
    assert "\n" not in str(info.value)


def test_mapping_equals_the_file(tmp_path):
    """The mapping a launch file loads (<rosparam file=... ns="params"/>) gives the set the file
    gives: one validation (load_yaml reads the file, then from_mapping)."""
    path = tmp_path / "p.yaml"
    SET.replace(k_p=12.5, damping=3e-6, steps=4).save_yaml(path)
    with open(path, encoding="utf-8") as f:
        mapping = yaml.safe_load(f)
    assert SET.from_mapping(mapping, "parameter /node/params") == SET.load_yaml(path)
    # rosparam's loader, like PyYAML, leaves an exponent without a dot a string
    path.write_text("k_p: 7\ndamping: 1e-3\n")
    assert SET.from_mapping({"k_p": 7, "damping": "1e-3"}, "parameter /node/params") \
        == SET.load_yaml(path)
    assert SET.from_mapping(None, "parameter /node/params") == SET      # nothing to change


@pytest.mark.parametrize("mapping, message", [
    ({"kp": 1.0}, r"^parameter /node/params: demo: unknown parameter 'kp'"),
    ({"k_p": 100}, r"^parameter /node/params: parameter k_p: 100 outside its interval \[5, 50\]"),
    ({"ratio": [1, 2]}, r"^parameter /node/params: parameter ratio: \[1, 2\] is not a number"),
    ({"steps": "many"}, r"^parameter /node/params: parameter steps: 'many' is not a number"),
    ([1, 2], r"^parameter /node/params: expected a mapping 'name: value', got list"),
    (3.0, r"^parameter /node/params: expected a mapping 'name: value', got float"),
])
def test_bad_mappings_are_one_line_errors_naming_the_source(mapping, message):
    with pytest.raises(ValueError, match=message) as info:
        SET.from_mapping(mapping, "parameter /node/params")
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="parameter file not found: .*missing.yaml") as info:
        SET.load_yaml(tmp_path / "missing.yaml")
    assert "\n" not in str(info.value)


def test_with_intervals():
    narrowed = SET.with_intervals({"k_p": (30.0, 40.0)})
    assert narrowed.parameter("k_p").low == 30.0 and narrowed.k_p == 30.0  # clipped in
    assert narrowed.ratio == SET.ratio
    with pytest.raises(ValueError, match="unknown"):
        SET.with_intervals({"x": (0, 1)})
    with pytest.raises(ValueError, match="invalid interval"):
        SET.with_intervals({"ratio": (1, 0)})


def test_load_params_validates_against_the_controller_registry(tmp_path, monkeypatch):
    import trifinger_controllers.controllers as registry

    monkeypatch.setattr(registry, "default_parameters", lambda name: SET, raising=False)
    path = tmp_path / "p.yaml"
    path.write_text("k_p: 30\n")
    assert registry.load_params("cpc", path).k_p == 30.0
    with pytest.raises(FileNotFoundError, match="not found"):
        registry.load_params("cpc", tmp_path / "missing.yaml")
