"""The artifact records the store keeps and hands back: types and their rubric bindings,
artifacts, audit-trail events, `Change`, a transition to persist as the lifecycle
decided it, and `ReviewOutcome`, where a submission or review left an artifact. Plain
values below the store: no database in here."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    field_serializer,
    model_validator,
)

from rubricflow.content_bounds import shown_within_depth
from rubricflow.errors import ConfigurationError, ReviewError
from rubricflow.identifiers import id_problem
from rubricflow.model import (
    MAX_ID_LENGTH,
    MAX_NAME_LENGTH,
    MAX_VERSION_LENGTH,
    NUL_MESSAGE,
)
from rubricflow.results import Evaluation, canonical_json

__all__ = [
    "KEEP",
    "SYSTEM_ACTOR",
    "Artifact",
    "ArtifactEvent",
    "ArtifactType",
    "Change",
    "EvaluationBrief",
    "Keep",
    "NewArtifact",
    "ReviewOutcome",
    "ReviewPolicy",
    "RubricBinding",
    "SubmissionOutcome",
    "Submitting",
    "content_hash",
]

#: the actor of every decision rubricflow makes itself (a review's verdict, a failed
#: review's release, a lease taken over); no person may act under this name, so a
#: decision by any other actor is a person's
SYSTEM_ACTOR = "rubricflow"


def _storable(value: str) -> str:
    if "\x00" in value:
        raise ValueError(NUL_MESSAGE)
    return value


_Key = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH), AfterValidator(_storable)]
_Version = Annotated[str, Field(min_length=1, max_length=MAX_VERSION_LENGTH)]


class _Checked(BaseModel):
    """A record built from a caller's input: a value that breaks a bound (the store's column
    sizes, no NUL) is a `ConfigurationError` naming the field and the limit, not pydantic's
    ValidationError (a front door turns a RubricflowError into a usage error)."""

    @model_validator(mode="wrap")
    @classmethod
    def _clear_errors(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        try:
            return handler(data)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'value'}: "
                f"{e['msg'].removeprefix('Value error, ')}"
                for e in error.errors(include_url=False)
            )
            what = "artifact type" if cls is ArtifactType else "rubric binding"
            raise ConfigurationError(f"invalid {what}: {problems}") from None


class RubricBinding(_Checked):
    """A rubric an artifact type is reviewed against: the latest version, or a pinned one.
    A `blocking` rubric's failure rejects the artifact instead of asking for revision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rubric_id: _Key
    version: _Version | None = None
    blocking: bool = False

    @classmethod
    def parse(cls, spec: str, *, blocking: bool = False) -> RubricBinding:
        """`ID` (latest) or `ID@VERSION` (pinned)."""
        rubric_id, _, version = spec.partition("@")
        return cls(rubric_id=rubric_id, version=version or None, blocking=blocking)

    def __str__(self) -> str:
        return f"{self.rubric_id}@{self.version}" if self.version else self.rubric_id


class ReviewPolicy(BaseModel):
    """Who decides a reviewed artifact: the machine's verdict stands (`auto`) unless a
    routing rule sends the artifact to people (`human`); `reviewers` people decide each
    routed or audited artifact, and a `leads` reviewer's decision settles it alone."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    route_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """Route when a criterion's confidence is below this."""
    route_margin: float | None = Field(default=None, ge=0.0, le=1.0)
    """Route when |score - threshold| is at most this."""
    audit_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """The share of auto-decided artifacts also sent to a reviewer, blind to the verdict."""
    audit_seed: int = 0
    """Seeds the audit draw (deterministic per artifact id, revision and seed)."""
    escalate_to: Annotated[str, Field(min_length=1, max_length=4000)] | None = None
    """A stronger judge (spec or panel) run on the criteria the type's judge was unsure of."""
    reviewers: int = Field(default=1, ge=1, le=20)
    """Human decisions a routed or audited artifact needs."""
    leads: tuple[_Key, ...] = Field(default=(), max_length=100)
    """Reviewers whose decision settles an artifact alone (a disagreement, say)."""

    @property
    def routes(self) -> bool:
        """Whether any uncertainty rule is on (a panel split and an uncertain required
        criterion route only then, so a type without a policy keeps its behaviour)."""
        return self.route_confidence is not None or self.route_margin is not None


