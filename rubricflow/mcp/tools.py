"""The MCP tools: one row per operation of `rubricflow.tools.operations`, its parameters
and result models (their JSON Schemas are the tool's `inputSchema` and `outputSchema`),
and what the caller's role must allow.

A call's arguments are validated by the parameters model; a bad argument, an unknown
rubric or artifact, content the type refuses, a state that refuses the change: each is a
tool error (`isError: true`) whose text names the field and the fix, so the model can
correct itself. Artifacts follow the HTTP API's rules: a caller sees only the artifacts
its role and types allow (a submitter: the ones it created); anyone else's is "no
artifact", as if it did not exist.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations
from pydantic import BaseModel, ValidationError

from rubricflow.errors import (
    ConfigurationError,
    IllegalTransitionError,
    RubricflowError,
)
from rubricflow.tools import operations
from rubricflow.tools.callers import require_readable, require_submittable
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

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.tools.callers import Caller

__all__ = ["TOOLS", "ToolContext", "ToolSpec", "call_tool", "list_tools"]

_log = logging.getLogger("rubricflow.mcp")


@dataclass(frozen=True)
class ToolContext:
    """What a tool runs with: the application, who calls, the host's judge, and how
    to give the host one (said when a rubric needs a judge it does not have)."""

    application: Application
    caller: Caller
    judge: str | None = None
    no_judge: str = operations.NO_JUDGE


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool over one operation."""

    name: str
    title: str
    description: str
    params: type[BaseModel]
    result: type[BaseModel]
    run: Callable[[ToolContext, Any], Awaitable[BaseModel]]
    read_only: bool


# --- the operations, with the caller's rules -------------------------------------------------
async def _evaluate(context: ToolContext, params: EvaluateTextParams) -> BaseModel:
    try:
        return await operations.evaluate_text(context.application, params, judge=context.judge)
    except ConfigurationError as error:
        if operations.NO_JUDGE not in str(error):
            raise
        raise ConfigurationError(
            str(error).replace(operations.NO_JUDGE, context.no_judge)
        ) from None


async def _submit(context: ToolContext, params: SubmitForReviewParams) -> BaseModel:
    require_submittable(context.caller, params.artifact_type)
    return await operations.submit_for_review(
        context.application, params, actor=context.caller.name
    )


async def _get_review(context: ToolContext, params: GetReviewParams) -> BaseModel:
    await require_readable(context.application, context.caller, params.artifact_id)
    return await operations.get_review(context.application, params)


async def _revise(context: ToolContext, params: ReviseArtifactParams) -> BaseModel:
    await require_readable(context.application, context.caller, params.artifact_id)
    return await operations.revise_artifact(context.application, params, actor=context.caller.name)


async def _list_rubrics(context: ToolContext, params: ListRubricsParams) -> BaseModel:
    return await operations.list_rubrics(context.application, params)


async def _explain(context: ToolContext, params: ExplainRubricParams) -> BaseModel:
    return await operations.explain_rubric(context.application, params)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "evaluate_text",
        "Evaluate text against a rubric",
        "Score content against a registered rubric (`rubric`: ID or ID@VERSION) or one "
        "given inline (`rubric_document`: YAML or JSON text). Nothing is stored. Returns the "
        "verdict, the score, every criterion with its evidence, and `fixes`: each failed "
        "criterion with what to change.",
        EvaluateTextParams,
        EvaluationFeedback,
        _evaluate,
        read_only=True,
    ),
    ToolSpec(
        "submit_for_review",
        "Submit content for review",
        "Create an artifact of `artifact_type` and submit it for review: the type's rubrics "
        "review it now (or it is queued). Returns the artifact id, its status (approved, "
        "needs_revision, rejected, pending_review), the evaluations with their fixes, and "
        "`next_step`. Publish only approved content.",
        SubmitForReviewParams,
        ReviewResult,
        _submit,
        read_only=False,
    ),
    ToolSpec(
        "get_review",
        "Get an artifact's review",
        "Where an artifact's review stands: status, verdict, each rubric's evaluation with "
        "its fixes, what to do next, and the artifact's history.",
        GetReviewParams,
        GetReviewResult,
        _get_review,
        read_only=True,
    ),
    ToolSpec(
        "revise_artifact",
        "Revise an artifact",
        "New content for an artifact sent back for revision (status needs_revision): it "
        "becomes a new revision and is reviewed again unless `resubmit` is false. Pass "
        "get_review's `version` as `expected_version` to refuse a revision based on stale "
        "content.",
        ReviseArtifactParams,
        ReviewResult,
        _revise,
        read_only=False,
    ),
    ToolSpec(
        "list_rubrics",
        "List rubrics",
        "The registered rubrics, each at its latest version (optionally only those for one "
        "target type): id, version, name, target type and criteria count.",
        ListRubricsParams,
        ListRubricsResult,
        _list_rubrics,
        read_only=True,
    ),
    ToolSpec(
        "explain_rubric",
        "Explain a rubric",
        "What a registered rubric checks and what passing means: each criterion with its "
        "weight, whether it is required, its levels and how it is scored; the pass "
        "threshold and the scoring rules.",
        ExplainRubricParams,
        RubricExplained,
        _explain,
        read_only=True,
    ),
)
_BY_NAME = {spec.name: spec for spec in TOOLS}


def list_tools() -> list[Tool]:
    """The tools, their schemas generated from the operations' models."""
    return list(_tools())


@functools.cache
def _tools() -> tuple[Tool, ...]:
    """Built once: generating the JSON Schemas takes tens of milliseconds."""
    return tuple(
        Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.params.model_json_schema(mode="validation"),
            output_schema=spec.result.model_json_schema(mode="serialization"),
            annotations=ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=False,
                idempotent_hint=spec.read_only,
                open_world_hint=False,
            ),
        )
        for spec in TOOLS
    )


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _invalid(name: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        message = str(item["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return f"invalid arguments for {name}: " + "; ".join(problems)


async def call_tool(context: ToolContext, name: str, arguments: dict[str, Any]) -> CallToolResult:
    """Run tool `name`: its result as structured content (and the same JSON as text), or
    a tool error naming what to fix."""
    spec = _BY_NAME.get(name)
    if spec is None:
        return _error(f"no tool {name!r}; the tools are: {', '.join(_BY_NAME)}")
    try:
        params = spec.params.model_validate(arguments)
    except ValidationError as error:
        return _error(_invalid(name, error))
    try:
        result = await spec.run(context, params)
    except IllegalTransitionError as error:  # told as the HTTP API tells it
        return _error(await context.application.artifacts.explain_refusal(error))
    except RubricflowError as error:
        return _error(str(error))
    except ValidationError as error:  # a parameter an operation reads further
        return _error(_invalid(name, error))
    except Exception as error:  # a bug: the client gets a tool error, the log the traceback
        _log.exception("MCP tool %s failed", name)
        return _error(f"internal error in {name}: {type(error).__name__}; see the server's log")
    structured = result.model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
        structured_content=structured,
    )
