"""Finding the roslaunch that started a node (launch_end.py), with stand-in launchers: a script
named roslaunch is one, a script named rostest is not."""
import os
import subprocess
import sys
import textwrap

import pytest

from panda_pairs.launch_end import parent_roslaunch

LAUNCHER = textwrap.dedent("""\
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    print(child.pid, flush=True)
    child.wait()
    """)


@pytest.mark.parametrize("name, is_roslaunch", [("roslaunch", True), ("rostest", False)])
def test_the_parent_roslaunch_is_found_by_its_name(tmp_path, name, is_roslaunch):
    script = tmp_path / name
    script.write_text(LAUNCHER)
    launcher = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        child = int(launcher.stdout.readline())
        assert parent_roslaunch(child) == (launcher.pid if is_roslaunch else None)
        os.kill(child, 9)
        launcher.wait(timeout=10)
    finally:
        launcher.kill()
        launcher.wait()


def test_no_parent_roslaunch_for_this_process():
    assert parent_roslaunch() is None         # pytest's parent is a shell, not roslaunch
