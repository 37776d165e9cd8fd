"""The tools' shared conventions: one-line argument errors (exit 2), the common flags, the
error wrapper and the JSON writer."""
import json
import os

import numpy as np
import pytest

from sim2real_checks.cli import ToolParser, add_common, run
from sim2real_checks.outputs import output_folder, plain, write_json


class ToolError(Exception):
    pass


def parser() -> ToolParser:
    p = ToolParser(prog="tool", description="a tool")
    p.add_argument("--count", type=int, required=True)
    add_common(p)
    return p


def test_argument_errors_are_one_line_with_exit_code_2(capsys):
    with pytest.raises(SystemExit) as exc:
        parser().parse_args(["--count", "x"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tool: error: argument --count")


def test_common_flags_json_optional_quiet_and_its_alias():
    args = parser().parse_args(["--count", "1"])
    assert args.json is None and args.quiet is False
    assert parser().parse_args(["--count", "1", "--quiet", "--json", "a.json"]).quiet
    assert parser().parse_args(["--count", "1", "--no-progress"]).quiet
    no_progress = ToolParser(prog="t")
    add_common(no_progress, progress=False)
    with pytest.raises(SystemExit):
        no_progress.parse_args(["--quiet"])


@pytest.mark.parametrize("raised, code", [(ToolError("bad file x"), 2), (FileNotFoundError("missing"), 2),
                                          (KeyboardInterrupt(), 130), (None, 0)])
def test_run_turns_the_package_error_into_one_line(capsys, raised, code):
    def main(argv):
        if raised is not None:
            raise raised
        return 0
    with pytest.raises(SystemExit) as exc:
        run(main, prog="tool", errors=(ToolError,))
    assert exc.value.code == code
    err = capsys.readouterr().err
    assert err == "" if raised is None else err.count("\n") == 1 and err.startswith("tool: ")


def test_run_lets_other_errors_through():
    def main(argv):
        raise ValueError("a bug")
    with pytest.raises(ValueError):
        run(main, prog="tool", errors=(ToolError,))


def test_write_json_creates_the_folder_and_writes_plain_values(tmp_path):
    path = tmp_path / "new" / "deeper" / "out.json"
    write_json(str(path), {"a": np.arange(3), "b": np.float32(0.5), 1: (np.int64(2), "x")})
    assert json.loads(path.read_text()) == {"a": [0, 1, 2], "b": 0.5, "1": [2, "x"]}
    assert os.listdir(path.parent) == ["out.json"]          # no temporary file left
    write_json(None, {"ignored": 1})
    assert plain({"m": np.eye(2)}) == {"m": [[1.0, 0.0], [0.0, 1.0]]}


def test_write_json_keeps_the_old_file_when_the_figures_cannot_be_written(tmp_path):
    path = tmp_path / "out.json"
    write_json(str(path), {"ok": 1})
    with pytest.raises(TypeError):
        write_json(str(path), {"bad": object()})
    assert json.loads(path.read_text()) == {"ok": 1}
    assert os.listdir(tmp_path) == ["out.json"]
    write_json(str(path), {"nan": float("nan"), "inf": np.array([1.0, np.inf])}, allow_nan=False)
    assert json.loads(path.read_text()) == {"nan": None, "inf": [1.0, None]}     # strict JSON


def test_output_folder_creates_the_folder_or_names_the_flag(tmp_path):
    output_folder(str(tmp_path / "a" / "b" / "out.yaml"), "--out")
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "file").write_text("a file, not a folder")
    with pytest.raises(OSError, match=r"^--out: cannot create its folder: "):
        output_folder(str(tmp_path / "file" / "out.yaml"), "--out")


def test_save_figure_writes_the_plot_into_a_new_folder_and_closes_it(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sim2real_checks.outputs import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = tmp_path / "plots" / "line.png"
    save_figure(fig, str(path), dpi=50)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and os.listdir(path.parent) == ["line.png"]
    assert not plt.fignum_exists(fig.number)


def test_inside_a_tool_run_every_json_records_the_commit_and_the_command(tmp_path):
    from sim2real_checks.outputs import tool_run
    script = os.path.join(str(tmp_path), "my_pkg", "scripts", "my-tool")
    inside, own, after = (tmp_path / n for n in ("inside.json", "own.json", "after.json"))
    with tool_run("my-tool", ["--json", str(inside), "--seed", "3"], script=script) as run:
        write_json(str(inside), {"x": 1})
        write_json(str(own), {"x": 2, "commit": "abc"})
    write_json(str(after), {"x": 3})
    figures = json.loads(inside.read_text())
    assert figures["x"] == 1 and figures["commit"] == run["commit"] and figures["commit"]
    assert figures["command"] == f"rosrun my_pkg my-tool --json {inside} --seed 3"
    assert json.loads(own.read_text()) == {"x": 2, "commit": "abc"}      # a tool's own provenance wins
    assert json.loads(after.read_text()) == {"x": 3}                     # outside a run: unchanged


def test_a_command_names_paths_in_the_checkout_from_its_root():
    from sim2real_checks.outputs import provenance
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    command = provenance("tool", [os.path.join(root, "results", "a.json"), "/elsewhere/b.json"])["command"]
    assert command == "tool results/a.json /elsewhere/b.json"


def test_a_committed_result_names_paths_in_the_checkout_from_its_root(tmp_path):
    from sim2real_checks.outputs import is_committed_result
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    result = os.path.join(root, "build", "results", f"test_portable_{os.getpid()}.json")
    work = tmp_path / "results" / "work.json"          # outside the checkout: a working file
    figures = {"out": os.path.join(root, "build", "x.urdf"), "plots": [os.path.join(root, "a.png")],
               "n": 3, "elsewhere": "/elsewhere/b.json"}
    try:
        write_json(result, figures)
        assert json.loads(open(result).read()) == {"out": "build/x.urdf", "plots": ["a.png"], "n": 3,
                                                  "elsewhere": "/elsewhere/b.json"}
    finally:
        if os.path.exists(result):
            os.remove(result)
    write_json(str(work), figures)
    assert json.loads(work.read_text()) == figures
    assert is_committed_result(os.path.join(root, "bench", "results", "a.json"))
    assert not is_committed_result(os.path.join(root, "build", "a.json"))
    assert not is_committed_result(str(work))
