"""rubricflow as tools an agent calls: the review operations (`operations`), their
function-calling definitions for the OpenAI and Anthropic APIs (`schemas`), and a
dispatcher that runs a model's tool call and returns the provider's tool result
(`dispatch`). The MCP server serves the same operations."""

from __future__ import annotations

from rubricflow.tools.models import (
    EvaluateTextParams,
    EvaluationFeedback,
    ExplainRubricParams,
    GetReviewParams,
    GetReviewResult,
    ListRubricsParams,
    ListRubricsResult,
    ReviewResult,
    ReviseArtifactParams,
    RubricExplained,
    SubmitForReviewParams,
)
from rubricflow.tools.operations import (
    evaluate_text,
    explain_rubric,
    get_review,
    list_rubrics,
    revise_artifact,
    submit_for_review,
)

__all__ = [
    "EvaluateTextParams",
    "EvaluationFeedback",
    "ExplainRubricParams",
    "GetReviewParams",
    "GetReviewResult",
    "ListRubricsParams",
    "ListRubricsResult",
    "ReviewResult",
    "ReviseArtifactParams",
    "RubricExplained",
    "SubmitForReviewParams",
    "evaluate_text",
    "explain_rubric",
    "get_review",
    "list_rubrics",
    "revise_artifact",
    "submit_for_review",
]