class ArtifactType(_Checked):
    """What kind of artifact this is and how it is reviewed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: _Key
    rubrics: tuple[RubricBinding, ...] = ()
    auto_review: bool = True
    requires_approval: bool = False
    approval_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    content_schema: dict[str, Any] | None = None
    description: str = ""
    judge: Annotated[str, Field(min_length=1, max_length=4000)] | None = None
    """The LLM judge this type's reviews use: a spec, or a panel
    (`panel:POLICY(A | B | ...)`); None: the reviewer's (the server's or worker's) judge."""
    review_policy: ReviewPolicy = ReviewPolicy()
    """When a verdict stands and when people decide (`rubricflow types set --route-*`)."""
    max_cost_per_artifact: float | None = Field(default=None, ge=0.0)
    """The most one review of an artifact may spend on judge calls, at the judge's price
    (`rubricflow types set --max-cost-per-artifact`); past it the remaining LLM criteria
    are unable_to_evaluate with the reason "budget". None: no cap."""
    daily_budget: float | None = Field(default=None, ge=0.0)
    """The most this type's reviews may spend on judge calls in one UTC day, counted in the
    store and shared by every worker and server (`types set --daily-budget`). None: none."""
    judge_batch: bool = False
    """Whether a worker's (deferred) review of this type sends its judge calls through the
    provider's batch API at the batch price (`types set --batch`); an inline review that
    someone waits for never does."""


class Artifact(BaseModel):
    """An artifact's current state and the content of its current revision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    type: str
    status: str
    revision: int
    version: int
    content: Any
    content_hash: str
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_by: str
    created_at: datetime
    updated_at: datetime
    queued_at: datetime | None = None
    awaiting_approval: bool = False
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    last_reason: str | None = None
    #: failed reviews in a row (errors, incomplete evaluations, expired leases); the
    #: lifecycle dead-letters the artifact when they reach its limit
    failures: int = 0

    @field_serializer("content")
    def _content_shown(self, content: Any) -> Any:
        """Content as stored, cut with a marker past `MAX_SHOWN_DEPTH` levels (rows stored
        before the content bounds): a response that holds it never fails."""
        return shown_within_depth(content)

    @field_serializer("metadata")
    def _metadata_shown(self, metadata: dict[str, Any]) -> dict[str, Any]:
        shown: dict[str, Any] = shown_within_depth(metadata)
        return shown

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class ArtifactEvent(BaseModel):
    """One entry of the audit trail."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    artifact_id: str
    seq: int
    revision: int
    trigger: str
    source: str
    dest: str
    actor: str
    reason: str | None = None
    evaluation_ids: tuple[str, ...] = ()
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class NewArtifact(NamedTuple):
    """An artifact to create, revision 1, with the states the lifecycle gives a new one
    (`state` for the artifact, `revision_state` for its revision) and the name of the event
    that records it (`trigger`)."""

    artifact_id: str
    type_name: str
    content: Any
    actor: str
    title: str | None
    metadata: dict[str, Any]
    trigger: str
    state: str
    revision_state: str


class Submitting(NamedTuple):
    """An artifact about to be submitted: its type, the number of its latest event, and
    whether complete evaluations of its current revision are stored."""

    artifact: Artifact
    artifact_type: ArtifactType
    last_seq: int
    reviewed: bool


class Keep(enum.Enum):
    """A field a `Change` leaves as it is."""

    KEEP = "keep"


KEEP = Keep.KEEP


class Change(NamedTuple):
    """One transition to persist, exactly as decided by the lifecycle and the service: the
    store writes `dest` and these fields, and decides nothing. A change releases the lease
    and the approval wait unless it sets them; `queued_at` is kept unless given."""

    trigger: str
    dest: str
    actor: str
    reason: str | None = None
    evaluation_ids: Sequence[str] = ()
    awaiting_approval: bool = False
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    queued_at: datetime | Literal[Keep.KEEP] | None = KEEP
    #: the number of a new revision the artifact moves to (its content stored with
    #: `ArtifactTransaction.add_revision`); None keeps the revision
    revision: int | None = None
    #: the count of failed reviews in a row after this change (None keeps it)
    failures: int | None = None
    #: the artifact's `last_reason` when it must not be the event's reason (a reviewer's
    #: decision, hidden from later reviewers until the artifact is settled); None: `reason`
    shown_reason: str | None = None


