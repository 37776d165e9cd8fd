"""Output files of the tools and libraries: numpy values as plain data (for JSON and YAML), JSON
figures and plots written atomically into a folder created on demand (CONTRIBUTING.md, "Tools").
Imports without ROS."""
from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator, Mapping
from typing import Any, Optional


def plain(value: Any, finite: bool = False) -> Any:
    """``value`` as plain Python data: numpy arrays and scalars to lists and numbers, tuples to
    lists, mapping keys to strings; with ``finite``, NaN and infinities to None (strict JSON);
    anything else unchanged."""
    if isinstance(value, Mapping):
        return {str(k): plain(v, finite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, finite) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "dtype"):   # numpy arrays and scalars
        return plain(value.tolist(), finite)
    if finite and isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def output_folder(path: str, flag: str) -> None:
    """Create the folder of the output ``path`` (a tool's ``flag``); call it once the inputs are
    checked, so a rejected command leaves nothing behind, and before the long work, so an output
    that cannot be written fails at once. OSError: one line naming ``flag``."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    except OSError as exc:
        raise OSError(f"{flag}: cannot create its folder: {exc}") from None


@contextlib.contextmanager
def atomic_path(path: str, suffix: str = "") -> Iterator[str]:
    """A temporary path beside ``path`` (ending in ``suffix``, for writers that insist on an
    extension), its folder created; renamed to ``path`` when the block ends without an error,
    removed otherwise: a reader never sees half a file, and a failed write keeps the old one."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp{suffix}"
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def save_figure(fig: Any, path: str, dpi: int = 110) -> None:
    """Save the matplotlib figure ``fig`` to ``path`` (its format from the extension) atomically,
    creating the folder, and close it."""
    import matplotlib.pyplot as plt

    try:
        with atomic_path(path, suffix=os.path.splitext(path)[1]) as tmp:
            fig.savefig(tmp, dpi=dpi)
    finally:
        plt.close(fig)


_TOOL_RUN: Optional[dict] = None     # the running tool's provenance (tool_run)


@contextlib.contextmanager
def tool_run(prog: str, argv: Optional[list] = None, script: Optional[str] = None) -> Iterator[dict]:
    """Inside the block (cli.run wraps a tool's main in it), :func:`write_json` adds the tool's
    :func:`provenance` (its commit read when the block starts, i.e. when its code was loaded) to
    every mapping written without a ``commit`` of its own: each results JSON says which commit
    and command produced it."""
    global _TOOL_RUN
    outer, _TOOL_RUN = _TOOL_RUN, provenance(tool_command(prog, script), argv)
    try:
        yield _TOOL_RUN
    finally:
        _TOOL_RUN = outer


def tool_command(prog: str, script: Optional[str] = None) -> str:
    """How a user runs the tool ``prog``: ``rosrun PKG PROG`` for a package's script (in
    ``PKG/scripts/`` or catkin's ``devel/lib/PKG/``), else ``prog``."""
    import sys
    where = os.path.abspath(script or sys.argv[0])
    parent = os.path.basename(os.path.dirname(where))
    if parent == "scripts":
        return f"rosrun {os.path.basename(os.path.dirname(os.path.dirname(where)))} {prog}"
    if os.path.basename(os.path.dirname(os.path.dirname(where))) == "lib":
        return f"rosrun {parent} {prog}"
    return prog


def write_json(path: Optional[str], figures: Any, sort_keys: bool = True, allow_nan: bool = True) -> None:
    """Write ``figures`` (made :func:`plain`) to ``path`` if given, creating its folder; the file
    is replaced atomically. ``allow_nan=False``: strict JSON, NaN and infinities written as null
    (a long run's figures are never lost to one non-finite value). Inside a tool run
    (:func:`tool_run`) a mapping without ``commit`` gets the tool's commit and command. In a
    committed result (:func:`is_committed_result`) paths inside the checkout are written from its
    root, so the file reads the same on every machine (working files keep absolute paths: the
    pipeline reopens them)."""
    if not path:
        return
    if _TOOL_RUN is not None and isinstance(figures, Mapping) and "commit" not in figures:
        figures = {**figures, **_TOOL_RUN}
    if is_committed_result(path):
        figures = _portable(plain(figures))
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        json.dump(plain(figures, finite=not allow_nan), f, indent=2, sort_keys=sort_keys, allow_nan=allow_nan)
        f.write("\n")


def source_commit(path: Optional[str] = None) -> str:
    """The commit of the checkout that holds ``path`` (default: this file), short, with
    "+changes" when tracked files other than results (``results/`` folders) and documentation
    (``*.md``) differ from it;
    "unknown" outside a git checkout. Results record it so that a figure says which code
    produced it."""
    import subprocess
    where = os.path.dirname(os.path.abspath(path or __file__))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        aside = [":(exclude,glob,top)**/results/**", ":(exclude,glob,top)**/*.md"]
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":/", *aside],
                               cwd=where, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("+changes" if dirty else "")


def provenance(prog: str, argv: Optional[list] = None) -> dict:
    """``{"commit": source_commit(), "command": "PROG ARGS"}`` for a tool's JSON; ``argv``: the
    arguments main() was given (None: the process's). Paths inside the checkout are written
    relative to its root, so the command reads the same on every machine."""
    import sys
    args = sys.argv[1:] if argv is None else list(argv)
    return {"commit": source_commit(), "command": " ".join([prog, *map(_from_checkout, map(str, args))])}


#: The checkout holding this package (through catkin's links to the source).
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))


def _from_checkout(arg: str) -> str:
    """``arg`` with the checkout's root cut from its paths."""
    return arg.replace(_CHECKOUT + os.sep, "") if _CHECKOUT != os.sep else arg


def is_committed_result(path: str) -> bool:
    """Whether ``path`` is a committed result: a file under a ``results`` folder of the checkout."""
    inside = os.path.relpath(os.path.realpath(path), _CHECKOUT)
    return not inside.startswith(os.pardir) and "results" in inside.split(os.sep)[:-1]


def _portable(value: Any) -> Any:
    """Plain data ``value`` with the checkout's root cut from the paths in its strings."""
    if isinstance(value, dict):
        return {k: _portable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v) for v in value]
    return _from_checkout(value) if isinstance(value, str) else value
