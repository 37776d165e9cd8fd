"""Sum the JUnit XML files of a test run into one closing line: 'tests: N passed, N failed'.

The failed tests are listed just above that line (name and the first line of the failure), so the
tail of a CI log says what failed, not only how many.
"""
import glob
import os
import sys
import xml.etree.ElementTree as ET
from typing import List, Optional


def _first_line(text: Optional[str]) -> str:
    """The first non-empty line of a failure text, cut to 200 characters."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def main(folder: str) -> int:
    passed = skipped = 0
    failures: List[str] = []
    for path in sorted(glob.glob(os.path.join(folder, "**", "*.xml"), recursive=True)):
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as exc:
            failures.append(f"{os.path.relpath(path, folder)}: unreadable JUnit XML ({exc})")
            continue
        for case in root.iter("testcase"):
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            if bad is not None:
                name = f"{case.get('classname', '?')}::{case.get('name', '?')}"
                if name.startswith("__main__."):        # a rostest's: its file names it
                    name = f"{os.path.relpath(path, folder)}: {name[len('__main__.'):]}"
                why = _first_line(bad.get("message")) or _first_line(bad.text)
                failures.append(f"{name}: {why}" if why else name)
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    for line in failures:
        print(f"FAILED {line}")
    print(f"tests: {passed} passed, {len(failures)} failed, {skipped} skipped")
    return 1 if failures or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
