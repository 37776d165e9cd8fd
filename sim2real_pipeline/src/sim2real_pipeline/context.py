"""What a stage sees: the settings, the work directory, the records of the stages before it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim2real_pipeline.settings import PipelineSettings
from sim2real_pipeline.tools import command_line, run_tool
from sim2real_pipeline.workdir import StageRecord, WorkDir

QUIET_TOOLS = ("collect", "resimulate", "identify", "pair-kernels")   # the tools with --quiet (no progress bar)


@dataclass
class Context:
    settings: PipelineSettings
    work: WorkDir
    records: dict[str, StageRecord] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)

    def output(self, stage: str, name: str) -> str:
        """The path of file ``name`` that ``stage`` produced."""
        return self.records[stage].outputs[name]

    def figures(self, stage: str) -> dict[str, Any]:
        """The figures ``stage`` recorded."""
        return self.records[stage].figures

    def tool(self, stage: str, package: str, name: str, *args: Any) -> None:
        """Run ``rosrun package name args`` for ``stage`` and record its command line."""
        argv = ["rosrun", package, name, *(str(a) for a in args)]
        if self.settings.quiet and name in QUIET_TOOLS:
            argv.append("--quiet")
        self.commands.setdefault(stage, []).append(command_line(argv))
        run_tool(stage, argv, quiet=self.settings.quiet)
