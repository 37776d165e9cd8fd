"""tools/results_age.py: a committed result older than the code it depends on is found (issue 37)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import results_age  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, files: dict, message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@127.0.0.1", "commit", "-qm", message)
    return _git(repo, "rev-parse", "--short", "HEAD")


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    _commit(tmp_path, {"pkg/src/model.py": "a = 1\n", "lib/core.py": "b = 1\n"}, "code")
    return tmp_path


def _age(repo: Path, result: str, extra=None, known=None) -> results_age.ResultAge:
    return results_age.result_age(repo, result, extra or {}, known or {})


def test_a_result_goes_stale_when_its_package_changes_and_not_for_docs_or_tests(repo: Path) -> None:
    _commit(repo, {"pkg/results/r.json": json.dumps({"x": 1})}, "result")
    assert not _age(repo, "pkg/results/r.json").stale
    _commit(repo, {"pkg/README.md": "docs\n", "pkg/test/test_model.py": "", "other/x.py": ""}, "not code")
    assert not _age(repo, "pkg/results/r.json").stale
    _commit(repo, {"pkg/src/model.py": "a = 2\n"}, "model changed")
    age = _age(repo, "pkg/results/r.json")
    assert age.stale and age.newer_code[0].endswith("model changed")
    _commit(repo, {"pkg/results/r.json": json.dumps({"x": 2})}, "rerun")
    assert not _age(repo, "pkg/results/r.json").stale


def test_the_commit_field_wins_over_the_files_own_commit(repo: Path) -> None:
    measured = _git(repo, "rev-parse", "--short", "HEAD")
    _commit(repo, {"lib/core.py": "b = 2\n"}, "lib changed")
    # committed after the change, but measured before it
    _commit(repo, {"bench/results/b.json": json.dumps({"commit": measured})}, "result")
    age = _age(repo, "bench/results/b.json", extra={"bench/results/b*.json": ["lib"]})
    assert age.commit == measured and age.inputs == ["lib"] and age.stale
    with pytest.raises(results_age.ResultsAgeError, match="no code listed"):
        _age(repo, "bench/results/b.json")  # a bench result must say what it measured


def test_a_result_measured_with_changes_counts_from_the_commit_that_added_it(repo: Path) -> None:
    base = _git(repo, "rev-parse", "--short", "HEAD")
    # measured with pkg/src changed, committed together with that change
    _commit(repo, {"pkg/src/model.py": "a = 5\n",
                   "pkg/results/r.json": json.dumps({"commit": base + "+changes"})}, "code and result")
    age = _age(repo, "pkg/results/r.json")
    assert age.commit == _git(repo, "rev-parse", "--short", "HEAD") and not age.stale
    # a commit field that is not in the history (a rebased branch): the file's own commit
    _commit(repo, {"pkg/results/r.json": json.dumps({"commit": "0123abc"})}, "foreign commit")
    assert _age(repo, "pkg/results/r.json").commit == _git(repo, "rev-parse", "--short", "HEAD")


def test_what_a_run_wrote_beside_its_result_is_committed_with_it_without_making_it_stale(repo: Path) -> None:
    measured = _git(repo, "rev-parse", "--short", "HEAD")
    # the run wrote an identified URDF into results/ (code for later results) beside its JSON
    _commit(repo, {"pkg/results/r.json": json.dumps({"commit": measured}),
                   "pkg/results/identified.urdf": "<robot/>\n"}, "rerun with its URDF")
    assert not _age(repo, "pkg/results/r.json").stale
    _commit(repo, {"pkg/results/identified.urdf": "<robot name='x'/>\n"}, "URDF edited")
    assert _age(repo, "pkg/results/r.json").stale


def test_an_edit_of_a_result_committed_with_code_is_no_rerun(repo: Path) -> None:
    measured = _git(repo, "rev-parse", "--short", "HEAD")
    _commit(repo, {"pkg/results/r.json": json.dumps({"commit": measured, "path": "/abs/x"})}, "result")
    # the file's paths rewritten in the same commit as a code change: still measured before it
    _commit(repo, {"pkg/results/r.json": json.dumps({"commit": measured, "path": "x"}),
                   "pkg/src/model.py": "a = 3\n"}, "code and an edited result")
    age = _age(repo, "pkg/results/r.json")
    assert age.stale and age.newer_code[0].endswith("code and an edited result")
    # the same for a file without a commit field and one measured with changes
    _commit(repo, {"pkg/results/s.json": "{}"}, "legacy result")
    legacy = _git(repo, "rev-parse", "--short", "HEAD")
    _commit(repo, {"pkg/results/s.json": '{"path": "x"}', "pkg/src/model.py": "a = 6\n"}, "code, legacy edited")
    assert _age(repo, "pkg/results/s.json").commit == legacy and _age(repo, "pkg/results/s.json").stale
    _commit(repo, {"pkg/results/t.json": json.dumps({"commit": legacy})}, "an older run at the same commit")
    _commit(repo, {"pkg/src/model.py": "a = 7\n",
                   "pkg/results/t.json": json.dumps({"commit": legacy + "+changes"})}, "measured with changes")
    brought = _git(repo, "rev-parse", "--short", "HEAD")
    _commit(repo, {"pkg/results/t.json": json.dumps({"commit": legacy + "+changes", "path": "x"}),
                   "pkg/src/model.py": "a = 8\n"}, "code, t edited")
    assert _age(repo, "pkg/results/t.json").commit == brought and _age(repo, "pkg/results/t.json").stale


def test_the_committed_result_counts_not_the_working_tree(repo: Path) -> None:
    _commit(repo, {"pkg/results/r.json": "{}"}, "result")
    _commit(repo, {"pkg/src/model.py": "a = 4\n"}, "model changed")
    (repo / "pkg" / "results" / "r.json").write_text(json.dumps({"rerun": "not committed yet"}))
    assert _age(repo, "pkg/results/r.json").stale


def test_files_in_results_other_than_figures_are_inputs(repo: Path) -> None:
    _commit(repo, {"pkg/results/r.json": "{}"}, "result")
    _commit(repo, {"pkg/results/pages.yaml": "title: t\n", "pkg/results/table.txt": "t\n",
                   "pkg/results/other.json": "{}", "pkg/RESULTS.md": "r\n"}, "pages")
    assert not _age(repo, "pkg/results/r.json").stale
    _commit(repo, {"pkg/results/policy.pt": "weights"}, "a policy the result reads")
    assert _age(repo, "pkg/results/r.json").stale


def test_check_fails_on_unlisted_stale_and_listed_fresh_results(repo: Path) -> None:
    _commit(repo, {"pkg/results/old.json": "{}", "pkg/results/new.json": "{}"}, "results")
    _commit(repo, {"pkg/src/model.py": "a = 3\n"}, "model changed")
    _commit(repo, {"pkg/results/new.json": '{"rerun": 1}'}, "rerun one")
    found = [_age(repo, r) for r in results_age.committed_results(repo)]
    assert [a.path for a in found if a.stale] == ["pkg/results/old.json"]
    assert len(results_age.problems(found, {})) == 1
    known = {"pkg/results/old.json": "too long to rerun", "pkg/results/new.json": "was stale"}
    found = [_age(repo, r, known=known) for r in results_age.committed_results(repo)]
    bad = results_age.problems(found, {**known, "pkg/results/gone.json": "deleted"})
    assert len(bad) == 2 and "new.json" in bad[0] and "gone.json" in bad[1]


def test_unreadable_inputs_and_results_are_one_clear_error(repo: Path, tmp_path: Path) -> None:
    bad = tmp_path / "inputs.yaml"
    bad.write_text("inputs: [1, 2]\n")
    with pytest.raises(results_age.ResultsAgeError, match="'inputs' must map"):
        results_age.load_inputs(bad)
    _commit(repo, {"pkg/results/broken.json": "{not json"}, "broken")
    with pytest.raises(results_age.ResultsAgeError, match="not a readable JSON"):
        _age(repo, "pkg/results/broken.json")


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the repository's history")
def test_every_committed_result_is_current_or_listed_as_stale() -> None:
    spec = results_age.load_inputs(results_age.INPUTS_FILE)
    bad = results_age.problems(results_age.ages(), spec["known_stale"])
    assert not bad, "\n".join(bad)
