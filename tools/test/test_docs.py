"""CONTRIBUTING.md, "Package README sections": the READMEs are reference, not notebooks. The
top-level README stays under 1,500 words, and no table cell of any README holds more than 25
words (detail goes into prose under the table; results into the packages' results pages)."""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
READMES = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "**", "README.md"), recursive=True)
                 if not os.path.relpath(p, ROOT).startswith(("build", ".venv", "reports")))
MAX_CELL_WORDS = 25
MAX_README_WORDS = 1500
RULE = re.compile(r"^\|[-| :]+\|$")


def long_cells(path: str) -> list[str]:
    found = []
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.startswith("|") or RULE.match(line):
                continue
            for cell in re.split(r"(?<!\\)\|", line.strip().strip("|")):
                if len(cell.split()) > MAX_CELL_WORDS:
                    found.append(f"{path}:{number}: {len(cell.split())} words: {cell.strip()[:50]}")
    return found


def test_the_top_level_readme_is_short():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        words = len(f.read().split())
    assert words < MAX_README_WORDS


@pytest.mark.parametrize("path", READMES)
def test_no_table_cell_is_a_paragraph(path):
    assert long_cells(path) == []
