"""The repository's linters (issue 21): ruff with ruff.toml over every tracked Python file, the
extension-less tools and nodes (a python shebang) included; clang-format with .clang-format over
every tracked C++ file (a check: it changes nothing). A failure lists the findings."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tracked_files():
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in tracked.decode().split("\0") if name]


def python_files():
    """Tracked ``*.py`` files and tracked files whose first line is a python shebang."""
    files = []
    for name in tracked_files():
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):
            continue
        if name.endswith(".py"):
            files.append(name)
            continue
        with open(path, "rb") as stream:
            first = stream.readline(128)
        if first.startswith(b"#!") and b"python" in first:
            files.append(name)
    return files


def test_python_files_pass_the_linter():
    if shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout: the tracked files are unknown")
    files = python_files()
    assert len(files) > 100 and "tools/test/test_env_sh.py" in files
    assert any(not f.endswith(".py") for f in files)   # the extension-less scripts are checked too
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--config", os.path.join(ROOT, "ruff.toml"),
                          "--no-cache", "--output-format", "concise", *files],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


def test_cpp_files_are_formatted():
    if shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout: the tracked files are unknown")
    files = [f for f in tracked_files() if f.endswith((".cpp", ".hpp", ".h"))
             and os.path.isfile(os.path.join(ROOT, f))]
    assert "compliant_actuator_gazebo/src/core/pid.cpp" in files and len(files) > 20
    binary = os.path.join(os.path.dirname(sys.executable), "clang-format")
    out = subprocess.run([binary if os.path.exists(binary) else "clang-format", "--dry-run", "--Werror",
                          "--style=file", *files], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-6000:]
