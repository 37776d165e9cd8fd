"""The command-line conventions of the package's tools (sim2real_checks.cli): --help, one-line
argument errors with exit status 2, --json optional, --quiet with its old name --no-progress; and
the package's one base error (errors.py)."""
import json
import os

import pytest
from sim2real_checks import check_argument_error, check_help, run_tool

from trifinger_controllers import errors, grasps

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
TOOLS = ("alignment-success", "bo-validate", "evaluate", "optimize", "tables", "train-rpl")
#: The tools with progress output take --quiet (and --no-progress); the others do not.
PROGRESS = ("bo-validate", "evaluate", "optimize", "train-rpl")


def tool(name, *args, cwd=None, timeout=120):
    return run_tool(os.path.join(SCRIPTS, name), *args, cwd=cwd, timeout=timeout)


@pytest.mark.parametrize("name", TOOLS)
def test_help_lists_the_common_flags(name):
    check_help(os.path.join(SCRIPTS, name), name, quiet=name in PROGRESS)


#: Each tool's required arguments (OUT: a file in a folder that does not exist yet).
REQUIRED = {"alignment-success": [], "tables": [],
            "bo-validate": ["--bo", "search.json", "--out", "OUT"],
            "evaluate": ["--controller", "cpc", "--grasp", "tg", "--level", "3"],
            "optimize": ["--controller", "mp", "--level", "3", "--iterations", "1", "--episodes", "1", "--out", "OUT"],
            "train-rpl": ["--controller", "mp", "--steps", "1", "--out", "OUT"]}


@pytest.mark.parametrize("name", TOOLS)
def test_a_bad_argument_is_one_line_and_exit_status_2(name, tmp_path):
    required = [str(tmp_path / "new" / "out") if a == "OUT" else a for a in REQUIRED[name]]
    check_argument_error(os.path.join(SCRIPTS, name), name, [*required, "--no-such-flag"], str(tmp_path),
                         "unrecognized arguments: --no-such-flag")
    if name in ("alignment-success", "evaluate"):   # a bad value: the same one line
        check_argument_error(os.path.join(SCRIPTS, name), name, ["--trials", "x"], str(tmp_path))


def test_evaluate_without_json_prints_the_summary_and_writes_nothing(tmp_path):
    done = tool("evaluate", "--controller", "cpc", "--grasp", "tg", "--level", "3", "--trials", "1",
                "--seconds", "0.5", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith("CPC-TG level 3 (simulation, camera tracker, physics randomised, 1 trials, 0.5 s)")
    assert summary.endswith("%")                                   # no "-> FILE"
    assert os.listdir(tmp_path) == []


def test_tables_json_holds_the_figures_and_the_markdown_is_unchanged(tmp_path):
    results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results")
    rpl = [os.path.join(results, f"rpl_{c}_l3.json") for c in ("cpc", "mp")]
    plain = tool("tables", "--rpl", *rpl)
    out = tmp_path / "new" / "tables.json"
    with_json = tool("tables", "--rpl", *rpl, "--json", out)
    assert plain.returncode == with_json.returncode == 0, with_json.stderr
    assert with_json.stdout == plain.stdout and "| MP-PG w RPL |" in plain.stdout
    figures = json.loads(out.read_text())
    assert figures["label"] == "simulation" and "levels" not in figures
    assert [row["policy"] for row in figures["rpl"]] == ["CPC-TG", "CPC-TG w RPL", "MP-PG", "MP-PG w RPL"]
    with open(rpl[1], encoding="utf-8") as f:
        curve = json.load(f)["learning_curve"]
    assert figures["rpl_curves"][1]["policy"] == "MP-PG w RPL"
    assert [p["step"] for p in figures["rpl_curves"][1]["curve"]] == [p["step"] for p in curve]


def test_the_package_has_one_base_error_and_it_is_a_value_error():
    from trifinger_controllers.rpl_policy import PolicyFileError

    for cls in (errors.ConfigurationError, grasps.GraspError, PolicyFileError):
        assert issubclass(cls, errors.TrifingerError) and issubclass(cls, ValueError)


def test_the_nodes_share_one_configuration_error():
    pytest.importorskip("rospy")
    from trifinger_controllers import controller_node, sim_node

    assert controller_node.ConfigurationError is sim_node.ConfigurationError is errors.ConfigurationError
