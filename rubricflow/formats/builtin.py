"""Registers the built-in rubric formats through the same hook a third party uses."""

from __future__ import annotations

from collections.abc import Sequence

from rubricflow.formats.agentv import AgentVFormat
from rubricflow.formats.base import RubricFormat
from rubricflow.formats.dataknobs import DataknobsFormat
from rubricflow.formats.judgespec import RubricJudgeSpecFormat
from rubricflow.formats.native import NativeFormat
from rubricflow.formats.openrubricrl import OpenRubricRLFormat
from rubricflow.formats.rubric_pkg import RubricPackageFormat
from rubricflow.hookspecs import hookimpl


@hookimpl
def rubricflow_formats() -> Sequence[RubricFormat]:
    return [
        NativeFormat(),
        OpenRubricRLFormat(),
        AgentVFormat(),
        RubricPackageFormat(),
        DataknobsFormat(),
        RubricJudgeSpecFormat(),
    ]
