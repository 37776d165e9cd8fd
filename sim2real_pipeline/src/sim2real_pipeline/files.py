"""Files the pipeline writes: atomically (a temporary file renamed into place, removed if the
writing fails), so an interrupted stage never leaves a half-written file under the final name."""
from __future__ import annotations

import json
from typing import Any

from sim2real_checks.outputs import atomic_path

from sim2real_pipeline.errors import PipelineError


def write_text(path: str, text: str) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def write_json(path: str, figures: Any) -> None:
    write_text(path, json.dumps(figures, indent=2, sort_keys=False, default=float) + "\n")


def read_json(path: str, stage: str) -> Any:
    """The JSON a tool wrote; PipelineError(stage, ...) if it is missing or not JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise PipelineError(stage, f"cannot read {path}: {exc}") from exc
