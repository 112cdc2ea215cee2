"""The parameters and results of the agent operations, as pydantic models.

Parameters are what a model writes in a tool call; their JSON Schemas become the tool
definitions (`rubricflow.tools.schemas`), so every field has a description and only
types OpenAI's strict mode can express: text, numbers, booleans, enums, lists and
closed objects (no free-form maps: metadata is a list of key/value pairs, and JSON
content travels as text with `content_format: "json"`, a conversation's messages with
`content_format: "conversation"`). Results are what the tool
returns: the verdict, every criterion, and what to fix.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from rubricflow.wire.artifacts import EvaluationSummary
from rubricflow.wire.rubrics import MAX_DOCUMENT_CHARS, RubricSummary

__all__ = [
    "CriterionExplained",
    "CriterionOutcome",
    "EvaluateTextParams",
    "EvaluationFeedback",
    "ExplainRubricParams",
    "Fix",
    "GetReviewParams",
    "GetReviewResult",
    "HistoryStep",
    "LevelExplained",
    "ListRubricsParams",
    "ListRubricsResult",
    "MetadataItem",
    "ReviewResult",
    "ReviewStatus",
    "ReviseArtifactParams",
    "RubricExplained",
    "SubmitForReviewParams",
]

#: the longest content a tool call may carry (characters)
MAX_CONTENT_CHARS = 1_000_000


def _no_nul(value: str) -> str:
    """Text the store can keep: no NUL, and valid Unicode (JSON may carry a lone
    surrogate, which no database encodes)."""
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (it holds a lone surrogate)") from None
    return value


_Text = Annotated[str, AfterValidator(_no_nul)]
_Id = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_no_nul)]
_Content = Annotated[
    str,
    Field(max_length=MAX_CONTENT_CHARS, description="The content under review, as text"),
    AfterValidator(_no_nul),
]
_Reference = Annotated[
    str,
    Field(
        min_length=1,
        max_length=402,
        description="A registered rubric: ID for its latest version, or ID@VERSION",
    ),
    AfterValidator(_no_nul),
]
ContentFormat = Literal["text", "json", "conversation"]
_CONTENT_FORMAT = (
    "How to read `content`: `text` (as it is), `json` (a JSON document, for artifact "
    "types whose content is structured) or `conversation` (a JSON list of chat messages "
    "with roles, tool calls and tool results, in OpenAI's or Anthropic's shape; images "
    "inline as data URLs)"
)


class _Params(BaseModel):
    """Tool arguments: unknown fields are an error naming them, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


def content_value(content: str, content_format: ContentFormat) -> Any:
    """`content` as the value to review: the text, the JSON document it holds, or the
    conversation (its shape and bounds checked, a problem naming its path)."""
    if content_format == "text":
        return content
    try:
        value = json.loads(content)
    except ValueError as error:
        raise ValueError(
            f"content is not JSON ({error}); send a JSON document, or content_format 'text'"
        ) from None
    if content_format == "conversation":
        from rubricflow.conversation import read_conversation
        from rubricflow.errors import RubricflowError

        try:
            conversation = read_conversation(value)
        except RubricflowError as error:
            raise ValueError(str(error)) from None
        if conversation is None:
            raise ValueError(
                "content is not a conversation: send a JSON list of messages, each with a "
                '`role` (or {"messages": [...]})'
            )
    return value


class MetadataItem(_Params):
    """One metadata entry recorded with the artifact."""

    key: _Id
    value: Annotated[str, Field(max_length=10_000), AfterValidator(_no_nul)]


# --- parameters ------------------------------------------------------------------------------
class EvaluateTextParams(_Params):
    """Score content against a rubric; nothing is stored."""

    content: _Content
    content_format: ContentFormat = Field(default="text", description=_CONTENT_FORMAT)
    rubric: _Reference | None = Field(
        default=None,
        description="A registered rubric: ID (its latest version) or ID@VERSION. Give "
        "this or `rubric_document`",
    )
    rubric_document: (
        Annotated[str, Field(min_length=1, max_length=MAX_DOCUMENT_CHARS), AfterValidator(_no_nul)]
        | None
    ) = Field(
        default=None,
        description="A rubric given inline, as YAML or JSON text (any supported format). "
        "Give this or `rubric`",
    )
    rubric_id: _Id | None = Field(
        default=None, description="Which rubric of an inline document that holds several"
    )
    query: Annotated[str, Field(max_length=MAX_CONTENT_CHARS), AfterValidator(_no_nul)] | None = (
        Field(default=None, description="The request or question the content answers")
    )

    @field_validator("rubric_document", mode="before")
    @classmethod
    def _document_as_text(cls, value: Any) -> Any:
        """A document given as a mapping (from Python) is sent on as JSON text."""
        if isinstance(value, dict | list):
            return json.dumps(value)
        return value

    @model_validator(mode="after")
    def _one_rubric(self) -> EvaluateTextParams:
        if (self.rubric is None) == (self.rubric_document is None):
            raise ValueError(
                "give either `rubric` (ID or ID@VERSION of a registered rubric) or "
                "`rubric_document` (a rubric as YAML or JSON text), not both"
            )
        if self.rubric is not None and self.rubric_id is not None:
            raise ValueError("`rubric_id` goes with an inline `rubric_document`; drop it")
        return self


