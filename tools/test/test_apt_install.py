"""`make apt` on a machine that lacks packages: it must list them, not abort (issue 15)."""
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "apt_install.sh"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_missing_packages_are_listed_without_aborting(tmp_path: Path) -> None:
    listing = tmp_path / "packages.txt"
    listing.write_text("# a comment\nbash   # installed on every Debian\n\nsim2real-no-such-package\n")
    done = _run("--dry-run", str(listing))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "apt: missing 1: sim2real-no-such-package"


def test_nothing_missing_says_so(tmp_path: Path) -> None:
    listing = tmp_path / "packages.txt"
    listing.write_text("bash\ncoreutils\n")
    done = _run("--dry-run", str(listing))
    assert done.returncode == 0, done.stderr
    assert "all packages of packages.txt are installed" in done.stdout


def test_unreadable_list_is_one_clear_error(tmp_path: Path) -> None:
    done = _run("--dry-run", str(tmp_path / "absent.txt"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"apt: error: cannot read package list '{tmp_path / 'absent.txt'}'"
