"""The request and response bodies of the artifact and artifact-type resources (the
server's routes and the client share them). The records themselves (`Artifact`,
`ArtifactEvent`, `ArtifactType`, `Evaluation`) are already pydantic and are served as
they are; the dataclass `ReviewOutcome` gets `ReviewOutcomeOut`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from rubricflow.identifiers import ID_PATTERN, valid_id
from rubricflow.model import MAX_ID_LENGTH, MAX_NAME_LENGTH, MAX_VERSION_LENGTH
from rubricflow.records.artifacts import (
    Artifact,
    ArtifactType,
    EvaluationBrief,
    ReviewPolicy,
    RubricBinding,
    SubmissionOutcome,
)

if TYPE_CHECKING:
    from rubricflow.records.artifacts import ReviewOutcome
    from rubricflow.results import Evaluation

__all__ = [
    "ID_PATTERN",
    "ArtifactCreate",
    "ArtifactPage",
    "ArtifactTypeIn",
    "Decision",
    "EvaluationSummary",
    "Note",
    "ReviewOutcomeOut",
    "ReviewPolicyIn",
    "Revision",
    "RubricBindingIn",
    "Submission",
    "Supersession",
]


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


#: an id, type or name chosen over HTTP (the OpenAPI document gives the rule as a pattern;
#: the check says what is wrong)
_Id = Annotated[
    str,
    Field(min_length=1, max_length=MAX_ID_LENGTH, json_schema_extra={"pattern": ID_PATTERN}),
    AfterValidator(valid_id),
]
_Text = Annotated[str, AfterValidator(_no_nul)]
_Reason = Annotated[
    str,
    Field(min_length=1, max_length=10_000, description="Why: kept on the record"),
    AfterValidator(_no_nul),
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RubricBindingIn(_Body):
    """A rubric reviewing an artifact type: the latest version, or a pinned one."""

    rubric_id: _Id
    version: (
        Annotated[str, Field(min_length=1, max_length=MAX_VERSION_LENGTH), AfterValidator(_no_nul)]
        | None
    ) = None
    blocking: bool = Field(
        default=False, description="Its failure rejects instead of asking for revision"
    )


class ReviewPolicyIn(_Body):
    """A type's review policy: routing uncertain verdicts to people, audits, reviewers."""

    route_confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Route when a criterion's confidence is below"
    )
    route_margin: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Route when |score - threshold| <= this"
    )
    audit_rate: float = Field(
        default=0.0, ge=0.0, le=1.0, description="Share of auto-decided artifacts audited blind"
    )
    audit_seed: int = Field(default=0, description="Seeds the per-artifact audit draw")
    escalate_to: (
        Annotated[str, Field(min_length=1, max_length=4000), AfterValidator(_no_nul)] | None
    ) = Field(default=None, description="A stronger judge for the criteria the first was unsure of")
    reviewers: int = Field(default=1, ge=1, le=20, description="Human decisions needed")
    leads: list[_Id] = Field(
        default_factory=list, max_length=100, description="Reviewers who settle alone"
    )

    def to_policy(self) -> ReviewPolicy:
        return ReviewPolicy(
            route_confidence=self.route_confidence,
            route_margin=self.route_margin,
            audit_rate=self.audit_rate,
            audit_seed=self.audit_seed,
            escalate_to=self.escalate_to,
            reviewers=self.reviewers,
            leads=tuple(self.leads),
        )


class ArtifactTypeIn(_Body):
    """An artifact type's definition (its name is in the path)."""

    rubrics: list[RubricBindingIn] = Field(default_factory=list, max_length=100)
    auto_review: bool = Field(default=True, description="Review on submit")
    requires_approval: bool = Field(
        default=False, description="A passing review waits for a human's approve"
    )
    approval_threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Overrides the rubrics' pass thresholds"
    )
    content_schema: dict[str, Any] | None = Field(
        default=None, description="A JSON Schema the content must match"
    )
    description: Annotated[str, Field(max_length=10_000), AfterValidator(_no_nul)] = ""
    judge: Annotated[str, Field(min_length=1, max_length=4000), AfterValidator(_no_nul)] | None = (
        Field(
            default=None,
            description="The LLM judge for this type's reviews: a spec, or a panel "
            "`panel:POLICY(A | B | ...)` (POLICY: majority, unanimous, any_unmet, mean, median); "
            "default the server's judge. It may name only the judges the server was started "
            "with (in a panel of the type's own).",
        )
    )

    review_policy: ReviewPolicyIn = Field(
        default_factory=lambda: ReviewPolicyIn(),
        description="When the machine's verdict stands and when people decide",
    )
    max_cost_per_artifact: float | None = Field(
        default=None,
        ge=0.0,
        description="The most one artifact's review may spend on judge calls, at the judge's "
        'price; past it the remaining LLM criteria are unable_to_evaluate ("budget")',
    )
    daily_budget: float | None = Field(
        default=None,
        ge=0.0,
        description="The most this type's reviews may spend on judge calls in a UTC day, "
        "shared by every worker and server",
    )
    judge_batch: bool = Field(
        default=False,
        description="A worker's review of this type sends its judge calls through the "
        "provider's batch API (OpenAI Batch API, Anthropic Message Batches) at the batch "
        "price; an inline review someone waits for never does",
    )

    def to_type(self, name: str) -> ArtifactType:
        return ArtifactType(
            name=name,
            rubrics=tuple(
                RubricBinding(rubric_id=b.rubric_id, version=b.version, blocking=b.blocking)
                for b in self.rubrics
            ),
            auto_review=self.auto_review,
            requires_approval=self.requires_approval,
            approval_threshold=self.approval_threshold,
            content_schema=self.content_schema,
            description=self.description,
            judge=self.judge,
            review_policy=self.review_policy.to_policy(),
            max_cost_per_artifact=self.max_cost_per_artifact,
            daily_budget=self.daily_budget,
            judge_batch=self.judge_batch,
        )


