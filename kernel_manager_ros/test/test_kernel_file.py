"""Kernel files: round trip, wrong layouts, malformed and unsafe YAML."""
import numpy as np
import pytest
import yaml

from kernel_fixtures import random_kernel_set
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.kernel_file import load_kernels, save_kernels


def test_round_trip(tmp_path):
    ks = random_kernel_set(12, d=5, m=2, seed=3)
    path = tmp_path / "k" / "kernels.yaml"
    save_kernels(path, ks)
    text = path.read_text()
    assert "!!" not in text and "kind: motor" in text          # plain, readable YAML
    back = load_kernels(path, expected_state_names=ks.state_names,
                        expected_action_names=ks.action_names)
    assert back.state_names == ks.state_names and back.action_names == ks.action_names
    np.testing.assert_array_equal(back.weights, ks.weights)
    assert back.activation_threshold == ks.activation_threshold
    assert back.metadata == {"note": "random"}
    assert len(back) == 12
    for a, b in zip(ks.kernels, back.kernels):
        assert (a.kind, a.sigma, a.support, a.held) == (b.kind, b.sigma, b.support, b.held)
        np.testing.assert_array_equal(a.centre, b.centre)
        s, act = np.linspace(0, 1, 5), np.array([0.3, -0.2])
        np.testing.assert_array_equal(a.transfer.apply(s, act), b.transfer.apply(s, act))


def test_another_state_layout_is_refused(tmp_path):
    path = tmp_path / "kernels.yaml"
    save_kernels(path, random_kernel_set(3, d=4, seed=1))
    with pytest.raises(KernelError, match="4-dimensional states, expected 3"):
        load_kernels(path, expected_state_names=("x0", "x1", "x2"))
    with pytest.raises(KernelError, match="made for states"):
        load_kernels(path, expected_state_names=("x0", "x1", "x2", "y"))


def test_inconsistent_kernel_dimension_is_refused(tmp_path):
    path = tmp_path / "kernels.yaml"
    save_kernels(path, random_kernel_set(2, d=4, seed=1))
    data = yaml.safe_load(path.read_text())
    data["kernels"][1]["centre"] = [0.0, 0.0, 0.0]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(KernelError, match="kernel 1: centre has 3 values for 4"):
        load_kernels(path)


@pytest.mark.parametrize("text,match", [
    ("format: [unclosed\n", "not valid YAML"),
    ("- just\n- a list\n", "expected a mapping"),
    ("format: something/else\nversion: 1\n", "not a kernel file"),
    ("format: kernel_manager_ros/kernels\nversion: 1\nstate_names: [x]\n", "missing key"),
])
def test_malformed_files(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(KernelError, match=match):
        load_kernels(path)


def test_python_tags_are_refused_without_running_them(tmp_path):
    path = tmp_path / "evil.yaml"
    marker = tmp_path / "ran"
    path.write_text("format: !!python/object/apply:os.system ['touch %s']\n" % marker
                    + "kernels: !!python/object:collections.OrderedDict {}\n")
    with pytest.raises(KernelError, match="not valid YAML"):
        load_kernels(path)
    assert not marker.exists()


def test_missing_file(tmp_path):
    with pytest.raises(KernelError, match="not found"):
        load_kernels(tmp_path / "nope.yaml")
