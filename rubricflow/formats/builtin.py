"""The built-in rubric formats: the native format and the importers (the five
source systems, Rubrics as Rewards datasets, HealthBench JSONL, OpenAI graders and
promptfoo configs).

A plain list, with no plugin machinery: the formats layer sits below the plugin manager.
`rubricflow.builtin_formats` registers these through the `rubricflow_formats` hook, the
same hook a third party uses.
"""

from __future__ import annotations

from rubricflow.formats.agentv import AgentVFormat
from rubricflow.formats.base import RubricFormat
from rubricflow.formats.dataknobs import DataknobsFormat
from rubricflow.formats.healthbench import HealthBenchFormat
from rubricflow.formats.judgespec import RubricJudgeSpecFormat
from rubricflow.formats.native import NativeFormat
from rubricflow.formats.openai_graders import OpenAIGraderFormat
from rubricflow.formats.openrubricrl import OpenRubricRLFormat
from rubricflow.formats.promptfoo import PromptfooFormat
from rubricflow.formats.rar import RaRFormat
from rubricflow.formats.rubric_pkg import RubricPackageFormat

__all__ = ["builtin_formats"]


def builtin_formats() -> list[RubricFormat]:
    """A fresh instance of each built-in format, the native format first."""
    return [
        NativeFormat(),
        OpenRubricRLFormat(),
        AgentVFormat(),
        RubricPackageFormat(),
        DataknobsFormat(),
        RubricJudgeSpecFormat(),
        RaRFormat(),
        HealthBenchFormat(),
        OpenAIGraderFormat(),
        PromptfooFormat(),
    ]
