"""Reading the package's YAML files safely, with one-line errors that name the file."""
from __future__ import annotations

import os
from typing import Any, Union

import yaml

from panda_sim2real.errors import ConfigError


def read_yaml(path: Union[str, os.PathLike], what: str,
              error: type[Exception] = ConfigError) -> Any:
    """``yaml.safe_load`` of ``path`` (no code execution: python tags are refused); ``error``
    '<what> not found' / 'cannot read' / 'is not valid YAML', naming the file."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise error(f"{what} not found: {path}")
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise error(f"{what} {path} is not valid YAML: {exc}") from exc
