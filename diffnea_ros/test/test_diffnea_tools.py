"""The command-line tools follow sim2real_checks.cli's conventions: ``--help`` works and lists
the common flags, and a bad argument is one stderr line, ``PROG: error: MESSAGE``, exit code 2."""
import os

import pytest
from sim2real_checks import check_conventions

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
# tool -> arguments one of its own checks refuses (after argparse accepted them)
BAD_VALUES = {
    "identify": ["--data", "d.npz", "--urdf", "r.urdf", "--out", "o.urdf", "--epochs", "0"],
    "identify --split-from": ["--data", "d.npz", "--split-from", "s.npz", "--urdf", "r.urdf", "--out", "o.urdf"],
    "reproduce_table1": ["--scales", "half"],
}


@pytest.mark.parametrize("tool", sorted(BAD_VALUES))
def test_the_tool_follows_the_conventions(tool, tmp_path):
    name = tool.split()[0]
    check_conventions(os.path.join(SCRIPTS, name), name, BAD_VALUES[tool], str(tmp_path))
