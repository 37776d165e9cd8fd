"""Reading the package's YAML files safely, with one-line errors that name the file."""
from __future__ import annotations

import os
from typing import Any

import yaml

from panda_sim2real.errors import ConfigError


def read_yaml(path: str, what: str) -> Any:
    """``yaml.safe_load`` of ``path``; ConfigError '<what> not found' / 'is not valid YAML'."""
    if not os.path.isfile(path):
        raise ConfigError(f"{what} not found: {path}")
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {path} is not valid YAML: {exc}") from exc
