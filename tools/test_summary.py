"""Sum the JUnit XML files of a test run into one closing line: 'tests: N passed, N failed'."""
import glob
import os
import sys
import xml.etree.ElementTree as ET


def main(folder: str) -> int:
    passed = failed = skipped = 0
    for path in glob.glob(os.path.join(folder, "**", "*.xml"), recursive=True):
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            failed += 1
            continue
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
