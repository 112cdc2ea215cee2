"""rubricflow as tools an agent calls: the review operations (`operations`), their
function-calling definitions for the OpenAI and Anthropic APIs (`schemas`), and a
dispatcher that runs a model's tool call and returns the provider's tool result
(`dispatch`). The MCP server serves the same operations."""

from __future__ import annotations

from rubricflow.tools.callers import Caller, LocalCaller
from rubricflow.tools.dispatch import (
    ToolCallError,
    ToolDispatcher,
    ToolOutcome,
    dispatch,
    run_tool_sync,
)
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
from rubricflow.tools.schemas import (
    anthropic_tools,
    openai_responses_tools,
    openai_tools,
    parameters_schema,
)
from rubricflow.tools.specs import TOOL_NAMES, TOOLS, ToolSpec

__all__ = [
    "TOOLS",
    "TOOL_NAMES",
    "Caller",
    "EvaluateTextParams",
    "EvaluationFeedback",
    "ExplainRubricParams",
    "GetReviewParams",
    "GetReviewResult",
    "ListRubricsParams",
    "ListRubricsResult",
    "LocalCaller",
    "ReviewResult",
    "ReviseArtifactParams",
    "RubricExplained",
    "SubmitForReviewParams",
    "ToolCallError",
    "ToolDispatcher",
    "ToolOutcome",
    "ToolSpec",
    "anthropic_tools",
    "dispatch",
    "evaluate_text",
    "explain_rubric",
    "get_review",
    "list_rubrics",
    "openai_responses_tools",
    "openai_tools",
    "parameters_schema",
    "revise_artifact",
    "run_tool_sync",
    "submit_for_review",
]
