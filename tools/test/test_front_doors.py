"""CONTRIBUTING.md, "Front doors": each package's ``__init__`` names its public API in ``__all__``;
another package (or bench/, tools/) imports only those names, never a module inside the package
(its generated ``msg`` and ``srv`` modules are public, as in ROS)."""
import ast
import importlib
import os

import pytest

from test_manifests import PACKAGES, ROOT, python_files

PUBLIC_SUBMODULES = ("msg", "srv")


def outside_files():
    """(owner package or None, path) of every Python file that may import a package."""
    for package in PACKAGES:
        for path in python_files(package):
            yield package, path
    for folder in ("bench", "tools"):
        for sub, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in names:
                if name.endswith(".py"):
                    yield None, os.path.join(sub, name)


def foreign_imports():
    """(file, line, imported package, module path inside it or "", names) of every import of a
    package from outside it."""
    found = []
    for owner, path in outside_files():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top, _, inner = alias.name.partition(".")
                    if top in PACKAGES and top != owner:
                        found.append((path, node.lineno, top, inner, ()))
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                top, _, inner = node.module.partition(".")
                if top in PACKAGES and top != owner:
                    found.append((path, node.lineno, top, inner, tuple(a.name for a in node.names)))
    return found


def where(path, line):
    return f"{os.path.relpath(path, ROOT)}:{line}"


def test_no_package_imports_another_ones_internals():
    internal = [f"{where(p, n)} imports {top}.{inner}" for p, n, top, inner, _ in foreign_imports()
                if inner and inner.split(".")[0] not in PUBLIC_SUBMODULES]
    assert internal == []


def test_what_others_import_is_in_the_front_door():
    missing = []
    for path, line, top, inner, names in foreign_imports():
        if inner:
            continue
        public = set(importlib.import_module(top).__all__)
        missing += [f"{where(path, line)}: {top}.{n}" for n in names if n not in public]
    assert missing == []


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_of_a_front_door_resolves(package):
    module = importlib.import_module(package)
    public = getattr(module, "__all__", None)
    assert public, f"{package}/__init__.py names no public API (__all__)"
    unresolved = []
    for name in public:
        try:
            getattr(module, name)
        except (AttributeError, ImportError) as exc:
            unresolved.append(f"{name}: {exc}")
    assert unresolved == []
