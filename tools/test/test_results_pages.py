"""tools/results_pages.py: each RESULTS.md is what its committed results give (issue 37)."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import results_pages  # noqa: E402


def test_every_committed_results_page_is_generated_from_its_files() -> None:
    found = results_pages.pages()
    assert {p.output.parent.name for p in found} >= {
        "bench", "trifinger_controllers", "compliant_actuator_gazebo", "kernel_manager_ros",
        "diffnea_ros", "realeasy_ros", "sim2real_pipeline", "panda_sim2real"}
    for page in found:
        assert page.output.read_text(encoding="utf-8") == results_pages.render(page), (
            f"{page.output} is out of date: python tools/results_pages.py")


def test_no_table_cell_over_25_words() -> None:
    for page in results_pages.pages():
        for line in page.output.read_text(encoding="utf-8").splitlines():
            if line.startswith("|"):
                assert all(len(cell.split()) <= 25 for cell in line.strip("|").split(" | ")), line


def _page(tmp_path: Path, spec: str, **files: dict) -> results_pages.Page:
    results = tmp_path / "pkg" / "results"
    results.mkdir(parents=True)
    (results / "pages.yaml").write_text(spec)
    for name, data in files.items():
        (results / f"{name}.json").write_text(json.dumps(data))
    return results_pages.Page(results / "pages.yaml")


SPEC = """title: T
tables:
  - title: Runs
    columns: [Name, Error, Drops]
    rows:
      - file: a.json
        cells: ["{name}", "{mean[error]:.2f}", "{drop_rate:.0%}"]
      - file: a.json
        each: trials.list
        cells: ["trial {trial}", "{error:.1f}", "{drop}"]
"""


def test_a_page_quotes_its_files_with_their_provenance(tmp_path: Path) -> None:
    data = {"name": "x|y", "mean": {"error": 0.123}, "drop_rate": 0.25, "label": "simulation",
            "commit": "abc1234", "command": "evaluate --trials 2",
            "trials": {"list": [{"trial": 0, "error": 1.04, "drop": False}, {"trial": 1, "error": 2.0, "drop": True}]}}
    text = results_pages.render(_page(tmp_path, SPEC, a=data))
    assert "| x\\|y | 0.12 | 25% |" in text
    assert "| trial 0 | 1.0 | False |" in text and "| trial 1 | 2.0 | True |" in text
    assert "- `results/a.json`: simulation; measured at abc1234; `evaluate --trials 2`" in text
    assert text.startswith(results_pages.HEADER)


@pytest.mark.parametrize("spec, files, message", [
    (SPEC, {}, "not a readable results file"),
    (SPEC, {"a": {"name": "n", "mean": {}, "drop_rate": 0.0}}, "KeyError 'error'"),
    (SPEC.replace('"{drop_rate:.0%}"]', ']'), {"a": {}}, "needs 'file' and 3 'cells'"),
    (SPEC, {"a": {"name": "n", "mean": {"error": 1.0}, "drop_rate": 0.0, "trials": {}}}, "no list 'trials.list'"),
    ("tables: []\n", {}, "needs a 'title'"),
])
def test_a_bad_spec_or_file_is_one_clear_error(tmp_path: Path, spec: str, files: dict, message: str) -> None:
    with pytest.raises(results_pages.ResultsPageError, match=message):
        results_pages.render(_page(tmp_path, spec, **files))


def test_a_null_figure_is_a_dash_and_a_file_outside_the_package_keeps_its_stale_mark(tmp_path: Path) -> None:
    bench = tmp_path / "bench" / "results"
    bench.mkdir(parents=True)
    (bench / "speed.json").write_text(json.dumps({"median": None, "label": "simulation"}))
    spec = ("title: T\ntables:\n  - columns: [Median]\n    rows:\n"
            "      - {file: ../../bench/results/speed.json, cells: ['{median:.3f}']}\n")
    text = results_pages.render(_page(tmp_path, spec), stale={"bench/results/speed.json": "rerun it"})
    assert f"| {results_pages.NONE} |" in text
    assert ("- `../../bench/results/speed.json`: simulation; measured at a commit not recorded in the file. "
            "**Stale** (older than its code): rerun it") in text


def test_a_key_made_of_digits_is_found() -> None:
    fields = {"throughput": {"1": 10.0, "256": 2500.0}, "list": [7, 8]}
    assert results_pages._cell("{throughput[256]:.0f} {throughput[1]:.1f} {list[1]}", fields, "here") == "2500 10.0 8"
