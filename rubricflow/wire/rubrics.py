"""Rubrics over HTTP: a document to register or lint, summaries, versions, the lint
report, diffs and per-criterion pass rates."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rubricflow.model import Rubric

if TYPE_CHECKING:
    from rubricflow.errors import Problem
    from rubricflow.records.evaluations import CriterionPassRate
    from rubricflow.records.rubrics import RubricVersionInfo
    from rubricflow.rubric_diff import RubricDiff

__all__ = [
    "MAX_DOCUMENT_CHARS",
    "CriterionChangeOut",
    "FieldChangeOut",
    "LintReport",
    "LintedRubric",
    "MetaFinding",
    "MetaRubricOut",
    "MetaRubricTotal",
    "PassRateOut",
    "PassRates",
    "ProblemItem",
    "RegisterResult",
    "RegisteredRubricOut",
    "RubricDiffOut",
    "RubricDocumentIn",
    "RubricList",
    "RubricOut",
    "RubricSummary",
    "RubricVersionOut",
    "RubricVersions",
    "VersionRef",
]

#: the largest rubric document accepted as text (the body limit applies as well)
MAX_DOCUMENT_CHARS = 5_000_000


class RubricDocumentIn(BaseModel):
    """A rubric document as text: YAML or JSON, in any supported format (native, or one
    the importers read: OpenRubricRL, AgentV, DataKnobs, RubricJudgeSpec, rubric)."""

    model_config = ConfigDict(extra="forbid")

    document: str = Field(
        min_length=1,
        max_length=MAX_DOCUMENT_CHARS,
        description="The rubric file's text (YAML or JSON); it may hold several rubrics",
    )
    format: str | None = Field(
        default=None, max_length=100, description="The document's format; default: detected"
    )


class RubricSummary(BaseModel):
    """A rubric version in brief."""

    id: str
    version: str
    name: str
    target_type: str | None
    content_hash: str
    criteria: int = Field(description="How many criteria it has")

    @classmethod
    def of(cls, rubric: Rubric) -> RubricSummary:
        return cls(
            id=rubric.id,
            version=rubric.version,
            name=rubric.name,
            target_type=rubric.target_type,
            content_hash=rubric.content_hash,
            criteria=len(rubric.criteria),
        )


class RegisteredRubricOut(RubricSummary):
    created: bool = Field(description="False when this exact content was stored already")


class RegisterResult(BaseModel):
    format: str = Field(description="The format the document was read in")
    registered: list[RegisteredRubricOut]


class RubricList(BaseModel):
    rubrics: list[RubricSummary]


class RubricOut(RubricSummary):
    """One rubric version with its whole native document."""

    document: Rubric = Field(description="The rubric as rubricflow's native document")


class RubricVersionOut(BaseModel):
    id: str
    version: str
    content_hash: str
    name: str
    target_type: str | None
    source_format: str | None
    created_at: datetime
    deleted: bool

    @classmethod
    def of(cls, info: RubricVersionInfo) -> RubricVersionOut:
        return cls(
            id=info.rubric_id,
            version=info.version,
            content_hash=info.content_hash,
            name=info.name,
            target_type=info.target_type,
            source_format=info.source_format,
            created_at=info.created_at,
            deleted=info.deleted,
        )


class RubricVersions(BaseModel):
    versions: list[RubricVersionOut] = Field(description="Lowest to highest version")


class ProblemItem(BaseModel):
    path: str = Field(description="Where: a field path such as criteria[2].weight")
    message: str

    @classmethod
    def of(cls, problem: Problem) -> ProblemItem:
        return cls(path=problem.path, message=problem.message)


class MetaFinding(BaseModel):
    check: str
    level: str
    message: str


class MetaRubricOut(BaseModel):
    """The meta-rubric's judgement of a rubric: five checks of how well it is written."""

    score: float
    passed: bool
    findings: list[MetaFinding]


class MetaRubricTotal(BaseModel):
    score: float = Field(description="The lowest meta-rubric score of the document's rubrics")
    passed: bool


class LintedRubric(BaseModel):
    id: str
    version: str
    content_hash: str
    meta_rubric: MetaRubricOut


class LintReport(BaseModel):
    """What `rubricflow validate` reports for a document: errors (it cannot be used),
    warnings (it can, but reads badly) and the meta-rubric of each rubric."""

    format: str | None
    valid: bool
    errors: list[ProblemItem]
    warnings: list[ProblemItem]
    meta_rubric: MetaRubricTotal | None
    rubrics: list[LintedRubric]


class FieldChangeOut(BaseModel):
    path: str
    kind: Literal["changed", "added", "removed"]
    before: Any = None
    after: Any = None


class CriterionChangeOut(BaseModel):
    criterion_id: str
    change: Literal["added", "removed", "changed"]
    fields: list[FieldChangeOut]


class VersionRef(BaseModel):
    version: str
    content_hash: str


class RubricDiffOut(BaseModel):
    """What changed between two versions, field by field, and whether any change can move
    a score or a verdict (`scoring_changed`), or only the wording did."""

    rubric_id: str
    before: VersionRef
    after: VersionRef
    identical: bool
    scoring_changed: bool
    reordered: bool
    rubric_fields: list[FieldChangeOut]
    criteria: list[CriterionChangeOut]

    @classmethod
    def of(cls, diff: RubricDiff) -> RubricDiffOut:
        return cls.model_validate(diff.to_dict())


class PassRateOut(BaseModel):
    rubric_id: str
    rubric_version: str
    criterion_id: str
    bucket: str | None = Field(description="The first day (UTC) of the week or day, if asked")
    scored: int
    passed: int
    failed: int
    unscored: int = Field(description="Results that could not be scored (error, unable)")
    pass_rate: float | None

    @classmethod
    def of(cls, rate: CriterionPassRate) -> PassRateOut:
        return cls.model_validate(rate.to_dict())


class PassRates(BaseModel):
    rates: list[PassRateOut] = Field(description="Per bucket, the most failed criteria first")
