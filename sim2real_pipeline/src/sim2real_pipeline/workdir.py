"""The resumable work directory: one record per finished stage.

``OUT/stages/<stage>.json`` holds the stage's fingerprint (a hash of its settings and of the
fingerprints of the stages it reads from), the files it produced and its figures. A stage whose
record matches its fingerprint and whose files are all there is kept on the next run; changing a
setting redoes that stage and every stage after it, a failed stage leaves no record.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional


def fingerprint(settings: Mapping[str, Any], upstream: Mapping[str, str]) -> str:
    """sha256 of the stage's settings and its upstream stages' fingerprints."""
    text = json.dumps({"settings": settings, "upstream": dict(upstream)}, sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StageRecord:
    stage: str
    fingerprint: str
    outputs: dict[str, str]       # name -> path (inside the work directory or given by the user)
    figures: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "fingerprint": self.fingerprint, "outputs": self.outputs,
                "figures": self.figures}


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
                                 dict(raw["figures"]))
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
        """Write the record atomically (temp file, then rename)."""
        path = self._record_path(record.stage)
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(record.to_dict(), f, indent=2, sort_keys=True, default=float)
            f.write("\n")
        os.replace(tmp, path)

    def forget(self, stage: str) -> None:
        """Drop a stage's record (it will run again)."""
        try:
            os.remove(self._record_path(stage))
        except FileNotFoundError:
            pass
