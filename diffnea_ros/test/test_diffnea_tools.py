"""The command-line tools follow sim2real_checks.cli's conventions: ``--help`` works and lists
the common flags, and a bad argument is one stderr line, ``PROG: error: MESSAGE``, exit code 2."""
import os

import pytest
from sim2real_checks.tool_testing import check_argument_error, check_help

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
# tool -> arguments one of its own checks refuses (after argparse accepted them)
BAD_VALUES = {
    "identify": ["--data", "d.npz", "--urdf", "r.urdf", "--out", "o.urdf", "--epochs", "0"],
    "reproduce_table1": ["--scales", "half"],
}


def script(tool):
    return os.path.join(SCRIPTS, tool)


@pytest.mark.parametrize("tool", sorted(BAD_VALUES))
def test_help_lists_the_common_flags(tool):
    check_help(script(tool), tool)


@pytest.mark.parametrize("tool", sorted(BAD_VALUES))
@pytest.mark.parametrize("case", ["unknown option", "bad value"])
def test_a_bad_argument_is_one_line_and_exit_code_2(tool, case, tmp_path):
    check_argument_error(script(tool), tool, ["--no-such-option"] if case == "unknown option" else BAD_VALUES[tool],
                         str(tmp_path))
