"""The resumable work directory: one record per finished stage.

``OUT/stages/<stage>.json`` holds the stage's fingerprint (a hash of its settings and of the
run ids of the stages it reads from), a run id (new each time the stage runs), the files it
produced and its figures. A stage whose record matches its fingerprint and whose files are all
there is kept on the next run. A stage that runs again, because a setting changed or a file of
its is gone, gets a new run id, so every stage that reads from it runs again too; a failed stage
leaves no record.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from sim2real_checks import write_json



def fingerprint(settings: Mapping[str, Any], upstream: Mapping[str, str]) -> str:
    """sha256 of the stage's settings and its upstream stages' run ids."""
    text = json.dumps({"settings": settings, "upstream": dict(upstream)}, sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StageRecord:
    """What a finished stage left: its files (name -> path) and figures; the runner adds the
    fingerprint it ran under and a run id."""

    stage: str
    fingerprint: str
    outputs: dict[str, str]
    figures: dict[str, Any]
    run_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "fingerprint": self.fingerprint, "run_id": self.run_id,
                "outputs": self.outputs, "figures": self.figures}


class WorkDir:
    """Paths and stage records under one folder."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        os.makedirs(os.path.join(self.root, "stages"), exist_ok=True)

    def path(self, *parts: str) -> str:
        path = os.path.join(self.root, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def _record_path(self, stage: str) -> str:
        return os.path.join(self.root, "stages", f"{stage}.json")

    def load(self, stage: str) -> Optional[StageRecord]:
        """The stage's record if it is readable and all its outputs exist, else None."""
        try:
            with open(self._record_path(stage), encoding="utf-8") as f:
                raw = json.load(f)
            record = StageRecord(raw["stage"], raw["fingerprint"], dict(raw["outputs"]),
                                 dict(raw["figures"]), str(raw.get("run_id", "")))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not all(os.path.exists(p) for p in record.outputs.values()):
            return None
        return record

    def completed(self, stage: str, print_: str) -> Optional[StageRecord]:
        """The stage's record if it matches ``print_`` and all its outputs exist, else None."""
        record = self.load(stage)
        return record if record is not None and record.fingerprint == print_ else None

    def save(self, record: StageRecord) -> None:
        """Write the record atomically."""
        write_json(self._record_path(record.stage), record.to_dict(), sort_keys=False)

    def forget(self, stage: str) -> None:
        """Drop a stage's record (it will run again)."""
        try:
            os.remove(self._record_path(stage))
        except FileNotFoundError:
            pass
