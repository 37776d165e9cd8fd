"""The acceptance gate (issue 17, step 7): a stage's model is adopted only if it beats the adopted
stage before it on the validation split, never on the test split.

"Beats" is one figure, :func:`evaluation.normalised_score`: the mean over the 21 columns
(position, velocity and torque of 7 joints) of the stage's validation MSE divided by the nominal
simulation's validation MSE in that column. Every quantity and joint counts the same, whatever
its unit; a stage that halves the torque error but doubles every position error is refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from sim2real_pipeline.evaluation import Errors, normalised_score


@dataclass(frozen=True)
class Decision:
    stage: str
    previous: str             # the adopted stage it was measured against
    score: float              # its normalised validation score (simulation = 1)
    previous_score: float
    adopted: bool

    @property
    def reason(self) -> str:
        verb = "beats" if self.adopted else "does not beat"
        return (f"{self.stage} {verb} {self.previous} on the validation split: mean normalised "
                f"MSE {self.score:.3g} vs {self.previous_score:.3g} (simulation = 1)")

    def to_dict(self) -> dict:
        return {"stage": self.stage, "previous": self.previous, "score": self.score,
                "previous_score": self.previous_score, "adopted": self.adopted,
                "reason": self.reason}


def decide_chain(chain: Sequence[str], validation: dict[str, Errors], reference: Errors,
                 start: str) -> tuple[str, list[Decision]]:
    """Walk ``chain`` (stage names after ``start``, in order) over the validation errors; each
    stage is compared with the last adopted one. Returns (the last adopted stage, decisions)."""
    adopted, decisions = start, []
    best = normalised_score(validation[start], reference)
    for stage in chain:
        if stage not in validation:
            continue
        score = normalised_score(validation[stage], reference)
        decision = Decision(stage, adopted, score, best, bool(score < best))
        decisions.append(decision)
        if decision.adopted:
            adopted, best = stage, score
    return adopted, decisions