def _check_text(value: str | None, what: str, limit: int | None = None) -> None:
    """Refuse text the store cannot keep on both backends: longer than its column, or
    holding NUL (PostgreSQL refuses it), naming the field and the limit."""
    if value is None:
        return
    if limit is not None and len(value) > limit:
        raise ReviewError(f"{what} is {len(value)} characters; the limit is {limit}: shorten it")
    if "\x00" in value:
        raise ReviewError(f"{what} {NUL_MESSAGE}")


def _check_new_artifact(new: NewArtifact) -> None:
    problem = id_problem(new.artifact_id, what="the artifact id", path_segment=False)
    if problem is not None:  # the id rule, before anything is created
        raise ReviewError(problem)
    _check_text(new.type_name, "the artifact type", MAX_ID_LENGTH)
    _check_text(new.actor, "the actor", MAX_ID_LENGTH)
    _check_text(new.title, "the title", MAX_NAME_LENGTH)


def _check_change(change: Change) -> None:
    _check_text(change.actor, "the actor", MAX_ID_LENGTH)
    _check_text(change.reason, "the reason")
    _check_text(change.lease_owner, "the worker name (lease owner)", MAX_ID_LENGTH)


_Tuple = TypeVar("_Tuple", bound=tuple[Any, ...])


def _checked_on_creation(record: type[_Tuple], check: Callable[[_Tuple], None]) -> None:
    """Run `check` on every `record(...)` built (a NamedTuple cannot define `__new__` in its
    body): whoever builds a new artifact or a change, the bounds hold before the store."""
    plain = record.__new__

    def checked(cls: type[_Tuple], *args: Any, **kwargs: Any) -> _Tuple:
        made = plain(cls, *args, **kwargs)
        check(made)
        return made

    setattr(record, "__new__", staticmethod(checked))  # noqa: B010 (mypy: method-assign)


_checked_on_creation(NewArtifact, _check_new_artifact)
_checked_on_creation(Change, _check_change)


def content_hash(content: Any) -> str:
    text = content if isinstance(content, str) else canonical_json(content)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class ReviewOutcome:
    """Where a submission or review left the artifact, and the evaluations it used."""

    artifact: Artifact
    evaluations: list[Evaluation] = field(default_factory=list)
    queued: bool = False
    reason: str | None = None

    @property
    def approved(self) -> bool:
        return self.artifact.status == "approved"

    def brief(self) -> SubmissionOutcome:
        """This outcome as every door reports it (`SubmissionOutcome`)."""
        return SubmissionOutcome(
            artifact=self.artifact,
            queued=self.queued,
            reason=self.reason,
            evaluations=tuple(EvaluationBrief.of(e) for e in self.evaluations),
        )

    def to_dict(self) -> dict[str, Any]:
        return self.brief().to_dict()


@dataclass(frozen=True)
class EvaluationBrief:
    """An evaluation a review used, in brief: what a submission reports of it."""

    id: str
    rubric_id: str
    rubric_version: str
    verdict: str
    passed: bool
    score: float
    coverage: float
    feedback: str
    margin: float | None = None

    @classmethod
    def of(cls, evaluation: Evaluation) -> EvaluationBrief:
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


@dataclass(frozen=True)
class SubmissionOutcome:
    """Where a submission left the artifact, as both doors report it: the in-process
    `ArtifactsAPI` and the HTTP client give the same value, so a command that submits
    has one path."""

    artifact: Artifact
    queued: bool = False
    reason: str | None = None
    evaluations: tuple[EvaluationBrief, ...] = ()

    @property
    def status(self) -> str:
        return self.artifact.status

    @property
    def approved(self) -> bool:
        return self.artifact.status == "approved"

    def to_dict(self) -> dict[str, Any]:
        return {
            "artifact": self.artifact.to_dict(),
            "status": self.artifact.status,
            "queued": self.queued,
            "reason": self.reason,
            "evaluation_ids": [e.id for e in self.evaluations],
            "evaluations": [
                {
                    "id": e.id,
                    "rubric_id": e.rubric_id,
                    "rubric_version": e.rubric_version,
                    "verdict": e.verdict,
                    "score": e.score,
                    "feedback": e.feedback,
                }
                for e in self.evaluations
            ],
        }
