"""Artifacts, their revisions, types and audit trail in the store.

Every change of state goes through `write_transition`: one conditional UPDATE on the
artifact's `version` (the optimistic lock) and one appended event row, in the caller's
transaction. A writer that lost a race gets `ArtifactConflictError`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.ext.asyncio import AsyncConnection

from rubricflow.errors import ArtifactConflictError, NotFoundError
from rubricflow.results import Evaluation, canonical_json
from rubricflow.store._sql import INCOMPLETE, as_utc, utcnow
from rubricflow.store.database import Database
from rubricflow.store.tables import (
    ArtifactEventRow,
    ArtifactRevisionRow,
    ArtifactRow,
    ArtifactTypeRow,
    EvaluationRow,
)

__all__ = [
    "Artifact",
    "ArtifactEvent",
    "ArtifactRepository",
    "ArtifactType",
    "RubricBinding",
]

_types = ArtifactTypeRow.__table__  # type: ignore[attr-defined]
_artifacts = ArtifactRow.__table__  # type: ignore[attr-defined]
_revisions = ArtifactRevisionRow.__table__  # type: ignore[attr-defined]
_events = ArtifactEventRow.__table__  # type: ignore[attr-defined]
_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]

# The statements a review runs, built once with bound parameters: building a statement
# with its values (and its cache key) on every call costs more than SQLite running it.
_TYPE_DOCUMENT = sa.select(_types.c.document).where(_types.c.name == sa.bindparam("name"))
_CURRENT = sa.select(_artifacts, _revisions.c.content, _revisions.c.content_hash).join(
    _revisions,
    (_revisions.c.artifact_id == _artifacts.c.id)
    & (_revisions.c.revision == _artifacts.c.revision),
)
_GET = _CURRENT.where(_artifacts.c.id == sa.bindparam("artifact_id"))
# an artifact with its type's document, the number of its latest event and whether its
# revision has complete evaluations stored, in one read
_SUBMITTING = (
    _CURRENT.add_columns(
        _types.c.document.label("type_document"),
        sa.select(sa.func.coalesce(sa.func.max(_events.c.seq), 0))
        .where(_events.c.artifact_id == _artifacts.c.id)
        .scalar_subquery()
        .label("last_seq"),
        sa.exists()
        .where(
            _evaluations.c.artifact_id == _artifacts.c.id,
            _evaluations.c.revision == _artifacts.c.revision,
            _evaluations.c.verdict != INCOMPLETE,
        )
        .label("reviewed"),
    )
    .join(_types, _types.c.name == _artifacts.c.type)
    .where(_artifacts.c.id == sa.bindparam("artifact_id"))
)
_INSERT_ARTIFACT = _artifacts.insert()
_INSERT_REVISION = _revisions.insert()
_INSERT_EVENT = _events.insert()
# the SET clause comes from the parameters' column names
_TRANSITION = _artifacts.update().where(
    _artifacts.c.id == sa.bindparam("match_id"),
    _artifacts.c.version == sa.bindparam("match_version"),
)
_LAST_SEQ = sa.select(sa.func.coalesce(sa.func.max(_events.c.seq), 0)).where(
    _events.c.artifact_id == sa.bindparam("artifact_id")
)
_REVIEWED = sa.select(_evaluations.c.document).where(
    _evaluations.c.artifact_id == sa.bindparam("artifact_id"),
    _evaluations.c.revision == sa.bindparam("revision"),
    _evaluations.c.verdict != INCOMPLETE,
)


class RubricBinding(BaseModel):
    """A rubric an artifact type is reviewed against: the latest version, or a pinned one.
    A `blocking` rubric's failure rejects the artifact instead of asking for revision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rubric_id: str
    version: str | None = None
    blocking: bool = False

    @classmethod
    def parse(cls, spec: str, *, blocking: bool = False) -> RubricBinding:
        """`ID` (latest) or `ID@VERSION` (pinned)."""
        rubric_id, _, version = spec.partition("@")
        return cls(rubric_id=rubric_id, version=version or None, blocking=blocking)

    def __str__(self) -> str:
        return f"{self.rubric_id}@{self.version}" if self.version else self.rubric_id


