"""Reading YAML files safely (``yaml.safe_load``: python tags refused, no code run), with the
package's one-line errors naming the file; for the configuration files of every package."""
from __future__ import annotations

import os
from typing import Any, Union

import yaml


def read_yaml(path: Union[str, os.PathLike], what: str, error: type[Exception] = ValueError) -> Any:
    """``yaml.safe_load`` of ``path``; ``error`` with one line naming the file: '<what> not found',
    'cannot read' (an OS error, or not UTF-8 text) or 'is not valid YAML'."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise error(f"{what} not found: {path}")
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"cannot read {what} {path}: {_one_line(exc)}") from exc
    except yaml.YAMLError as exc:
        raise error(f"{what} {path} is not valid YAML: {_one_line(exc)}") from exc


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
