"""Scoring without storage over HTTP (`POST /v1/evaluate`): the request, the JSON
answer, and one line of the NDJSON answer."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from rubricflow.content_bounds import check_content_bounds
from rubricflow.model import NUL_MESSAGE
from rubricflow.results import Evaluation, Target
from rubricflow.wire.problems import ApiProblem
from rubricflow.wire.rubrics import MAX_DOCUMENT_CHARS

__all__ = [
    "NDJSON",
    "EvaluateRequest",
    "EvaluateResponse",
    "EvaluationLine",
    "RubricRef",
    "Tally",
    "Traces",
]

NDJSON = "application/x-ndjson"


def _storable(value: str) -> str:
    """A reference the store looks up: PostgreSQL refuses NUL in text (a 500 there)."""
    if "\x00" in value:
        raise ValueError(NUL_MESSAGE)
    return value


class Traces(BaseModel):
    """Traces to read into targets, with the readers of `rubricflow eval --from`."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["otel", "openai-chat"] = Field(
        description="otel: OpenTelemetry GenAI spans as OTLP JSON (one target per trace); "
        "openai-chat: chat-completion log lines (one target per logged call)"
    )
    data: list[Any] | dict[str, Any] = Field(
        description="otel: an OTLP JSON ExportTraceServiceRequest, or a list of them; "
        "openai-chat: a list of log lines (objects with `messages` and the answer)"
    )

    def targets(self) -> list[Target]:
        from rubricflow.traces import chat_log_targets, otel_targets

        items = self.data if isinstance(self.data, list) else [self.data]
        if self.format == "otel":
            return list(otel_targets(items, "traces.data"))
        return list(chat_log_targets(items, "traces.data"))


class EvaluateRequest(BaseModel):
    """A rubric (`rubric`, or `document` inline) and one `target`, many `targets`, or
    `traces` read into targets."""

    model_config = ConfigDict(extra="forbid")

    rubric: Annotated[str, AfterValidator(_storable)] | None = Field(
        default=None,
        min_length=1,
        max_length=302,
        description="A registered rubric: ID (the latest version) or ID@VERSION",
    )
    document: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_DOCUMENT_CHARS,
        description="A rubric document as text (YAML or JSON, any supported format)",
    )
    format: str | None = Field(
        default=None, max_length=100, description="The inline document's format; default: detected"
    )
    rubric_id: str | None = Field(
        default=None,
        max_length=200,
        description="Which rubric of an inline document that holds several",
    )
    target: Target | None = Field(default=None, description="One target")
    targets: list[Target] | None = Field(
        default=None, min_length=1, description="Several targets (bounded by the server)"
    )
    traces: Traces | None = Field(
        default=None,
        description="OTel spans or chat-completion logs, read into targets as "
        "`rubricflow eval --from` reads them",
    )
    _traced: list[Target] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _one_of_each(self) -> EvaluateRequest:
        if (self.rubric is None) == (self.document is None):
            raise ValueError("give either `rubric` (ID or ID@VERSION) or `document`, not both")
        given = [self.target, self.targets, self.traces]
        if sum(value is not None for value in given) != 1:
            raise ValueError("give one of `target`, `targets` or `traces`")
        if self.rubric is not None and (self.format is not None or self.rubric_id is not None):
            raise ValueError("`format` and `rubric_id` go with an inline `document`")
        return self

    @model_validator(mode="after")
    def _bounded_targets(self) -> EvaluateRequest:
        """Each target's content, reference and metadata keep the content bounds (a
        `ContentBoundsError` is a ValueError: a 422 naming the bound and the path)."""
        if self.traces is not None:
            from rubricflow.errors import RubricflowError

            try:
                self._traced = self.traces.targets()
            except RubricflowError as error:  # names the document, the span and the field
                raise ValueError(str(error)) from None
        for index, target in enumerate(self.all_targets):
            which = "target" if self.target is not None else f"targets[{index}]"
            check_content_bounds(target.content, f"{which} content")
            check_content_bounds(target.reference, f"{which} reference")
            check_content_bounds(target.metadata, f"{which} metadata")
        return self

    @property
    def all_targets(self) -> list[Target]:
        if self.traces is not None:
            return list(self._traced)
        return [self.target] if self.target is not None else list(self.targets or [])


class RubricRef(BaseModel):
    id: str
    version: str
    content_hash: str


class Tally(BaseModel):
    total: int
    passed: int
    failed: int
    incomplete: int


class EvaluateResponse(BaseModel):
    """Every target's evaluation, in the order the targets were given."""

    rubric: RubricRef
    evaluations: list[Evaluation]
    summary: Tally


class EvaluationLine(BaseModel):
    """One line of an NDJSON answer: the target's place in the request, its id, and its
    evaluation (or, should it fail outright, a problem)."""

    index: int
    target_id: str | None
    evaluation: Evaluation | None = None
    error: ApiProblem | None = None
