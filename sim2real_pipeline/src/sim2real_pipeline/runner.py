"""Runs the stages in order, keeping the ones a previous run finished with the same settings."""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional, Sequence

from sim2real_pipeline.errors import PipelineError
from sim2real_pipeline.settings import PipelineSettings
from sim2real_pipeline.stages import Context, Stage, stage_list
from sim2real_pipeline.workdir import StageRecord, WorkDir, fingerprint

# The stages that learn a model: with settings.models_from they are taken from another run's work
# directory (transfer to another robot individual, paper 000 §V).
MODEL_STAGES = ("identify", "realeasy", "kernels")


def _say(text: str) -> None:
    print(text, flush=True)


def run_pipeline(settings: PipelineSettings, work_dir: str,
                 stages: Optional[Sequence[Stage]] = None, until: Optional[str] = None,
                 say: Callable[[str], None] = _say) -> Context:
    """Run every stage (up to ``until``); PipelineError(stage, cause) from the first that fails.
    A stage that raises anything else is reported the same way: its earlier stages' records
    stay, and the next run resumes from it."""
    stages = tuple(stages or stage_list())
    ctx = Context(settings, WorkDir(work_dir))
    models = WorkDir(settings.models_from) if settings.models_from else None
    prints: dict[str, str] = {}
    for number, stage in enumerate(stages, 1):
        title = f"== [{number}/{len(stages)}] {stage.name}: {stage.description}"
        if models is not None and stage.name in MODEL_STAGES:
            record = models.load(stage.name)
            if record is None:
                raise PipelineError(stage.name, f"{settings.models_from} holds no finished "
                                                f"{stage.name} stage to take the model from")
            say(f"{title} (the model of {settings.models_from})")
            ctx.records[stage.name] = record
            prints[stage.name] = record.fingerprint
            continue
        prints[stage.name] = fingerprint(stage.settings(settings),
                                         {u: prints[u] for u in stage.upstream})
        kept = ctx.work.completed(stage.name, prints[stage.name])
        if kept is not None:
            say(f"{title} (kept from the last run)")
            ctx.records[stage.name] = kept
        else:
            say(title)
            ctx.work.forget(stage.name)
            clock = time.perf_counter()
            try:
                record = stage.run(ctx)
            except PipelineError:
                raise
            except KeyboardInterrupt:
                raise
            except Exception as exc:   # a package error or a bug: name the stage, keep the rest
                raise PipelineError(stage.name, f"{type(exc).__name__}: {exc}") from exc
            figures = dict(record.figures, seconds=time.perf_counter() - clock,
                           commands=ctx.commands.get(stage.name, []))
            record = StageRecord(stage.name, prints[stage.name], record.outputs, figures)
            ctx.work.save(record)
            ctx.records[stage.name] = record
        if until is not None and stage.name == until:
            break
    return ctx


def main_errors(run: Callable[[], int]) -> int:
    """``run()``; a PipelineError becomes one line on stderr and exit code 2."""
    try:
        return run()
    except PipelineError as exc:
        print(f"pipeline: {exc} (earlier stages are kept; run again to resume)", file=sys.stderr)
        return 2
