"""The command-line tools follow sim2real_checks.cli's conventions: ``--help`` works and lists
the common flags, and a bad argument is one stderr line, ``PROG: error: MESSAGE``, exit code 2."""
import os

import pytest
from sim2real_checks import check_argument_error, check_conventions

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
# tool -> arguments one of its own checks refuses (after argparse accepted them)
BAD_VALUES = {
    "identify": ["--data", "d.npz", "--urdf", "r.urdf", "--out", "o.urdf", "--epochs", "0"],
    "identify --split-from": ["--data", "d.npz", "--split-from", "s.npz", "--urdf", "r.urdf", "--out", "o.urdf"],
    "reproduce_table1": ["--scales", "half"],
}


TOOLS = sorted({case.split()[0] for case in BAD_VALUES})


@pytest.mark.parametrize("tool", TOOLS)
def test_the_tool_follows_the_conventions(tool, tmp_path):
    """--help, an unknown option and each of the tool's refused values (the tool's start-up,
    torch and scipy imports, is paid once per call: the help and the unknown option once)."""
    script = os.path.join(SCRIPTS, tool)
    cases = [args for case, args in sorted(BAD_VALUES.items()) if case.split()[0] == tool]
    check_conventions(script, tool, cases[0], str(tmp_path))
    for args in cases[1:]:
        check_argument_error(script, tool, args, str(tmp_path))
