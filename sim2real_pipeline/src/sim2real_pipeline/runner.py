"""Runs the stages in order, keeping the ones a previous run finished with the same settings."""
from __future__ import annotations

import sys
import time
import uuid
from typing import Callable, Optional, Sequence

from sim2real_pipeline.context import Context
from sim2real_pipeline.errors import PipelineError
from sim2real_pipeline.settings import PipelineSettings
from sim2real_pipeline.stages import Stage, stage_list
from sim2real_pipeline.workdir import StageRecord, WorkDir, fingerprint

# The stages that learn a model: with settings.models_from they are taken from another run's work
# directory (transfer to another robot individual, paper 000 §V).
MODEL_STAGES = ("identify", "realeasy", "kernels")


def _say(text: str) -> None:
    print(text, flush=True)


def _run_stage(ctx: Context, stage: Stage, print_: str) -> StageRecord:
    """Run one stage and save its record under ``print_`` with a new run id."""
    ctx.work.forget(stage.name)
    clock = time.perf_counter()
    record = stage.run(ctx)
    figures = dict(record.figures, stage_seconds=time.perf_counter() - clock,
                   commands=ctx.commands.get(stage.name, []))
    record = StageRecord(stage.name, print_, record.outputs, figures, uuid.uuid4().hex)
    ctx.work.save(record)
    return record


def _taken(settings: PipelineSettings, stage: Stage) -> StageRecord:
    """The model stage's record of the run ``settings.models_from``."""
    record = WorkDir(settings.models_from).load(stage.name)
    if record is None:
        raise PipelineError(stage.name, f"{settings.models_from} holds no finished {stage.name} "
                                        f"stage to take the model from")
    return record


def run_pipeline(settings: PipelineSettings, work_dir: str,
                 stages: Optional[Sequence[Stage]] = None, until: Optional[str] = None,
                 say: Callable[[str], None] = _say) -> Context:
    """Run every stage (up to ``until``); PipelineError(stage, cause) from the first that fails,
    whatever failed in it (a tool, a package's error, a file, a bug): the records of the stages
    before it stay, and the next run resumes from it."""
    stages = tuple(stages or stage_list())
    ctx: Optional[Context] = None
    for number, stage in enumerate(stages, 1):
        title = f"== [{number}/{len(stages)}] {stage.name}: {stage.description}"
        try:
            ctx = ctx or Context(settings, WorkDir(work_dir))
            if settings.models_from and stage.name in MODEL_STAGES:
                ctx.records[stage.name] = _taken(settings, stage)
                say(f"{title} (the model of {settings.models_from})")
            else:
                print_ = fingerprint(stage.settings(settings),
                                     {u: ctx.records[u].run_id for u in stage.upstream})
                kept = ctx.work.completed(stage.name, print_)
                if kept is not None:
                    say(f"{title} (kept from the last run)")
                    ctx.records[stage.name] = kept
                else:
                    say(title)
                    ctx.records[stage.name] = _run_stage(ctx, stage, print_)
        except PipelineError:
            raise
        except Exception as exc:   # a package error, a file, a bug: name the stage, keep the rest
            raise PipelineError(stage.name, f"{type(exc).__name__}: {exc}") from exc
        if until is not None and stage.name == until:
            break
    assert ctx is not None
    return ctx


def main_errors(run: Callable[[], int]) -> int:
    """``run()``; a PipelineError or an OSError becomes one line on stderr and exit code 2, Ctrl-C
    one line and exit code 130 (sim2real_checks.cli.run's convention, with the pipeline's resume
    hint)."""
    try:
        return run()
    except (PipelineError, OSError) as exc:
        print(f"pipeline: error: {exc} (earlier stages are kept; run again to resume)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pipeline: interrupted (finished stages are kept; run again to resume)",
              file=sys.stderr)
        return 130
