"""What a scorer is, what it is given, and how a plain value becomes a criterion result.

The helpers plugin authors use: `error_result`, `scored_result`, `result_from_value`, and
the `Scorer`, `ScoringContext` and `CheckResult` types. They live in `rubricflow.scoring`
(the plugins layer, so the LLM judges below the scorers can use them too); this module
is their public home for scorer plugins.
"""

from __future__ import annotations

from rubricflow.scoring import (
    CheckResult,
    PluginSet,
    Scorer,
    ScoringContext,
    error_result,
    result_from_value,
    scored_result,
)

__all__ = [
    "CheckResult",
    "PluginSet",
    "Scorer",
    "ScoringContext",
    "error_result",
    "result_from_value",
    "scored_result",
]
