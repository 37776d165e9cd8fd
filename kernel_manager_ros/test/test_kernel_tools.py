"""The command-line tools follow sim2real_checks.cli's conventions: ``--help`` works and lists
the common flags, and a bad argument is one stderr line, ``PROG: error: MESSAGE``, exit code 2."""
import os
import subprocess
import sys

import pytest

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
# tool -> arguments one of its own checks refuses (after argparse accepted them)
BAD_VALUES = {
    "generate": ["--sim-bag", "a.bag", "--real-bag", "b.bag", "--config", "topics.yaml",
                 "--out", "k.yaml", "--rollouts", "0"],
    "panda-kernels": ["--held-out", "1.5"],
    "vehicle-experiment": ["--missions", "0"],
}


def run_tool(tool, *args, cwd=None):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, tool), *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("tool", sorted(BAD_VALUES))
def test_help_lists_the_common_flags(tool):
    done = run_tool(tool, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {tool}")
    assert "--json PATH" in done.stdout and "--quiet" in done.stdout
    assert "--no-progress" not in done.stdout          # the alias is hidden


@pytest.mark.parametrize("tool", sorted(BAD_VALUES))
@pytest.mark.parametrize("case", ["unknown option", "bad value"])
def test_a_bad_argument_is_one_line_and_exit_code_2(tool, case, tmp_path):
    args = ["--no-such-option"] if case == "unknown option" else BAD_VALUES[tool]
    done = run_tool(tool, *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"{tool}: error: "), done.stderr
    assert done.stdout == ""
    assert os.listdir(tmp_path) == []                  # nothing written