class ArtifactType(BaseModel):
    """What kind of artifact this is and how it is reviewed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    rubrics: tuple[RubricBinding, ...] = ()
    auto_review: bool = True
    requires_approval: bool = False
    approval_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    content_schema: dict[str, Any] | None = None
    description: str = ""


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


class Submitting(NamedTuple):
    """An artifact about to be submitted: its type, the number of its latest event, and
    whether complete evaluations of its current revision are stored."""

    artifact: Artifact
    artifact_type: ArtifactType
    last_seq: int
    reviewed: bool


def content_hash(content: Any) -> str:
    text = content if isinstance(content, str) else canonical_json(content)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ArtifactRepository:
    """Low-level reads and writes; the review service decides which transitions happen."""

    def __init__(self, database: Database) -> None:
        self.database = database

    # --- types -------------------------------------------------------------------------
    async def put_type(self, artifact_type: ArtifactType) -> None:
        document = artifact_type.model_dump_json()
        async with self.database.transaction() as connection:
            updated = await connection.execute(
                _types.update()
                .where(_types.c.name == artifact_type.name)
                .values(document=document, updated_at=utcnow())
            )
            if updated.rowcount == 0:
                await connection.execute(
                    _types.insert().values(
                        name=artifact_type.name, document=document, updated_at=utcnow()
                    )
                )

    async def get_type(self, name: str, connection: AsyncConnection | None = None) -> ArtifactType:
        if connection is None:
            async with self.database.read() as own:
                return await self.get_type(name, own)
        row = (await connection.execute(_TYPE_DOCUMENT, {"name": name})).first()
        if row is None:
            raise NotFoundError(
                f"no artifact type {name!r}; define it with "
                f"`rubricflow types set {name} --rubric RUBRIC_ID`"
            )
        return ArtifactType.model_validate_json(row.document)

    async def list_types(self) -> list[ArtifactType]:
        async with self.database.read() as connection:
            rows = (
                await connection.execute(sa.select(_types.c.document).order_by(_types.c.name))
            ).all()
        return [ArtifactType.model_validate_json(row.document) for row in rows]

    # --- artifacts -----------------------------------------------------------------------
    async def insert(
        self,
        connection: AsyncConnection,
        *,
        artifact_id: str,
        type_name: str,
        content: Any,
        actor: str,
        title: str | None,
        metadata: dict[str, Any],
    ) -> tuple[Artifact, ArtifactEvent]:
        """Insert a new artifact (draft, revision 1) and its `create` event; returns both as
        written, so the caller need not read them back."""
        now = utcnow()
        metadata_json = json.dumps(metadata, ensure_ascii=False)
        await connection.execute(
            _INSERT_ARTIFACT,
            {
                "id": artifact_id,
                "type": type_name,
                "status": "draft",
                "revision": 1,
                "version": 1,
                "title": title,
                "metadata_json": metadata_json,
                "created_by": actor,
                "created_at": now,
                "updated_at": now,
                "awaiting_approval": False,
            },
        )
        stored, digest = await self.insert_revision(
            connection, artifact_id, 1, content, actor=actor, reason="created"
        )
        event = await self.append_event(
            connection,
            artifact_id=artifact_id,
            revision=1,
            trigger="create",
            source="",
            dest="draft",
            actor=actor,
            reason=None,
            evaluation_ids=(),
            seq=1,  # the artifact row was just inserted: it has no events yet
        )
        artifact = Artifact(
            id=artifact_id,
            type=type_name,
            status="draft",
            revision=1,
            version=1,
            content=json.loads(stored),
            content_hash=digest,
            title=title,
            metadata=json.loads(metadata_json),
            created_by=actor,
            created_at=now,
            updated_at=now,
        )
        return artifact, event

    async def insert_revision(
        self,
        connection: AsyncConnection,
        artifact_id: str,
        revision: int,
        content: Any,
        *,
        actor: str,
        reason: str | None,
    ) -> tuple[str, str]:
        """Store a revision's content; returns (the stored JSON text, the content hash)."""
        stored = json.dumps(content, ensure_ascii=False)
        digest = content_hash(content)
        await connection.execute(
            _INSERT_REVISION,
            {
                "artifact_id": artifact_id,
                "revision": revision,
                "content": stored,
                "content_hash": digest,
                "reason": reason,
                "actor": actor,
                "status": "current",
                "created_at": utcnow(),
            },
        )
        return stored, digest

    async def supersede_revision(
        self, connection: AsyncConnection, artifact_id: str, revision: int
    ) -> None:
        await connection.execute(
            _revisions.update()
            .where(_revisions.c.artifact_id == artifact_id, _revisions.c.revision == revision)
            .values(status="superseded")
        )

    async def append_event(
        self,
        connection: AsyncConnection,
        *,
        artifact_id: str,
        revision: int,
        trigger: str,
        source: str,
        dest: str,
        actor: str,
        reason: str | None,
        evaluation_ids: Sequence[str],
        seq: int | None = None,
    ) -> ArtifactEvent:
        """Append the artifact's next event: number `seq` when the caller knows it, else
        one past the highest stored (the unique (artifact, seq) key refuses a wrong guess)."""
        if seq is None:
            last = await connection.execute(_LAST_SEQ, {"artifact_id": artifact_id})
            seq = last.scalar_one() + 1
        event = ArtifactEvent(
            artifact_id=artifact_id,
            seq=seq,
            revision=revision,
            trigger=trigger,
            source=source,
            dest=dest,
            actor=actor,
            reason=reason,
            evaluation_ids=tuple(evaluation_ids),
            created_at=utcnow(),
        )
        row = event.model_dump()
        row["evaluation_ids"] = json.dumps(list(event.evaluation_ids))
        await connection.execute(_INSERT_EVENT, row)
        return event

    async def write_transition(
        self,
        connection: AsyncConnection,
        artifact: Artifact,
        *,
        trigger: str,
        dest: str,
        actor: str,
        reason: str | None = None,
        evaluation_ids: Sequence[str] = (),
        updates: dict[str, Any] | None = None,
        seq: int | None = None,
    ) -> tuple[ArtifactEvent, Artifact]:
        """Move `artifact` (as last read, at its `version`) to `dest` and log the event;
        the event and the artifact as written (see `transition`).

        Raises `ArtifactConflictError` when another writer changed it since it was read.
        """
        written = await self.transition(
            connection,
            artifact,
            trigger=trigger,
            dest=dest,
            actor=actor,
            reason=reason,
            evaluation_ids=evaluation_ids,
            updates=updates,
            seq=seq,
        )
        if written is None:
            raise await self.conflict(connection, artifact, trigger)
        return written

    async def transition(
        self,
        connection: AsyncConnection,
        artifact: Artifact,
        *,
        trigger: str,
        dest: str,
        actor: str,
        reason: str | None = None,
        evaluation_ids: Sequence[str] = (),
        updates: dict[str, Any] | None = None,
        seq: int | None = None,
    ) -> tuple[ArtifactEvent, Artifact] | None:
        """`write_transition` that returns the event and the artifact as written (content
        as in `artifact`: a new revision's content must be read back), or None, having
        written nothing, when another writer changed the artifact since it was read.

        `seq` is the new event's number when the caller knows it: one past the event that
        left the artifact at the version it holds (every transition bumps the version and
        appends one event in the same transaction, so a matching version means no event
        came in between)."""
        values: dict[str, Any] = {
            "status": dest,
            "version": artifact.version + 1,
            "updated_at": utcnow(),
            "last_reason": reason,
        }
        values.update(updates or {})
        done = await connection.execute(
            _TRANSITION, {**values, "match_id": artifact.id, "match_version": artifact.version}
        )
        if done.rowcount != 1:
            return None
        event = await self.append_event(
            connection,
            artifact_id=artifact.id,
            revision=values.get("revision", artifact.revision),
            trigger=trigger,
            source=artifact.status,
            dest=dest,
            actor=actor,
            reason=reason,
            evaluation_ids=evaluation_ids,
            seq=seq,
        )
        return event, artifact.model_copy(update=values)

    async def conflict(
        self, connection: AsyncConnection, artifact: Artifact, trigger: str
    ) -> ArtifactConflictError:
        """The error for a `trigger` that lost the race for `artifact`, naming its state now."""
        current = (
            await connection.execute(
                sa.select(_artifacts.c.status, _artifacts.c.version).where(
                    _artifacts.c.id == artifact.id
                )
            )
        ).first()
        now = f"now {current.status}, version {current.version}" if current else "now gone"
        return ArtifactConflictError(
            f"artifact {artifact.id!r} was changed by another writer while {trigger!r} "
            f"was being applied (read at version {artifact.version}, {now}); "
            "reload it and retry"
        )

    async def renew_lease(self, artifact: Artifact, expires_at: datetime) -> bool:
        """Extend the lease of a review still held as claimed (same version and owner);
        False when the artifact moved on or another worker owns it."""
        async with self.database.transaction() as connection:
            done = await connection.execute(
                _artifacts.update()
                .where(
                    _artifacts.c.id == artifact.id,
                    _artifacts.c.version == artifact.version,
                    _artifacts.c.lease_owner == artifact.lease_owner,
                )
                .values(lease_expires_at=expires_at)
            )
        return bool(done.rowcount == 1)

    async def get(self, artifact_id: str, connection: AsyncConnection | None = None) -> Artifact:
        if connection is None:
            async with self.database.read() as own:
                return await self.get(artifact_id, own)
        row = (await connection.execute(_GET, {"artifact_id": artifact_id})).first()
        if row is None:
            raise NotFoundError(
                f"no artifact {artifact_id!r}; `rubricflow artifacts list` shows them"
            )
        return _artifact(row)

    async def get_for_submit(self, connection: AsyncConnection, artifact_id: str) -> Submitting:
        """The artifact with what submitting it needs to know, read at once."""
        row = (await connection.execute(_SUBMITTING, {"artifact_id": artifact_id})).first()
        if row is None:
            raise NotFoundError(
                f"no artifact {artifact_id!r}; `rubricflow artifacts list` shows them"
            )
        return Submitting(
            _artifact(row),
            ArtifactType.model_validate_json(row.type_document),
            int(row.last_seq),
            bool(row.reviewed),
        )

    async def list_artifacts(
        self,
        *,
        type_name: str | None = None,
        status: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Artifact]:
        query = _CURRENT
        if type_name is not None:
            query = query.where(_artifacts.c.type == type_name)
        if status is not None:
            query = query.where(_artifacts.c.status == status)
        query = (
            query.order_by(_artifacts.c.updated_at.desc(), _artifacts.c.id)
            .limit(limit)
            .offset(offset)
        )
        async with self.database.read() as connection:
            return [_artifact(row) for row in await connection.execute(query)]

    async def count(self, *, status: str | None = None) -> int:
        query = sa.select(sa.func.count()).select_from(_artifacts)
        if status is not None:
            query = query.where(_artifacts.c.status == status)
        async with self.database.read() as connection:
            return int((await connection.execute(query)).scalar_one())

    async def history(self, artifact_id: str) -> list[ArtifactEvent]:
        async with self.database.read() as connection:
            rows = (
                await connection.execute(
                    sa.select(_events)
                    .where(_events.c.artifact_id == artifact_id)
                    .order_by(_events.c.seq)
                )
            ).all()
        if not rows:
            raise NotFoundError(f"no artifact {artifact_id!r}")
        return [
            ArtifactEvent.model_validate(
                {
                    **{key: value for key, value in row._mapping.items() if key != "id"},
                    "evaluation_ids": tuple(json.loads(row.evaluation_ids)),
                    "created_at": as_utc(row.created_at),
                }
            )
            for row in rows
        ]

    async def reviewed(
        self, connection: AsyncConnection, artifact_id: str, revision: int
    ) -> list[Evaluation]:
        """The complete evaluations stored for one revision of the artifact (at most one
        per rubric version), for a review to reuse instead of evaluating again."""
        rows = await connection.execute(
            _REVIEWED, {"artifact_id": artifact_id, "revision": revision}
        )
        return [Evaluation.model_validate_json(row.document) for row in rows]

    async def claimable(
        self, connection: AsyncConnection, *, now: datetime, limit: int = 1
    ) -> list[str]:
        """Ids of artifacts a worker may claim: queued ones whose time has come, and
        reviews whose lease expired. PostgreSQL skips rows other workers hold locked."""
        c = _artifacts.c
        waiting = (c.status == "pending_review") & (c.queued_at.is_(None) | (c.queued_at <= now))
        stranded = (c.status == "in_review") & (~c.awaiting_approval) & (c.lease_expires_at < now)
        query = (
            sa.select(c.id)
            .where(waiting | stranded)
            .order_by(c.queued_at.asc().nulls_first(), c.id)
            .limit(limit)
        )
        if connection.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        return [row.id for row in await connection.execute(query)]


def _artifact(row: Any) -> Artifact:
    return Artifact(
        id=row.id,
        type=row.type,
        status=row.status,
        revision=row.revision,
        version=row.version,
        content=json.loads(row.content),
        content_hash=row.content_hash,
        title=row.title,
        metadata=json.loads(row.metadata_json or "{}"),
        created_by=row.created_by,
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
        queued_at=as_utc(row.queued_at) if row.queued_at else None,
        awaiting_approval=bool(row.awaiting_approval),
        lease_owner=row.lease_owner,
        lease_expires_at=as_utc(row.lease_expires_at) if row.lease_expires_at else None,
        last_reason=row.last_reason,
    )
