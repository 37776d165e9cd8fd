"""The package's one YAML file reader (controller parameters, the tracker model, the physics
ranges, BO intervals): every error is one line starting with the file's path."""
from __future__ import annotations

import os
from typing import Any, Union

import yaml


def read_yaml(path: Union[str, "os.PathLike[str]"], what: str, error: type[Exception] = ValueError) -> Any:
    """``yaml.safe_load`` of ``path``; ``error`` with one line: '<path>: cannot read the <what>:
    ...' (missing, unreadable, not UTF-8) or '<path>: not valid YAML (<first line>)'."""
    path = os.fspath(path)
    try:
        with open(path, "r", encoding="utf-8") as stream:
            return yaml.safe_load(stream)
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read the {what}: {_one_line(exc)}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") \
            from None


def read_mapping(path: Union[str, "os.PathLike[str]"], what: str, error: type[Exception] = ValueError,
                 empty_ok: bool = False) -> dict:
    """:func:`read_yaml` of a file that must hold a mapping (an empty file is ``{}`` with
    ``empty_ok``); '<path>: expected a mapping (the <what>), got <type>' otherwise."""
    data = read_yaml(path, what, error)
    if data is None and empty_ok:
        return {}
    if not isinstance(data, dict):
        raise error(f"{os.fspath(path)}: expected a mapping (the {what}), got {type(data).__name__}")
    return data


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
