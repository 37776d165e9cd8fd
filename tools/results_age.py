"""Which committed results are older than the code they depend on.

A result is a JSON file under a ``results/`` folder (``PKG/results/**`` or ``bench/results/``).
It was measured at the commit its ``commit`` field names (tools write it through
``sim2real_checks.provenance``; ``X+changes``, measured with uncommitted changes, counts from the
first commit that committed that field: the changes were committed with it), or, for a file
without one, at the last commit that changed the file and no code outside the results folders.
The committed version is read (HEAD), not the working tree. It depends on the code of its package
(``PKG/`` for ``PKG/results/``) and on what
``tools/results_inputs.yaml`` adds; tests, documentation and results are not code. A result is
stale when a commit after its own changed that code, except a commit that also commits the result
and changes nothing outside the results folders (it brings what the run wrote beside it, e.g. an
identified URDF in ``results/``: commit a rerun apart from code changes; a commit that edits a
result together with code is no rerun).

``tools/results_inputs.yaml`` also lists the results known to be stale, each with the reason it
was not rerun; ``--check`` fails on a stale result that is not listed and on a listed one that
is no longer stale, so the list cannot drift either. Run by ``make test``
(tools/test/test_results_age.py); ``python tools/results_age.py`` prints the table.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import yaml

ROOT = Path(__file__).resolve().parents[1]
INPUTS_FILE = ROOT / "tools" / "results_inputs.yaml"
#: Never code: a change here does not make a result stale. Other files in results/ (a policy, an
#: identified URDF, kernels) are inputs of the results made from them.
NOT_CODE = (":(exclude,glob)**/*.md", ":(exclude,glob)**/results/**/*.json",
            ":(exclude,glob)**/results/**/*.txt", ":(exclude,glob)**/results/pages.yaml",
            ":(exclude,glob)**/test/**", ":(exclude,glob)**/*.png", ":(exclude,glob)reports/**")
#: The code outside the results folders (what a run writes there is its own).
OUTSIDE_RESULTS = (":(exclude,glob)**/results/**",)


class ResultsAgeError(Exception):
    """A results file or the inputs file cannot be read."""


@dataclass(frozen=True)
class ResultAge:
    """One committed result: where it was measured and the code commits since."""

    path: str
    commit: str
    inputs: List[str]
    newer_code: List[str]          # "<short hash> <subject>", newest first
    known_stale: Optional[str]     # the reason it is listed as stale, if it is

    @property
    def stale(self) -> bool:
        """A commit after the result's changed its code."""
        return bool(self.newer_code)


def git(root: Path, *args: str) -> str:
    """``git ARGS`` in ``root``; its output, or :class:`ResultsAgeError` with git's message."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise ResultsAgeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _is_ancestor(root: Path, commit: str, of: str) -> bool:
    return subprocess.run(["git", "merge-base", "--is-ancestor", commit, of], cwd=root,
                          capture_output=True, timeout=60).returncode == 0


def committed_results(root: Path) -> List[str]:
    """The results JSON files the repository holds (paths relative to ``root``)."""
    listed = git(root, "ls-files", "--", ":(glob)**/results/**/*.json", ":(glob)**/results/*.json")
    return sorted(p for p in listed.splitlines() if p)


def load_inputs(path: Path) -> Dict[str, dict]:
    """``{"inputs": {glob: [paths]}, "known_stale": {path: reason}}`` from the inputs file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ResultsAgeError(f"{path}: {exc}") from exc
    inputs, stale = data.get("inputs") or {}, data.get("known_stale") or {}
    if not isinstance(inputs, dict) or not all(isinstance(v, list) for v in inputs.values()):
        raise ResultsAgeError(f"{path}: 'inputs' must map a results glob to a list of paths")
    if not isinstance(stale, dict) or not all(isinstance(v, str) and v.strip() for v in stale.values()):
        raise ResultsAgeError(f"{path}: 'known_stale' must map a results file to its reason")
    return {"inputs": inputs, "known_stale": stale}


def inputs_of(result: str, extra: Dict[str, list]) -> List[str]:
    """The code ``result`` depends on: its package and the inputs file's additions."""
    parts = Path(result).parts
    own = [] if parts[0] == "bench" else [parts[0]]
    added = [p for pattern, paths in extra.items() if fnmatch.fnmatch(result, pattern) for p in paths]
    if not own + added:
        raise ResultsAgeError(f"{result}: no code listed for it in {INPUTS_FILE.name}")
    return sorted(set(own + added))