class ArtifactCreate(_Body):
    """A new artifact: its type and content (any JSON), optionally its id and a title."""

    type: _Id
    content: Any = Field(description="The content under review: any JSON value")
    title: Annotated[str, Field(max_length=MAX_NAME_LENGTH), AfterValidator(_no_nul)] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    id: _Id | None = Field(default=None, description="Choose the id (default: a random one)")


class Submission(ArtifactCreate):
    """Create an artifact and submit it for review, in one request."""

    defer: bool = Field(default=False, description="Only queue the review for the workers")


class Decision(_Body):
    """A human decision, with its reason (required)."""

    reason: _Reason


class Note(_Body):
    """A change whose reason is optional."""

    reason: _Reason | None = None


class Revision(_Body):
    """New content, as a new revision (back to draft)."""

    content: Any = Field(description="The new content: any JSON value")
    reason: _Reason


class Supersession(_Body):
    """Retire an artifact another one replaces."""

    reason: _Reason
    by: _Id | None = Field(default=None, description="The id of the replacing artifact")


class EvaluationSummary(BaseModel):
    """An evaluation a review used, in brief (`GET .../evaluations` has them whole)."""

    id: str
    rubric_id: str
    rubric_version: str
    verdict: str
    passed: bool
    score: float
    coverage: float
    feedback: str
    margin: float | None = Field(
        default=None, description="The score minus the pass threshold (negative: below it)"
    )

    @classmethod
    def of(cls, evaluation: Evaluation) -> EvaluationSummary:
        return cls(
            id=evaluation.id,
            rubric_id=evaluation.rubric_id,
            rubric_version=evaluation.rubric_version,
            verdict=evaluation.verdict,
            passed=evaluation.passed,
            score=evaluation.score,
            coverage=evaluation.coverage,
            feedback=evaluation.feedback,
            margin=evaluation.margin,
        )


class ReviewOutcomeOut(BaseModel):
    """Where a submission left the artifact: reviewed (its status says the decision) or
    queued for a worker, with the evaluations the review used."""

    artifact: Artifact
    status: str
    approved: bool
    queued: bool
    reason: str | None = None
    evaluations: list[EvaluationSummary] = Field(default_factory=list)

    @classmethod
    def of(cls, outcome: ReviewOutcome) -> ReviewOutcomeOut:
        return cls(
            artifact=outcome.artifact,
            status=outcome.artifact.status,
            approved=outcome.approved,
            queued=outcome.queued,
            reason=outcome.reason,
            evaluations=[EvaluationSummary.of(e) for e in outcome.evaluations],
        )

    def brief(self) -> SubmissionOutcome:
        """This outcome as the in-process door reports it (`ReviewOutcome.brief`)."""
        return SubmissionOutcome(
            artifact=self.artifact,
            queued=self.queued,
            reason=self.reason,
            evaluations=tuple(
                EvaluationBrief(**e.model_dump(include=_BRIEF_FIELDS)) for e in self.evaluations
            ),
        )


#: the fields of `EvaluationSummary` that `EvaluationBrief` holds (all of them)
_BRIEF_FIELDS = {
    "id",
    "rubric_id",
    "rubric_version",
    "verdict",
    "passed",
    "score",
    "coverage",
    "feedback",
    "margin",
}


class ArtifactPage(BaseModel):
    """A page of artifacts, newest first, and the cursor of the next page (None at the
    end)."""

    items: list[Artifact]
    next_cursor: str | None = Field(
        default=None, description="Pass as `cursor` for the next page; absent at the end"
    )
