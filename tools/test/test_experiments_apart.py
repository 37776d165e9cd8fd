"""CONTRIBUTING.md, "Experiments apart from libraries": a package's paper experiments live in its
``experiments`` subpackage (``src/<package>/experiments/``), which builds on the library; no
library module imports them (directly or through a relative import), so the library imports
without an experiment's dependencies and an experiment can change without touching it."""
import ast
import os

import pytest

from test_manifests import PACKAGES, ROOT

WITH_EXPERIMENTS = [p for p in PACKAGES
                    if os.path.isfile(os.path.join(ROOT, p, "src", p, "experiments", "__init__.py"))]


def library_modules(package):
    """(dotted module name, path) of every module of ``src/<package>/`` outside ``experiments``."""
    src = os.path.join(ROOT, package, "src")
    for sub, dirs, names in os.walk(os.path.join(src, package)):
        dirs[:] = [d for d in dirs if d != "experiments" and not d.startswith((".", "__"))]
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(sub, name)
                parts = os.path.relpath(path, src)[:-3].split(os.sep)
                yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imported(module, path):
    """The absolute names ``path`` (module ``module``) imports, relative imports resolved."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_package = path.endswith("__init__.py")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module
            yield prefix
            yield from (f"{prefix}.{alias.name}" for alias in node.names)


def experiment_imports(package):
    forbidden = f"{package}.experiments"
    return [f"{os.path.relpath(path, ROOT)} imports {name}" for module, path in library_modules(package)
            for name in imported(module, path) if name == forbidden or name.startswith(forbidden + ".")]


def test_the_packages_with_experiments_are_found():
    assert {"compliant_actuator_gazebo", "diffnea_ros", "kernel_manager_ros"} <= set(WITH_EXPERIMENTS)


@pytest.mark.parametrize("package", WITH_EXPERIMENTS)
def test_no_library_module_imports_the_experiments(package):
    assert experiment_imports(package) == []


def test_the_check_sees_an_absolute_and_a_relative_import(tmp_path):
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "a.py").write_text("from pkg.experiments.x import y\n")
    (folder / "b.py").write_text("from .experiments import x\n")
    (folder / "c.py").write_text("from . import experiments\n")
    (folder / "d.py").write_text("from .checks import experiments_ok\n")
    found = {name: [n for n in imported(f"pkg.{name}", str(folder / f"{name}.py"))
                    if n == "pkg.experiments" or n.startswith("pkg.experiments.")]
             for name in "abcd"}
    assert all(found[name] for name in "abc") and found["d"] == []
