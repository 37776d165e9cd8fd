"""tools/test_summary.py: the closing line of make test counts every case and names each failure."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import test_summary  # noqa: E402

JUNIT = """<?xml version="1.0"?>
<testsuites><testsuite name="s">
<testcase classname="pkg.test.test_a" name="test_ok" time="0.1"/>
<testcase classname="pkg.test.test_a" name="test_skip"><skipped/></testcase>
<testcase classname="pkg.test.test_a" name="test_bad"><failure message="assert 179 &gt; 200">long
trace</failure></testcase>
<testcase classname="__main__.Fuzz" name="test_err"><error>

Traceback: boom</error></testcase>
</testsuite></testsuites>"""


def test_failures_are_named_above_the_closing_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "rostest").mkdir()
    (tmp_path / "rostest" / "r.xml").write_text(JUNIT)
    assert test_summary.main(str(tmp_path)) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "FAILED pkg.test.test_a::test_bad: assert 179 > 200",
        "FAILED rostest/r.xml: Fuzz::test_err: Traceback: boom",
        "tests: 1 passed, 2 failed, 1 skipped",
    ]


def test_an_unreadable_file_is_a_failure_and_no_tests_is_not_a_pass(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    assert test_summary.main(str(tmp_path)) == 1          # nothing ran
    (tmp_path / "cut.xml").write_text("<testsuite><testcase")
    assert test_summary.main(str(tmp_path)) == 1
    assert "FAILED cut.xml: unreadable JUnit XML" in capsys.readouterr().out
