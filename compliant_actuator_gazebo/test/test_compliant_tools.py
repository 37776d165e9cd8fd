"""The command-line tools follow sim2real_checks.cli's conventions: ``--help`` works and lists
the common flags, and a bad argument is one stderr line, ``PROG: error: MESSAGE``, exit code 2;
the package's errors share one base, CompliantError (a ValueError)."""
import os

import pytest
from sim2real_checks import check_conventions

from compliant_actuator_gazebo.description import DescriptionError
from compliant_actuator_gazebo.errors import CompliantError
from compliant_actuator_gazebo.manager import LayoutError

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
# tool -> arguments one of its own checks refuses (after argparse accepted them)
BAD_VALUES = {
    "reproduce_fig8": ["--duration", "0"],
    "reproduce_ilc": ["--max-iterations", "0"],
}


@pytest.mark.parametrize("tool", sorted(BAD_VALUES))
def test_the_tool_follows_the_conventions(tool, tmp_path):
    check_conventions(os.path.join(SCRIPTS, tool), tool, BAD_VALUES[tool], str(tmp_path))


def test_the_package_errors_share_one_base():
    for error in (DescriptionError, LayoutError):
        assert issubclass(error, CompliantError) and issubclass(error, ValueError)
    assert issubclass(CompliantError, ValueError)
