"""The tools: each one's name, what it is for (the description a model reads), its
parameters model and the operation that runs it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from rubricflow.errors import ConfigurationError
from rubricflow.tools import operations
from rubricflow.tools.callers import Caller, LocalCaller, require_readable, require_submittable
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
    from rubricflow.llm.session import LLMSession

__all__ = ["TOOLS", "TOOL_NAMES", "HostSettings", "ToolSpec", "select_tools"]


#: the default caller: the store's owner, acting as the default actor
STORE_OWNER = LocalCaller(operations.DEFAULT_ACTOR)


@dataclass(frozen=True)
class HostSettings:
    """What the host, not the tool call, decides: who acts (and what it may reach) and
    which judge scores."""

    caller: Caller = STORE_OWNER
    judge: str | LLMSession | None = None


Runner = Callable[["Application", Any, HostSettings], Awaitable[BaseModel]]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, its description, its parameters and result models, and the
    operation that runs it."""

    name: str
    description: str
    params: type[BaseModel]
    result: type[BaseModel]
    run: Runner


async def _evaluate(app: Application, params: Any, host: HostSettings) -> BaseModel:
    return await operations.evaluate_text(app, params, judge=host.judge)


async def _submit(app: Application, params: Any, host: HostSettings) -> BaseModel:
    require_submittable(host.caller, params.artifact_type)
    return await operations.submit_for_review(app, params, actor=host.caller.name)


async def _get(app: Application, params: Any, host: HostSettings) -> BaseModel:
    await require_readable(app, host.caller, params.artifact_id)
    return await operations.get_review(app, params)


async def _revise(app: Application, params: Any, host: HostSettings) -> BaseModel:
    await require_readable(app, host.caller, params.artifact_id)
    return await operations.revise_artifact(app, params, actor=host.caller.name)


async def _list(app: Application, params: Any, host: HostSettings) -> BaseModel:
    return await operations.list_rubrics(app, params)


async def _explain(app: Application, params: Any, host: HostSettings) -> BaseModel:
    return await operations.explain_rubric(app, params)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "evaluate_text",
        "Score content against a rubric (a registered one by id, or one given inline as "
        "YAML/JSON text) without storing anything. Returns the verdict (pass, fail or "
        "incomplete), the score and pass threshold, every criterion's result with its "
        "evidence, and `fixes`: the criteria that failed and what to change. Use it to check "
        "a draft before submitting it.",
        EvaluateTextParams,
        EvaluationFeedback,
        _evaluate,
    ),
    ToolSpec(
        "submit_for_review",
        "Submit content for review as a new artifact of an artifact type; the type's "
        "rubrics review it. Returns the artifact id, its status (approved, needs_revision, "
        "rejected, or pending_review when the review is queued), the evaluations with "
        "`fixes`, and `next_step`. Publish only content whose status is approved.",
        SubmitForReviewParams,
        ReviewResult,
        _submit,
    ),
    ToolSpec(
        "get_review",
        "Where an artifact's review stands: status, verdict, each evaluation of the current "
        "revision with the failed criteria and what to fix, `next_step`, and the history of "
        "its transitions.",
        GetReviewParams,
        GetReviewResult,
        _get,
    ),
    ToolSpec(
        "revise_artifact",
        "Send new content for an artifact that came back as needs_revision: it becomes a "
        "new revision and is reviewed again (unless resubmit is false). Returns the new "
        "status and feedback.",
        ReviseArtifactParams,
        ReviewResult,
        _revise,
    ),
    ToolSpec(
        "list_rubrics",
        "The registered rubrics (id, version, name, target type, number of criteria), each "
        "at its latest version.",
        ListRubricsParams,
        ListRubricsResult,
        _list,
    ),
    ToolSpec(
        "explain_rubric",
        "What a rubric checks: each criterion with its description, weight, whether it is "
        "required, its levels and how it is scored, and what passing means (the threshold "
        "and the required criteria). Read it before writing content the rubric will judge.",
        ExplainRubricParams,
        RubricExplained,
        _explain,
    ),
)

#: every tool's name, in the order `TOOLS` lists them
TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOLS)


def select_tools(names: Sequence[str] | None = None) -> tuple[ToolSpec, ...]:
    """The tools named (in the order given), or all of them."""
    if names is None:
        return TOOLS
    by_name = {spec.name: spec for spec in TOOLS}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise ConfigurationError(
            f"no tool {', '.join(map(repr, unknown))}; the tools are: {', '.join(TOOL_NAMES)}"
        )
    return tuple(by_name[name] for name in dict.fromkeys(names))
