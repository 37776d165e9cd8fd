"""The command-line tools follow sim2real_checks.cli's conventions: ``--help`` works and lists
the common flags, and a bad argument is one stderr line, ``PROG: error: MESSAGE``, exit code 2."""
import os

import pytest
from sim2real_checks import check_conventions

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
# tool -> arguments one of its own checks refuses (after argparse accepted them)
BAD_VALUES = {
    "generate": ["--sim-bag", "a.bag", "--real-bag", "b.bag", "--config", "topics.yaml",
                 "--out", "k.yaml", "--rollouts", "0"],
    "panda-kernels": ["--held-out", "1.5"],
    "pair-kernels": ["--bag", "a.bag", "--out", "k.yaml", "--step", "nan"],
    "vehicle-experiment": ["--missions", "0"],
}


@pytest.mark.parametrize("tool", sorted(BAD_VALUES))
def test_the_tool_follows_the_conventions(tool, tmp_path):
    check_conventions(os.path.join(SCRIPTS, tool), tool, BAD_VALUES[tool], str(tmp_path))