def _code_commits(root: Path, inputs: Sequence[str], since: Optional[str] = None) -> set:
    """The commits that changed ``inputs``' code outside the results folders (after ``since``)."""
    span = [f"{since}..HEAD"] if since else []
    return set(git(root, "log", "--format=%h", *span, "--", *inputs, *NOT_CODE, *OUTSIDE_RESULTS).split())


def _first_with_field(root: Path, result: str, history: Sequence[str], field: str) -> str:
    """The oldest commit of ``history`` (newest first) from which on ``result`` has held ``field``."""
    brought = history[0]
    for commit in history:
        try:
            data = json.loads(git(root, "show", f"{commit}:{result}"))
        except (ValueError, ResultsAgeError):
            break
        if not isinstance(data, dict) or data.get("commit") != field:
            break
        brought = commit
    return brought


def measured_at(root: Path, result: str, inputs: Sequence[str] = ()) -> str:
    """The commit ``result`` was measured at (module docstring). Without a ``commit`` field, the
    last commit that changed the file and no code of ``inputs`` outside the results folders (an
    edit of the file together with code is no rerun), else the commit that added it; with
    ``X+changes``, the first commit that committed that field."""
    history = git(root, "log", "--format=%h", "--", result).split()
    if not history:
        raise ResultsAgeError(f"{result}: not committed")
    last = history[0]
    try:
        data = json.loads(git(root, "show", f"HEAD:{result}"))
    except ValueError as exc:
        raise ResultsAgeError(f"{result}: not a readable JSON file ({exc})") from exc
    field = data.get("commit") if isinstance(data, dict) else None
    if not isinstance(field, str) or field in ("", "unknown"):
        code = _code_commits(root, inputs) if inputs else set()
        return next((c for c in history if c not in code), history[-1])
    commit, _, changes = field.partition("+")
    if not _is_ancestor(root, commit, "HEAD"):
        return last                      # e.g. measured on a branch that was rebased
    if changes and _is_ancestor(root, commit, last):
        # the commit that brought the measurement with its changes: the first to commit this
        # commit field (a later edit of the file is no rerun)
        return _first_with_field(root, result, history, field)
    return git(root, "rev-parse", "--short", commit).strip()


def result_age(root: Path, result: str, extra: Dict[str, list], known: Dict[str, str]) -> ResultAge:
    """``result``'s commit, inputs and the commits of those inputs since."""
    inputs = inputs_of(result, extra)
    commit = measured_at(root, result, inputs)
    newer = git(root, "log", "--format=%h %s", f"{commit}..HEAD", "--", *inputs, *NOT_CODE)
    # the commits that commit the result itself bring what its run wrote beside it (an identified
    # URDF, kernels, a policy in results/): they are the run's, not newer code, unless they also
    # change code outside the results folders (an edit of the file is no rerun)
    own = set(git(root, "log", "--format=%h", f"{commit}..HEAD", "--", result).split())
    outside = _code_commits(root, inputs, since=commit)
    newer_code = [line[:100] for line in newer.splitlines()
                  if line.split(" ", 1)[0] not in own or line.split(" ", 1)[0] in outside]
    return ResultAge(result, commit, inputs, newer_code, known.get(result))


def ages(root: Path = ROOT, inputs_file: Path = INPUTS_FILE) -> List[ResultAge]:
    """Every committed result's age."""
    spec = load_inputs(inputs_file)
    return [result_age(root, r, spec["inputs"], spec["known_stale"]) for r in committed_results(root)]


def problems(found: Sequence[ResultAge], known: Dict[str, str]) -> List[str]:
    """What ``--check`` fails on: unlisted stale results, listed fresh ones, listed absent ones."""
    out = [f"{a.path}: measured at {a.commit}, older than {len(a.newer_code)} commit(s) of "
           f"{', '.join(a.inputs)} (newest: {a.newer_code[0]}); rerun it or list it under known_stale"
           for a in found if a.stale and a.known_stale is None]
    out += [f"{a.path}: listed under known_stale but measured after its code changed; unlist it"
            for a in found if not a.stale and a.known_stale is not None]
    paths = {a.path for a in found}
    out += [f"{p}: listed under known_stale but not a committed result" for p in known if p not in paths]
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="results_age", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 on what the module docstring names")
    args = parser.parse_args(argv)
    try:
        found = ages()
        known = load_inputs(INPUTS_FILE)["known_stale"]
    except ResultsAgeError as exc:
        print(f"results_age: error: {exc}", file=sys.stderr)
        return 2
    for a in found:
        state = "stale (listed)" if a.stale and a.known_stale else "STALE" if a.stale else "current"
        print(f"{state:15} {a.commit:9} {a.path}")
    if args.check:
        bad = problems(found, known)
        for line in bad:
            print(f"results_age: {line}", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
