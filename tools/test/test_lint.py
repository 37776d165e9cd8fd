"""The repository's linter (issue 21): ruff with ruff.toml over every tracked Python file, the
extension-less tools and nodes (a python shebang) included. A failure lists the findings."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def python_files():
    """Tracked ``*.py`` files and tracked files whose first line is a python shebang."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = []
    for name in tracked.decode().split("\0"):
        path = os.path.join(ROOT, name)
        if not name or not os.path.isfile(path):
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
