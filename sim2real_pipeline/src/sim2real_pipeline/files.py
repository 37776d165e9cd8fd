"""The JSON the pipeline reads back from its stages (it writes through sim2real_checks.outputs:
atomically, so an interrupted stage never leaves a half-written file under the final name)."""
from __future__ import annotations

import json
from typing import Any

from sim2real_pipeline.errors import PipelineError


def read_json(path: str, stage: str) -> Any:
    """The JSON a tool wrote; PipelineError(stage, ...) if it is missing or not JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise PipelineError(stage, f"cannot read {path}: {exc}") from exc