class SubmitForReviewParams(_Params):
    """Create an artifact and submit it for review."""

    artifact_type: _Id = Field(description="The artifact type; its rubrics review the content")
    content: _Content
    content_format: ContentFormat = Field(default="text", description=_CONTENT_FORMAT)
    title: Annotated[str, Field(max_length=500), AfterValidator(_no_nul)] | None = Field(
        default=None, description="A short title for the artifact"
    )
    submitter: _Id | None = Field(
        default=None,
        description="Who (which bot or user) the content is submitted for; kept in the "
        "artifact's metadata",
    )
    metadata: list[MetadataItem] | None = Field(
        default=None, max_length=100, description="Key/value pairs kept with the artifact"
    )


class GetReviewParams(_Params):
    """Where an artifact's review stands."""

    artifact_id: _Id = Field(description="The artifact's id, as submit_for_review returned it")


class ReviseArtifactParams(_Params):
    """New content for an artifact sent back for revision."""

    artifact_id: _Id = Field(description="The artifact's id")
    content: _Content
    content_format: ContentFormat = Field(default="text", description=_CONTENT_FORMAT)
    reason: Annotated[str, Field(min_length=1, max_length=10_000), AfterValidator(_no_nul)] = Field(
        default="revised after review feedback", description="What changed, and why"
    )
    expected_version: Annotated[int, Field(ge=0, le=2**62)] | None = Field(
        default=None,
        description="The artifact version the revision is based on (get_review's "
        "`version`); another writer first makes the revision fail, and nothing changes",
    )
    resubmit: bool = Field(
        default=True, description="Submit the new revision for review at once (the default)"
    )


class ListRubricsParams(_Params):
    """The registered rubrics (each at its latest version)."""

    target_type: _Id | None = Field(
        default=None, description="Only the rubrics for this target type"
    )


class ExplainRubricParams(_Params):
    """A rubric's criteria, weights, levels and what passing means."""

    rubric: _Reference


# --- results ---------------------------------------------------------------------------------
class CriterionOutcome(BaseModel):
    """One criterion's result: scored (with its score) or not (`error`,
    `unable_to_evaluate`, with why in `notes`)."""

    criterion_id: str
    name: str
    status: str
    score: float | None = None
    verdict: str | None = None
    level: str | None = None
    passed: bool | None = None
    required: bool = False
    weight: float = 1.0
    evidence: list[str] = Field(default_factory=list)
    notes: str = ""
    confidence: float | None = Field(
        default=None, description="How sure the judge is, 0..1 (None: not measured)"
    )
    confidence_source: str | None = Field(
        default=None, description="What the confidence comes from: panel, samples, logprobs"
    )


class Fix(BaseModel):
    """A criterion that held the content back, and what would lift it."""

    criterion_id: str
    name: str
    required: bool = Field(description="A required criterion fails the evaluation on its own")
    what_to_fix: str


class EvaluationFeedback(EvaluationSummary):
    """An evaluation with its feedback: the verdict and score, every criterion, and the
    fixes (failed criteria first, each with what to change)."""

    threshold: float = Field(description="The score that passes")
    criteria: list[CriterionOutcome]
    fixes: list[Fix] = Field(default_factory=list)
    gating_failures: list[str] = Field(
        default_factory=list, description="Required criteria that failed"
    )


class HistoryStep(BaseModel):
    """One transition of an artifact."""

    revision: int
    action: str
    from_status: str
    to_status: str
    actor: str
    reason: str | None = None
    at: str


class ReviewStatus(BaseModel):
    """Where an artifact stands: status, the current revision's evaluations and fixes."""

    artifact_id: str
    artifact_type: str
    status: str
    revision: int
    version: int = Field(description="Pass as expected_version to revise this revision")
    approved: bool
    awaiting_approval: bool = False
    verdict: str | None = Field(
        default=None,
        description="pass, fail or incomplete over the current revision's evaluations; "
        "None before one is stored",
    )
    reason: str | None = None
    next_step: str = Field(description="What the caller should do next")
    evaluations: list[EvaluationFeedback] = Field(default_factory=list)


class ReviewResult(ReviewStatus):
    """A submission or revision: where it left the artifact, and whether it is queued."""

    queued: bool = False


class GetReviewResult(ReviewStatus):
    """`get_review`: the status, feedback and the artifact's history in brief."""

    history: list[HistoryStep] = Field(default_factory=list)


class ListRubricsResult(BaseModel):
    rubrics: list[RubricSummary]


class LevelExplained(BaseModel):
    id: str
    label: str
    score: float
    description: str = ""


class CriterionExplained(BaseModel):
    id: str
    name: str
    description: str
    weight: float
    required: bool
    min_score: float | None = None
    method: str = Field(description="How it is scored: deterministic, schema, an LLM judge")
    levels: list[LevelExplained] = Field(default_factory=list)


class RubricExplained(BaseModel):
    """What a rubric checks and what passing means."""

    id: str
    version: str
    name: str
    description: str
    target_type: str | None
    pass_threshold: float
    score_formula: str
    unscored_policy: str
    criteria: list[CriterionExplained]
    passing: str = Field(description="What passing means, in a sentence or two")
