"""Bayesian optimisation (trifinger_controllers.optimization, scripts/optimize; paper 004 §V-§VI)."""
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from sim2real_checks import run

from trifinger_controllers.optimization import Evaluation, optimise, validate
from trifinger_controllers.controllers import load_params
from trifinger_controllers.errors import TrifingerError
from trifinger_controllers.params import Parameter, ParameterSet

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "optimize")
VALIDATE = os.path.join(os.path.dirname(__file__), "..", "scripts", "bo-validate")

SPACE = ParameterSet("toy", [
    Parameter("a", 1.0, 0.0, 2.0),
    Parameter("b", 1.0, 0.1, 10.0, log=True),
    Parameter("c", 0.0, -1.0, 1.0),
])
OPTIMUM = {"a": 1.3, "b": 10 ** 0.2, "c": -0.4}


def toy(params: ParameterSet) -> float:
    """A smooth function with its maximum 0 at OPTIMUM (b on a log scale, as BO sees it)."""
    return -((params.a - 1.3) ** 2 + (np.log10(params.b) - 0.2) ** 2 + (params.c + 0.4) ** 2)


@pytest.fixture(scope="module")
def toy_result():
    return optimise(toy, SPACE, iterations=10, initial=4, seed=3)


def test_bo_improves_on_random_initial_points(toy_result):
    values = [e.objective for e in toy_result.evaluations]
    assert [e.kind for e in toy_result.evaluations] == ["initial"] * 4 + ["bo"] * 10
    assert toy_result.best_value == max(values)
    assert toy_result.best_value > max(values[:4])
    assert toy_result.best_value > -0.02  # within ~0.14 of the optimum in every coordinate
    for name, value in OPTIMUM.items():
        assert toy_result.best[name] == pytest.approx(value, abs=0.25 if name != "b" else 0.6)
    assert toy_result.gp is not None and toy_result.gp.kernel.startswith("Matern(nu=2.5)")
    assert set(toy_result.gp.lengthscales) == {"a", "b", "c"}


def test_bo_is_deterministic_for_a_seed(toy_result):
    # iteration i depends on (seed, i) and the data only: a shorter run is a prefix of the longer
    again = optimise(toy, SPACE, iterations=3, initial=4, seed=3)
    assert [e.vector for e in again.evaluations] == [e.vector for e in toy_result.evaluations[:7]]
    assert [e.objective for e in again.evaluations] == [e.objective for e in toy_result.evaluations[:7]]
    other = optimise(toy, SPACE, iterations=0, initial=4, seed=4)
    assert other.evaluations[0].vector != toy_result.evaluations[0].vector


def test_subset_search_keeps_the_other_values():
    space = SPACE.replace(c=0.25)
    result = optimise(toy, space, iterations=1, initial=2, seed=0, names=["a"])
    assert all(e.values["c"] == 0.25 and e.values["b"] == 1.0 for e in result.evaluations)
    assert len(result.evaluations[0].vector) == 1
    with pytest.raises(ValueError, match="distinct names"):
        optimise(toy, SPACE, iterations=1, names=["a", "nope"])
    with pytest.raises(ValueError, match="not finite"):
        optimise(lambda p: float("nan"), SPACE, iterations=0, initial=2)


def load_cli():
    """scripts/optimize as a module (bad-input cases run in-process: no interpreter start-up)."""
    loader = importlib.machinery.SourceFileLoader("optimize_cli", SCRIPT)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


CLI = load_cli()


def run_cli_inprocess(capsys, *args):
    """The script's ``__main__`` path in-process: its exit status and stderr (without the import
    banners of the simulation's libraries, which the script silences at the file-descriptor level)."""
    from trifinger_controllers import evaluation, optimization  # noqa: F401
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        run(lambda argv: CLI.main(list(args)), prog="optimize", errors=(TrifingerError,))
    return exited.value.code, capsys.readouterr().err


