"""The package's layout (issue 21): the kernel library, every module directly in
src/kernel_manager_ros/, imports neither the vehicle simulator (kernel_manager_ros.vehicle), nor
the experiments (kernel_manager_ros.experiments), nor matplotlib. Each module is imported in a
fresh interpreter, so a module another test imported first cannot hide it."""
import json
import os
import subprocess
import sys

import pytest

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "kernel_manager_ros")
LIBRARY = sorted(name[:-3] for name in os.listdir(SRC) if name.endswith(".py") and name != "__init__.py")
SUBPACKAGES = ("vehicle", "experiments")
FORBIDDEN = ("kernel_manager_ros.vehicle", "kernel_manager_ros.experiments", "matplotlib")

# prints, as JSON, the forbidden modules in sys.modules after importing argv[1]
PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
forbidden = sys.argv[2:]
print(json.dumps(sorted(m for m in sys.modules
                        if any(m == f or m.startswith(f + ".") for f in forbidden))))
"""


def forbidden_imports(module):
    done = subprocess.run([sys.executable, "-c", PROBE, module, *FORBIDDEN], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_library_and_the_subpackages_are_where_the_readme_says():
    assert {"state_spec", "kernel", "generation", "kernel_file", "manager", "manager_node"} <= set(LIBRARY)
    for package in SUBPACKAGES:
        assert os.path.isfile(os.path.join(SRC, package, "__init__.py"))
    assert not [m for m in LIBRARY if m.startswith("vehicle") or m in ("mission", "mission_node")]


@pytest.mark.parametrize("module", LIBRARY + ["__init__"])
def test_a_library_module_imports_neither_the_vehicle_nor_the_experiments_nor_matplotlib(module):
    name = "kernel_manager_ros" if module == "__init__" else f"kernel_manager_ros.{module}"
    assert forbidden_imports(name) == []


def test_the_probe_sees_a_vehicle_import():
    assert "kernel_manager_ros.vehicle.model" in forbidden_imports("kernel_manager_ros.experiments.vehicle")
