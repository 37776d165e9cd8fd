"""The package's one error: a stage that cannot go on, with the stage's name and the cause."""


class PipelineError(Exception):
    """A stage failed; ``stage`` names it, the message (one line) says why. What earlier stages
    produced stays in the work directory and the next run resumes from the failed stage."""

    def __init__(self, stage: str, cause: object) -> None:
        self.stage = stage
        self.cause = " ".join(str(cause).split()) or type(cause).__name__
        super().__init__(f"stage {stage}: {self.cause}")