def run_cli(*args):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_cli_writes_a_loadable_parameter_file(tmp_path):
    """A real (tiny) run: MP on level 3, 2 random + 1 BO candidates of one 1.5 s episode; the
    output folders are created."""
    intervals = tmp_path / "intervals.yaml"
    intervals.write_text("path_speed: [0.02, 0.2]\n")
    out, out_json = tmp_path / "params" / "mp.yaml", tmp_path / "figures" / "mp.json"
    done = run_cli("--controller", "mp", "--level", "3", "--iterations", "1", "--initial", "2",
                   "--episodes", "1", "--seconds", "1.5", "--seed", "1",
                   "--parameters", "path_speed,kp", "--intervals", str(intervals),
                   "--out", str(out), "--json", str(out_json), "--no-progress")
    assert done.returncode == 0, done.stderr
    params = load_params("mp", out)
    data = json.loads(out_json.read_text())
    assert data["label"] == "simulation" and len(data["evaluations"]) == 3
    assert data["best"] == params.to_dict()
    assert data["intervals"]["path_speed"] == [0.02, 0.2]
    assert all(0.02 <= e["values"]["path_speed"] <= 0.2 for e in data["evaluations"])
    assert all(e["summary"]["mean_all"]["cumulative_reward"] == pytest.approx(e["objective"])
               for e in data["evaluations"])
    # bo-validate: the 2 best candidates re-scored on another episode, the better one kept
    chosen, chosen_json = tmp_path / "mp_validated.yaml", tmp_path / "mp_validated.json"
    done = subprocess.run([sys.executable, VALIDATE, "--bo", str(out_json), "--top", "2", "--episodes", "1",
                           "--seed", "2", "--out", str(chosen), "--json", str(chosen_json), "--quiet"],
                          capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(chosen_json.read_text())
    scores = [c["validation"] for c in result["candidates"]]
    assert len(scores) == 3 and result["candidates"][-1]["index"] == -1       # the manual set too
    assert scores[result["chosen"]] == max(scores) and result["seed"] == 2
    assert load_params("mp", chosen).to_dict() == result["candidates"][result["chosen"]]["values"]
    same_seed = subprocess.run([sys.executable, VALIDATE, "--bo", str(out_json), "--seed", "1", "--out",
                                str(chosen)], capture_output=True, text=True, timeout=120)
    assert same_seed.returncode == 2 and "the search's own seed" in same_seed.stderr


def test_validate_chooses_on_the_validation_episodes():
    """The best training objective is a lucky draw: validation re-scores the top candidates
    (distinct values only) and chooses where they score best."""
    def evaluation(index, a, objective):
        return Evaluation(index, "bo", [a], SPACE.replace(a=a).to_dict(), objective, 0.0)
    searched = [evaluation(0, 0.2, -5.0), evaluation(1, 1.9, -0.1), evaluation(2, 1.9, -0.1),
                evaluation(3, 1.2, -0.3), evaluation(4, 0.5, -0.4)]
    scored, chosen = validate(searched, toy, SPACE, top=3)
    assert [v.index for v in scored] == [1, 3, 4]          # the repeat of 1.9 is not re-scored
    assert scored[chosen].values["a"] == 1.2                # nearest the true optimum a = 1.3
    assert scored[chosen].validation == pytest.approx(toy(SPACE.replace(a=1.2)))
    with pytest.raises(ValueError, match="top"):
        validate(searched, toy, SPACE, top=0)
    # the manual set is kept unless a candidate beats it on the validation episodes
    scored, chosen = validate(searched, toy, SPACE, top=3, incumbent=SPACE.replace(a=1.3).to_dict())
    assert scored[chosen].index == -1 and scored[chosen].train is None
    scored, chosen = validate(searched, toy, SPACE, top=3, incumbent=SPACE.replace(a=0.1).to_dict())
    assert scored[chosen].values["a"] == 1.2
    # ... and without dropping the cube more often than the incumbent there
    dropping = DroppingToy(lambda a: a > 1.0)     # 1.9 and 1.2 drop on validation, 0.5 does not
    scored, chosen = validate(searched, dropping, SPACE, top=3, incumbent=SPACE.replace(a=0.1).to_dict())
    assert scored[chosen].values["a"] == 0.5 and scored[chosen].summary["drop_rate"] == 0.0
    scored, chosen = validate(searched, DroppingToy(lambda a: True), SPACE, top=3,
                              incumbent=SPACE.replace(a=0.1).to_dict())
    assert scored[chosen].values["a"] == 1.2                # all drop alike: the score decides


class DroppingToy:
    """The toy objective with a summary whose drop rate is 0.2 where ``drops(a)``."""

    def __init__(self, drops) -> None:
        self.drops, self.summaries = drops, []

    def __call__(self, params) -> float:
        a = params.to_dict()["a"]
        self.summaries.append({"drop_rate": 0.2 if self.drops(a) else 0.0})
        return toy(params)


@pytest.mark.parametrize("content, message", [
    ("nope: [0, 1]\n", "unknown parameter 'nope'"),
    ("kp: [10, 5]\n", "must be below"),
    ("kp: [1, 5]\n", "not inside"),
    ("kp: 3\n", "expected [low, high]"),
])
def test_cli_rejects_bad_intervals(tmp_path, capsys, content, message):
    intervals = tmp_path / "intervals.yaml"
    intervals.write_text(content)
    code, stderr = run_cli_inprocess(
        capsys, "--controller", "mp", "--level", "3", "--iterations", "1", "--episodes", "1",
        "--intervals", str(intervals), "--out", str(tmp_path / "out" / "p.yaml"),
        "--json", str(tmp_path / "o.json"))
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("optimize: error: ") and message in lines[0], stderr
    assert not (tmp_path / "out").exists()   # a rejected command leaves nothing behind


@pytest.mark.parametrize("args, message", [
    (["--controller", "xyz"], "invalid choice"),
    (["--controller", "mp", "--episodes", "0"], "--episodes must be >= 1"),
    (["--controller", "mp", "--parameters", "kp,bogus"], "unknown parameter(s) bogus"),
    (["--controller", "mp", "--out", "A_FILE/p.yaml"], "--out: cannot create its folder"),
    (["--controller", "mp", "--initial", "1"], "--initial must be >= 2"),
])
def test_cli_rejects_bad_arguments(tmp_path, capsys, args, message):
    (tmp_path / "A_FILE").write_text("a file, not a folder")
    base = {"--level": "3", "--iterations": "1", "--episodes": "1",
            "--out": str(tmp_path / "p.yaml"), "--json": str(tmp_path / "o.json")}
    for key, value in zip(args[::2], args[1::2]):
        base[key] = str(tmp_path / value) if value.startswith("A_FILE") else value
    code, stderr = run_cli_inprocess(capsys, *[x for kv in base.items() for x in kv])
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("optimize: error: ") and message in lines[0], stderr
