"""CONTRIBUTING.md, "Package layout": a package uses another of this repository (a Python import
in its library, tools, nodes or tests; a $(find ...) in its launch or rostest files) only if its
package.xml declares it."""
import ast
import glob
import os
import re
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(ROOT, "*", "package.xml")))
DEPENDS = ("depend", "build_depend", "exec_depend", "test_depend", "build_export_depend", "run_depend")


def declared(package):
    root = ET.parse(os.path.join(ROOT, package, "package.xml")).getroot()
    return {e.text.strip() for tag in DEPENDS for e in root.findall(tag) if e.text}


def python_files(package):
    folder = os.path.join(ROOT, package)
    for sub, _, names in os.walk(folder):
        if "/." in sub[len(folder):]:
            continue
        for name in names:
            path = os.path.join(sub, name)
            if name.endswith(".py"):
                yield path
            elif os.path.basename(sub) in ("scripts", "nodes") and os.access(path, os.X_OK):
                with open(path, "rb") as f:
                    if b"python" in f.readline(128):
                        yield path


def used(package):
    """{other package: the first file that uses it}."""
    found = {}
    for path in python_files(package):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                     else [])
            for name in names:
                top = name.split(".")[0]
                if top in PACKAGES and top != package:
                    found.setdefault(top, os.path.relpath(path, ROOT))
    for path in glob.glob(os.path.join(ROOT, package, "*", "*.launch")) + \
            glob.glob(os.path.join(ROOT, package, "test", "*.test")):
        with open(path, encoding="utf-8") as f:
            for other in re.findall(r"\$\(find ([A-Za-z0-9_]+)\)", f.read()):
                if other in PACKAGES and other != package:
                    found.setdefault(other, os.path.relpath(path, ROOT))
    return found


def test_the_packages_are_found():
    assert {"panda_sim2real", "realeasy_ros", "sim2real_checks", "trifinger_controllers"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_uses_only_what_its_manifest_declares(package):
    undeclared = {other: where for other, where in used(package).items() if other not in declared(package)}
    assert undeclared == {}
