"""The store's tables (SQLModel). Schema changes ship as Alembic migrations in
`migrations/versions`; a test keeps the migrated schema identical to these tables."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

__all__ = [
    "ApiTokenRow",
    "ArtifactCommentRow",
    "ArtifactEventRow",
    "ArtifactRevisionRow",
    "ArtifactRow",
    "ArtifactTypeRow",
    "CriterionResultRow",
    "EvaluationRow",
    "IdempotencyKeyRow",
    "JudgeCacheRow",
    "JudgeCorrectionRow",
    "LLMCallRow",
    "ReviewClaimRow",
    "RubricGenerationRow",
    "RubricRow",
    "RubricVersionRow",
    "RunRow",
    "WebhookAttemptRow",
    "WebhookDeliveryRow",
    "WebhookSubscriptionRow",
    "metadata",
]

metadata = SQLModel.metadata


def _when(*, nullable: bool) -> Any:
    return Field(sa_column=sa.Column(sa.DateTime(timezone=True), nullable=nullable))


class RubricRow(SQLModel, table=True):
    """One row per rubric id: whether it is deleted (hidden from latest lookups)."""

    __tablename__ = "rubrics"

    rubric_id: str = Field(primary_key=True, max_length=200)
    deleted_at: datetime | None = _when(nullable=True)
    created_at: datetime = _when(nullable=False)


class RubricVersionRow(SQLModel, table=True):
    """An immutable rubric version: (id, version) with its content hash and document."""

    __tablename__ = "rubric_versions"

    rubric_id: str = Field(
        primary_key=True, max_length=200, foreign_key="rubrics.rubric_id", ondelete="CASCADE"
    )
    version: str = Field(primary_key=True, max_length=100)
    content_hash: str = Field(max_length=64)
    name: str
    target_type: str | None = Field(default=None, index=True, max_length=200)
    source_format: str | None = Field(default=None, max_length=50)
    document: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    created_at: datetime = _when(nullable=False)


class RubricGenerationRow(SQLModel, table=True):
    """One row counting the writes to `rubrics` and `rubric_versions`, kept by database
    triggers (migration 0016) whoever writes them: a process that read a rubric's latest
    version at one generation knows it is still the latest while the count stands."""

    __tablename__ = "rubric_generation"

    id: int = Field(primary_key=True)
    generation: int = Field(sa_column=sa.Column(sa.BigInteger, nullable=False))


class EvaluationRow(SQLModel, table=True):
    """An evaluation, stored whole: its columns for queries and its full JSON document."""

    __tablename__ = "evaluations"
    __table_args__ = (
        sa.Index("ix_evaluations_rubric", "rubric_id", "rubric_version", "created_at"),
        sa.Index("ix_evaluations_target", "target_id", "created_at"),
        sa.Index("ix_evaluations_artifact", "artifact_id", "revision", "created_at"),
        sa.Index("ix_evaluations_verdict", "verdict", "created_at"),
        sa.Index("ix_evaluations_created", "created_at"),
        sa.Index("ix_evaluations_run", "run_id", "target_id"),
        sa.Index(
            "uq_evaluations_review",
            "artifact_id",
            "revision",
            "rubric_id",
            "rubric_version",
            unique=True,
            sqlite_where=sa.text("artifact_id IS NOT NULL AND verdict <> 'incomplete'"),
            postgresql_where=sa.text("artifact_id IS NOT NULL AND verdict <> 'incomplete'"),
        ),
    )

    id: str = Field(primary_key=True, max_length=64)
    rubric_id: str = Field(max_length=200)
    rubric_version: str = Field(max_length=100)
    rubric_hash: str = Field(max_length=64)
    target_id: str | None = Field(default=None, max_length=500)
    target_hash: str = Field(max_length=64)
    artifact_id: str | None = Field(default=None, max_length=200)
    revision: int | None = None
    verdict: str = Field(max_length=20)
    passed: bool
    score: float
    scaled_score: float
    raw_score: float
    coverage: float
    threshold: float
    unscored_policy: str = Field(max_length=20)
    feedback: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    created_at: datetime = _when(nullable=False)
    duration_ms: float = 0.0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    document: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    run_id: str | None = Field(default=None, max_length=200)
    #: score minus the pass threshold (NULL on evaluations stored before it existed)
    margin: float | None = None


class RunRow(SQLModel, table=True):
    """A batch evaluation run: what was evaluated, with which options, and how it ended.
    Its evaluations carry its id (`evaluations.run_id`)."""

    __tablename__ = "runs"
    __table_args__ = (sa.Index("ix_runs_started", "started_at"),)

    id: str = Field(primary_key=True, max_length=200)
    rubric_id: str = Field(max_length=200)
    rubric_version: str = Field(max_length=100)
    source: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    status: str = Field(max_length=20)
    started_at: datetime = _when(nullable=False)
    finished_at: datetime | None = _when(nullable=True)
    options: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    #: the process running it (host:pid) and when it last said so: a `running` run whose
    #: process is gone is reported `interrupted`
    owner: str | None = Field(default=None, max_length=300)
    heartbeat_at: datetime | None = _when(nullable=True)


class CriterionResultRow(SQLModel, table=True):
    """One criterion's result within a stored evaluation, for per-criterion queries."""

    __tablename__ = "criterion_results"
    __table_args__ = (
        # covers the per-criterion queries (pass rates, run summaries): joined from an
        # evaluation, they read the index alone, never the rows with their evidence
        sa.Index(
            "ix_criterion_results_outcome",
            "evaluation_id",
            "criterion_id",
            "status",
            "passed",
            "score",
            "position",
        ),
    )

    evaluation_id: str = Field(
        primary_key=True, max_length=64, foreign_key="evaluations.id", ondelete="CASCADE"
    )
    criterion_id: str = Field(primary_key=True, max_length=200)
    position: int
    status: str = Field(max_length=30)
    score: float | None = None
    verdict: str | None = Field(default=None, max_length=10)
    level: str | None = Field(default=None, max_length=200)
    passed: bool | None = None
    weight: float
    required: bool
    scorer: str = Field(max_length=100)
    notes: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    evidence: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    #: how sure the judge is, in [0, 1], and what that was measured from (panel, samples,
    #: logprobs); NULL where nothing measured it
    confidence: float | None = None
    confidence_source: str | None = Field(default=None, max_length=50)


class LLMCallRow(SQLModel, table=True):
    """The call ledger: one row per judge request (hashes only, never prompts or keys)."""

    __tablename__ = "llm_calls"
    __table_args__ = (
        # the evaluation's calls (foreign key, cascade), and covering for the usage
        # queries: judge calls, cache hits, tokens and cost per run and model
        sa.Index(
            "ix_llm_calls_usage",
            "evaluation_id",
            "outcome",
            "provider",
            "model",
            "input_tokens",
            "output_tokens",
            "cost",
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    evaluation_id: str | None = Field(
        default=None, max_length=64, foreign_key="evaluations.id", ondelete="CASCADE"
    )
    criterion_id: str | None = Field(default=None, max_length=200)
    provider: str = Field(max_length=100)
    model: str = Field(max_length=200)
    prompt_hash: str = Field(max_length=64)
    response_hash: str | None = Field(default=None, max_length=64)
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float = 0.0
    attempt: int = 1
    outcome: str = Field(max_length=30)
    error: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    cost: float | None = None
    created_at: datetime = _when(nullable=False)
    #: which judge of a panel asked (its spec label) and what its answer said
    judge: str | None = Field(default=None, max_length=500)
    verdict: str | None = Field(default=None, max_length=200)


class JudgeCacheRow(SQLModel, table=True):
    """The content-addressed judge cache: a key (sha256 of the full request) -> answer."""

    __tablename__ = "judge_cache"

    key: str = Field(primary_key=True, max_length=64)
    value: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    created_at: datetime = _when(nullable=False)
    hits: int = 0


class ArtifactTypeRow(SQLModel, table=True):
    """An artifact type: its rubric bindings and review options, as a JSON document."""

    __tablename__ = "artifact_types"

    name: str = Field(primary_key=True, max_length=200)
    document: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    updated_at: datetime = _when(nullable=False)


class ArtifactRow(SQLModel, table=True):
    """An artifact's current state. `version` is the optimistic lock every transition
    bumps; `lease_*` say which worker is reviewing it and until when."""

    __tablename__ = "artifacts"
    __table_args__ = (
        sa.Index("ix_artifacts_type_status", "type", "status", "updated_at"),
        sa.Index("ix_artifacts_queue", "status", "queued_at"),
        # the review dashboard's queue (migration 0010): a page per state in keyset
        # order, and the counts per state (an index-only scan)
        sa.Index("ix_artifacts_status_updated", "status", "updated_at", "id"),
        sa.Index("ix_artifacts_states", "status", "awaiting_approval", "failures"),
        # keyset pages of a listing, newest first (migration 0009)
        sa.Index("ix_artifacts_created", "created_at", "id"),
        # the queue by score and by margin, a page per state in keyset order (0014)
        sa.Index("ix_artifacts_status_score", "status", "review_score", "id"),
        sa.Index("ix_artifacts_status_margin", "status", "review_margin", "id"),
    )

    id: str = Field(primary_key=True, max_length=200)
    type: str = Field(max_length=200, foreign_key="artifact_types.name")
    status: str = Field(max_length=30)
    revision: int = 1
    version: int = 1
    title: str | None = Field(default=None, max_length=500)
    metadata_json: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    created_by: str = Field(max_length=200)
    created_at: datetime = _when(nullable=False)
    updated_at: datetime = _when(nullable=False)
    queued_at: datetime | None = _when(nullable=True)
    awaiting_approval: bool = False
    lease_owner: str | None = Field(default=None, max_length=200)
    lease_expires_at: datetime | None = _when(nullable=True)
    last_reason: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    # failed reviews in a row; the lifecycle dead-letters the artifact at its limit
    failures: int = Field(
        default=0, sa_column=sa.Column(sa.Integer, nullable=False, default=0, server_default="0")
    )
    #: the latest evaluation of the current revision: its score and its distance to the
    #: pass threshold (|margin|), for the queue's orders; NO_SCORE before any (and after a
    #: revision, until it is reviewed); written with the evaluation (migration 0014)
    review_score: float = Field(
        default=1e9,
        sa_column=sa.Column(sa.Float, nullable=False, default=1e9, server_default="1e9"),
    )
    review_margin: float = Field(
        default=1e9,
        sa_column=sa.Column(sa.Float, nullable=False, default=1e9, server_default="1e9"),
    )


class ArtifactRevisionRow(SQLModel, table=True):
    """One revision of an artifact's content; evaluations belong to a revision."""

    __tablename__ = "artifact_revisions"

    artifact_id: str = Field(
        primary_key=True, max_length=200, foreign_key="artifacts.id", ondelete="CASCADE"
    )
    revision: int = Field(primary_key=True)
    content: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    content_hash: str = Field(max_length=64)
    reason: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    actor: str = Field(max_length=200)
    status: str = Field(max_length=30)
    created_at: datetime = _when(nullable=False)


class ArtifactEventRow(SQLModel, table=True):
    """The append-only audit trail: one row per transition, with what caused it."""

    __tablename__ = "artifact_events"
    __table_args__ = (
        sa.UniqueConstraint("artifact_id", "seq", name="uq_artifact_events_seq"),
        # the artifacts with a given event (the reviewers' votes), without a full scan
        sa.Index("ix_artifact_events_trigger", "trigger", "artifact_id", "created_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    artifact_id: str = Field(
        max_length=200, foreign_key="artifacts.id", ondelete="CASCADE", index=True
    )
    seq: int
    revision: int
    trigger: str = Field(max_length=30)
    source: str = Field(max_length=30)
    dest: str = Field(max_length=30)
    actor: str = Field(max_length=200)
    reason: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    evaluation_ids: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    created_at: datetime = _when(nullable=False)


class ApiTokenRow(SQLModel, table=True):
    """An API token: its name (the actor it records), role, allowed artifact types and the
    SHA-256 of its secret. The secret itself is shown once and never stored."""

    __tablename__ = "api_tokens"

    id: str = Field(primary_key=True, max_length=40)
    name: str = Field(max_length=200, unique=True)
    role: str = Field(max_length=20)
    types: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    secret_hash: str = Field(max_length=64)
    created_by: str = Field(max_length=200)
    created_at: datetime = _when(nullable=False)
    expires_at: datetime | None = _when(nullable=True)
    revoked_at: datetime | None = _when(nullable=True)


class WebhookSubscriptionRow(SQLModel, table=True):
    """A webhook subscription: where to POST which events (of one artifact type, or of
    all), signed with its secret (`whsec_...`, kept to sign with: the receiver holds the
    same). `allow_private` lets an admin send to a private or loopback address; a removed
    subscription stays (inactive) so its delivery log can still be read."""

    __tablename__ = "webhook_subscriptions"

    id: str = Field(primary_key=True, max_length=40)
    url: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    artifact_type: str | None = Field(default=None, max_length=200)
    #: the events as a JSON list of names, e.g. ["approved", "rejected"]
    events: str = Field(max_length=500)
    secret: str = Field(max_length=200)
    allow_private: bool = False
    active: bool = True
    created_by: str = Field(max_length=200)
    created_at: datetime = _when(nullable=False)
    removed_at: datetime | None = _when(nullable=True)


class WebhookDeliveryRow(SQLModel, table=True):
    """The outbox: one message to one subscription, written in the transaction of the
    transition it announces and sent (at least once) by a delivery worker. `message_id` is
    the Standard Webhooks `webhook-id`, the same on every retry and replay; `lease_*` say
    which worker is sending it and until when (as the artifacts' review leases do)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        sa.Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        sa.Index("ix_webhook_deliveries_subscription", "subscription_id", "id"),
        sa.Index("ix_webhook_deliveries_message", "message_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    message_id: str = Field(max_length=64)
    subscription_id: str = Field(max_length=40, foreign_key="webhook_subscriptions.id")
    event_type: str = Field(max_length=50)
    artifact_id: str = Field(max_length=200)
    event_seq: int
    payload: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    created_at: datetime = _when(nullable=False)
    status: str = Field(max_length=20)
    attempts: int = 0
    next_attempt_at: datetime = _when(nullable=False)
    lease_owner: str | None = Field(default=None, max_length=200)
    lease_expires_at: datetime | None = _when(nullable=True)
    last_status_code: int | None = None
    last_error: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    finished_at: datetime | None = _when(nullable=True)
    #: the delivery this one replays (same message id), if any
    replay_of: int | None = None


class WebhookAttemptRow(SQLModel, table=True):
    """One attempt to send a delivery: when, by which worker, the HTTP status (None when
    no response came), how long it took and the error."""

    __tablename__ = "webhook_attempts"

    id: int | None = Field(default=None, primary_key=True)
    delivery_id: int = Field(foreign_key="webhook_deliveries.id", ondelete="CASCADE", index=True)
    attempt: int
    attempted_at: datetime = _when(nullable=False)
    status_code: int | None = None
    latency_ms: float = 0.0
    error: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    worker: str = Field(max_length=200)


class IdempotencyKeyRow(SQLModel, table=True):
    """A state-changing HTTP request made under an `Idempotency-Key`: per principal and
    key, the fingerprint of the request (method, path, body) and, once it finished, its
    response, replayed to a retry instead of doing the work again. `status` is None while
    the first request runs (until `locked_until`); the row expires at `expires_at`."""

    __tablename__ = "idempotency_keys"

    principal: str = Field(primary_key=True, max_length=200)
    key: str = Field(primary_key=True, max_length=255)
    fingerprint: str = Field(max_length=64)
    status: int | None = None
    #: the stored response's headers worth replaying (content-type, etag, location), JSON
    headers: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    body: bytes | None = Field(default=None, sa_column=sa.Column(sa.LargeBinary, nullable=True))
    created_at: datetime = _when(nullable=False)
    locked_until: datetime | None = _when(nullable=True)
    expires_at: datetime = Field(
        sa_column=sa.Column(sa.DateTime(timezone=True), nullable=False, index=True)
    )


class JudgeCorrectionRow(SQLModel, table=True):
    """A criterion a person said the judge got wrong, when deciding on an artifact (an
    override or a reject): the decision is the audit event `(artifact_id, event_seq)`,
    the criterion one of evaluation `evaluation_id`'s. With the audit trail and the stored
    evaluations these make every human decision a label (see store/labels.py)."""

    __tablename__ = "judge_corrections"

    artifact_id: str = Field(
        primary_key=True, max_length=200, foreign_key="artifacts.id", ondelete="CASCADE"
    )
    event_seq: int = Field(primary_key=True)
    evaluation_id: str = Field(primary_key=True, max_length=64)
    criterion_id: str = Field(primary_key=True, max_length=200)
    actor: str = Field(max_length=200)
    created_at: datetime = _when(nullable=False)


class JudgeSpendRow(SQLModel, table=True):
    """Judge spend of one artifact type on one UTC day, for its daily budget: reserved
    and settled by single atomic UPDATEs, shared by every worker and server process."""

    __tablename__ = "judge_spend_daily"

    artifact_type: str = Field(primary_key=True, max_length=200)
    day: str = Field(primary_key=True, max_length=10)
    spent: float = Field(default=0.0, nullable=False)


class ReviewClaimRow(SQLModel, table=True):
    """Who is reviewing an artifact on the dashboard, until when (a short lease the open
    page renews): others are not shown it as their next item, and see who holds it. A
    lapsed lease is no claim; the next claim takes the row over (migration 0014)."""

    __tablename__ = "review_claims"

    artifact_id: str = Field(
        primary_key=True, max_length=200, foreign_key="artifacts.id", ondelete="CASCADE"
    )
    holder: str = Field(max_length=200)
    claimed_at: datetime = _when(nullable=False)
    expires_at: datetime = _when(nullable=False)


class ArtifactCommentRow(SQLModel, table=True):
    """A comment on an artifact, kept with its history: who wrote it, on which revision,
    when (append-only, migration 0014)."""

    __tablename__ = "artifact_comments"
    __table_args__ = (sa.Index("ix_artifact_comments_artifact", "artifact_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    artifact_id: str = Field(max_length=200, foreign_key="artifacts.id", ondelete="CASCADE")
    revision: int
    author: str = Field(max_length=200)
    body: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    created_at: datetime = _when(nullable=False)
