"""Artifacts, their revisions, types and audit trail in the store.

The store persists what it is told and decides nothing: every state it writes (a new
artifact's, a transition's destination, a retired revision's) comes from the caller, which
asks the lifecycle (`rubricflow.review.lifecycle`).

`ArtifactRepository` reads, and writes what is one transaction by itself (a type, a new
artifact, a lease renewal). Everything else happens in an `ArtifactTransaction` (a unit of
work: `async with repository.transaction() as tx:`), which is committed whole when the
block ends and rolled back on any error. Every change of state goes through
`ArtifactTransaction.transition`: one conditional UPDATE on the artifact's `version` (the
optimistic lock) and one appended event row. A writer that lost a race gets None, or
`ArtifactConflictError` from `write_transition`. Database errors become rubricflow errors
here; no caller sees SQLAlchemy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from rubricflow.errors import ArtifactConflictError, ArtifactIdTakenError, NotFoundError
from rubricflow.model import Rubric
from rubricflow.results import Evaluation
from rubricflow.store._sql import INCOMPLETE, as_utc, to_utc, utcnow
from rubricflow.store.artifact_models import (
    KEEP,
    Artifact,
    ArtifactEvent,
    ArtifactType,
    Change,
    Keep,
    NewArtifact,
    RubricBinding,
    Submitting,
    content_hash,
)
from rubricflow.store.changes import announce
from rubricflow.store.database import Database
from rubricflow.store.evaluations import NO_SCORE, EvaluationStore
from rubricflow.store.rubrics import RubricRegistry
from rubricflow.store.tables import (
    ArtifactEventRow,
    ArtifactRevisionRow,
    ArtifactRow,
    ArtifactTypeRow,
    EvaluationRow,
    RubricGenerationRow,
)
from rubricflow.store.webhooks import write_outbox

__all__ = [
    "KEEP",
    "Artifact",
    "ArtifactEvent",
    "ArtifactRepository",
    "ArtifactTransaction",
    "ArtifactType",
    "Change",
    "Keep",
    "NewArtifact",
    "RubricBinding",
    "Submitting",
    "content_hash",
]

_types = ArtifactTypeRow.__table__  # type: ignore[attr-defined]
_artifacts = ArtifactRow.__table__  # type: ignore[attr-defined]
_revisions = ArtifactRevisionRow.__table__  # type: ignore[attr-defined]
_events = ArtifactEventRow.__table__  # type: ignore[attr-defined]
_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]
_generation = RubricGenerationRow.__table__  # type: ignore[attr-defined]

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
        # the rubrics' write count: the bound rubrics' latest versions come from memory
        # while it stands (`RubricRegistry.get`), not from another query
        sa.select(_generation.c.generation)
        .where(_generation.c.id == 1)
        .scalar_subquery()
        .label("rubric_generation"),
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


_RETIRE_REVISION = _revisions.update().where(
    _revisions.c.artifact_id == sa.bindparam("match_id"),
    _revisions.c.revision == sa.bindparam("match_revision"),
)
_NOT_FOUND = "no artifact {!r}; `rubricflow artifacts list` shows them"
#: one answer for every taken id, whoever's artifact holds it: it names no artifact
_TAKEN = (
    "the artifact id {0!r} is taken; choose another id (ids are unique across the whole "
    "store, so one may be taken by an artifact you cannot see). To change an artifact of "
    "your own, revise it: `rubricflow artifacts revise ID FILE --reason ...`"
)


class ArtifactTransaction:
    """One transaction's reads and writes on artifacts (a unit of work), with the rubric
    and evaluation reads and writes a review makes in it. Get one from
    `ArtifactRepository.transaction()` (or `reading()`, for reads only)."""

    def __init__(
        self,
        opening: AbstractAsyncContextManager[AsyncConnection],
        rubrics: RubricRegistry,
        evaluations: EvaluationStore,
    ) -> None:
        self._opening = opening
        self._rubrics = rubrics
        self._evaluations = evaluations
        #: the rubrics' write count as this transaction read it (None: not read)
        self._rubric_generation: int | None = None

    # a class, not an @asynccontextmanager: this runs three times per reviewed artifact
    async def __aenter__(self) -> ArtifactTransaction:
        self._connection = await self._opening.__aenter__()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> bool | None:
        return await self._opening.__aexit__(kind, error, trace)

    # --- reads ---------------------------------------------------------------------------
    async def get(self, artifact_id: str) -> Artifact:
        row = (await self._connection.execute(_GET, {"artifact_id": artifact_id})).first()
        if row is None:
            raise NotFoundError(_NOT_FOUND.format(artifact_id))
        return _artifact(row)

    async def get_for_submit(self, artifact_id: str) -> Submitting:
        """The artifact with what submitting it needs to know, read at once."""
        row = (await self._connection.execute(_SUBMITTING, {"artifact_id": artifact_id})).first()
        if row is None:
            raise NotFoundError(_NOT_FOUND.format(artifact_id))
        self._rubric_generation = row.rubric_generation
        return Submitting(
            _artifact(row),
            ArtifactType.model_validate_json(row.type_document),
            int(row.last_seq),
            bool(row.reviewed),
        )

    async def get_type(self, name: str) -> ArtifactType:
        return await _get_type(self._connection, name)

    async def rubric(self, binding: RubricBinding) -> Rubric:
        """The rubric `binding` names: its pinned version, or the latest one now."""
        return await self._rubrics.get(
            binding.rubric_id,
            binding.version,
            connection=self._connection,
            generation=self._rubric_generation,
        )

    async def reviewed(self, artifact_id: str, revision: int) -> list[Evaluation]:
        """The complete evaluations stored for one revision of the artifact (at most one
        per rubric version), for a review to reuse instead of evaluating again."""
        rows = await self._connection.execute(
            _REVIEWED, {"artifact_id": artifact_id, "revision": revision}
        )
        return [Evaluation.model_validate_json(row.document) for row in rows]

    async def claimable(
        self, *, now: datetime, queued: str, reviewing: str, limit: int = 1
    ) -> list[str]:
        """Ids of artifacts a worker may claim, longest waiting first: those in `queued`
        whose time has come, and those in `reviewing` (not awaiting approval) whose lease
        expired. PostgreSQL skips rows other workers hold locked."""
        c = _artifacts.c
        waiting = (c.status == queued) & (c.queued_at.is_(None) | (c.queued_at <= now))
        stranded = (c.status == reviewing) & (~c.awaiting_approval) & (c.lease_expires_at < now)
        query = (
            sa.select(c.id)
            .where(waiting | stranded)
            .order_by(c.queued_at.asc().nulls_first(), c.id)
            .limit(limit)
        )
        if self._connection.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        return [row.id for row in await self._connection.execute(query)]

    # --- writes --------------------------------------------------------------------------
    async def save_evaluation(
        self, evaluation: Evaluation, *, artifact_id: str, revision: int
    ) -> Evaluation:
        """`EvaluationStore.save_for_review` in this transaction."""
        return await self._evaluations.save_for_review(
            evaluation, artifact_id=artifact_id, revision=revision, connection=self._connection
        )

    async def insert_new(self, new: NewArtifact) -> tuple[Artifact, ArtifactEvent]:
        """`insert`, for a caller that read `new`'s type in this transaction: a constraint
        that fails can then only be the id, already taken (`ArtifactIdTakenError`)."""
        try:
            return await self.insert(new)
        except IntegrityError:
            raise ArtifactIdTakenError(_TAKEN.format(new.artifact_id)) from None

    async def insert(self, new: NewArtifact) -> tuple[Artifact, ArtifactEvent]:
        """Insert a new artifact in `new.state`, revision 1 (in `new.revision_state`), and
        its `new.trigger` event; returns both as written, so the caller need not read them
        back."""
        artifact_id, type_name, content, actor, title, metadata, trigger, state, _ = new
        now = utcnow()
        metadata_json = json.dumps(metadata, ensure_ascii=False)
        await self._connection.execute(
            _INSERT_ARTIFACT,
            {
                "id": artifact_id,
                "type": type_name,
                "status": state,
                "revision": 1,
                "version": 1,
                "title": title,
                "metadata_json": metadata_json,
                "created_by": actor,
                "created_at": now,
                "updated_at": now,
                "awaiting_approval": False,
                # given, not left to the column's default: a Python-side default would
                # send every insert down SQLAlchemy's slow path (docs/store.md)
                "failures": 0,
                "review_score": NO_SCORE,
                "review_margin": NO_SCORE,
            },
        )
        stored, digest = await self._insert_revision(
            artifact_id, 1, content, actor=actor, reason="created", status=new.revision_state
        )
        event = await self._append_event(
            artifact_id=artifact_id,
            revision=1,
            trigger=trigger,
            source="",
            dest=state,
            actor=actor,
            reason=None,
            evaluation_ids=(),
            seq=1,  # the artifact row was just inserted: it has no events yet
        )
        artifact = Artifact(
            id=artifact_id,
            type=type_name,
            status=state,
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

    async def add_revision(
        self,
        artifact: Artifact,
        content: Any,
        *,
        actor: str,
        reason: str | None,
        status: str,
        retired_status: str,
    ) -> Artifact:
        """Record the artifact's current revision as `retired_status` and store `content`
        as the next revision, in `status`. Returns `artifact` with the new content; the
        transition that moves it to the new revision (`Change.revision`) comes next."""
        await self._connection.execute(
            _RETIRE_REVISION,
            {
                "match_id": artifact.id,
                "match_revision": artifact.revision,
                "status": retired_status,
            },
        )
        stored, digest = await self._insert_revision(
            artifact.id, artifact.revision + 1, content, actor=actor, reason=reason, status=status
        )
        return artifact.model_copy(update={"content": json.loads(stored), "content_hash": digest})

    async def _insert_revision(
        self,
        artifact_id: str,
        revision: int,
        content: Any,
        *,
        actor: str,
        reason: str | None,
        status: str,
    ) -> tuple[str, str]:
        """Store a revision's content; returns (the stored JSON text, the content hash)."""
        stored = json.dumps(content, ensure_ascii=False)
        digest = content_hash(content)
        await self._connection.execute(
            _INSERT_REVISION,
            {
                "artifact_id": artifact_id,
                "revision": revision,
                "content": stored,
                "content_hash": digest,
                "reason": reason,
                "actor": actor,
                "status": status,
                "created_at": utcnow(),
            },
        )
        return stored, digest

    async def _append_event(
        self,
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
            last = await self._connection.execute(_LAST_SEQ, {"artifact_id": artifact_id})
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
        await self._connection.execute(_INSERT_EVENT, row)
        await announce(self._connection, event)  # PostgreSQL: NOTIFY, sent at commit
        return event

    async def write_transition(
        self, artifact: Artifact, change: Change, *, seq: int | None = None
    ) -> tuple[ArtifactEvent, Artifact]:
        """`transition`, raising `ArtifactConflictError` (naming the artifact's state now)
        when another writer changed it since it was read."""
        written = await self.transition(artifact, change, seq=seq)
        if written is None:
            raise await self._conflict(artifact, change.trigger)
        return written

    async def transition(
        self, artifact: Artifact, change: Change, *, seq: int | None = None
    ) -> tuple[ArtifactEvent, Artifact] | None:
        """Move `artifact` (as last read, at its `version`) as `change` says and log the
        event; the event and the artifact as written (content as in `artifact`), or None,
        having written nothing, when another writer changed the artifact since it was read.

        `seq` is the new event's number when the caller knows it: one past the event that
        left the artifact at the version it holds (every transition bumps the version and
        appends one event in the same transaction, so a matching version means no event
        came in between)."""
        values: dict[str, Any] = {
            "status": change.dest,
            "version": artifact.version + 1,
            "updated_at": utcnow(),
            "last_reason": change.reason if change.shown_reason is None else change.shown_reason,
            "lease_owner": change.lease_owner,
            "lease_expires_at": change.lease_expires_at,
            "awaiting_approval": change.awaiting_approval,
        }
        if change.queued_at is not KEEP:
            values["queued_at"] = change.queued_at
        if change.revision is not None:
            values["revision"] = change.revision
        scores = {}
        if change.revision is not None and change.revision != artifact.revision:
            # a new revision has no score until it is reviewed (the queue's orders)
            scores = {"review_score": NO_SCORE, "review_margin": NO_SCORE}
        if change.failures is not None:
            values["failures"] = change.failures
        done = await self._connection.execute(
            _TRANSITION,
            {**values, **scores, "match_id": artifact.id, "match_version": artifact.version},
        )
        if done.rowcount != 1:
            return None
        event = await self._append_event(
            artifact_id=artifact.id,
            revision=values.get("revision", artifact.revision),
            trigger=change.trigger,
            source=artifact.status,
            dest=change.dest,
            actor=change.actor,
            reason=change.reason,
            evaluation_ids=change.evaluation_ids,
            seq=seq,
        )
        # the webhook deliveries it announces, committed with it or not at all
        await write_outbox(self._connection, artifact, change, event)
        return event, artifact.model_copy(update=values)

    async def _conflict(self, artifact: Artifact, trigger: str) -> ArtifactConflictError:
        """The error for a `trigger` that lost the race for `artifact`, naming its state now."""
        current = (
            await self._connection.execute(
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


class ArtifactRepository:
    """Artifact reads, the writes that are one transaction by themselves, and the unit of
    work (`transaction`) for the rest; the caller decides which transitions happen."""

    def __init__(
        self,
        database: Database,
        *,
        rubrics: RubricRegistry | None = None,
        evaluations: EvaluationStore | None = None,
    ) -> None:
        self.database = database
        self.rubrics = rubrics or RubricRegistry(database)
        self.evaluations = evaluations or EvaluationStore(database)

    def transaction(self) -> ArtifactTransaction:
        """A unit of work (`async with repository.transaction() as tx:`): committed when
        the block ends, rolled back on any error."""
        return ArtifactTransaction(self.database.transaction(), self.rubrics, self.evaluations)

    def reading(self) -> ArtifactTransaction:
        """A unit of work for reads only: it takes no SQLite write lock; anything written
        through it is rolled back."""
        return ArtifactTransaction(self.database.read(), self.rubrics, self.evaluations)

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

    async def get_type(self, name: str) -> ArtifactType:
        async with self.database.read() as connection:
            return await _get_type(connection, name)

    async def list_types(self) -> list[ArtifactType]:
        async with self.database.read() as connection:
            rows = (
                await connection.execute(sa.select(_types.c.document).order_by(_types.c.name))
            ).all()
        return [ArtifactType.model_validate_json(row.document) for row in rows]

    # --- artifacts -----------------------------------------------------------------------
    async def create(self, new: NewArtifact) -> tuple[Artifact, ArtifactEvent]:
        """`ArtifactTransaction.insert` in a transaction of its own. An unknown type is
        `NotFoundError`, an id already taken `ArtifactIdTakenError`."""
        try:
            async with self.transaction() as tx:
                return await tx.insert(new)
        except IntegrityError:
            # the type (a foreign key) is unknown, or the id is taken
            await self.get_type(new.type_name)
            raise ArtifactIdTakenError(_TAKEN.format(new.artifact_id)) from None

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

    async def get(self, artifact_id: str) -> Artifact:
        async with self.reading() as tx:
            return await tx.get(artifact_id)

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

    async def page(
        self,
        *,
        type_names: Sequence[str] | None = None,
        status: str | None = None,
        created_by: str | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = 50,
    ) -> list[Artifact]:
        """A keyset page of artifacts, newest first (by creation time, then id): those
        created before `after` (the last one of the previous page's `(created_at, id)`).
        Stable under inserts: a new artifact comes before every page already read, so
        paging on neither repeats nor skips one. `type_names`: only these types."""
        c = _artifacts.c
        query = _CURRENT
        if type_names is not None:
            query = query.where(c.type.in_(list(type_names)))
        if status is not None:
            query = query.where(c.status == status)
        if created_by is not None:
            query = query.where(c.created_by == created_by)
        if after is not None:
            when, last_id = to_utc(after[0]), after[1]
            query = query.where((c.created_at < when) | ((c.created_at == when) & (c.id < last_id)))
        query = query.order_by(c.created_at.desc(), c.id.desc()).limit(limit)
        async with self.database.read() as connection:
            return [_artifact(row) for row in await connection.execute(query)]

    async def with_trigger(
        self, trigger: str, *, type_names: Sequence[str] | None = None, limit: int = 200
    ) -> list[str]:
        """The ids of artifacts (of `type_names`) whose history holds a `trigger` event,
        the one with the most recent such event first, `limit` at most."""
        e, a = _events.c, _artifacts.c
        query = sa.select(e.artifact_id).where(e.trigger == trigger)
        if type_names is not None:
            query = query.join(_artifacts, a.id == e.artifact_id).where(
                a.type.in_(list(type_names))
            )
        query = query.group_by(e.artifact_id).order_by(
            sa.func.max(e.created_at).desc(), e.artifact_id
        )
        async with self.database.read() as connection:
            rows = await connection.execute(query.limit(limit))
            return [row.artifact_id for row in rows]

    async def count(self, *, status: str | None = None) -> int:
        query = sa.select(sa.func.count()).select_from(_artifacts)
        if status is not None:
            query = query.where(_artifacts.c.status == status)
        async with self.database.read() as connection:
            return int((await connection.execute(query)).scalar_one())

    async def with_histories(
        self, artifact_ids: Sequence[str]
    ) -> list[tuple[Artifact, list[ArtifactEvent]]]:
        """Each artifact of `artifact_ids` that exists, with its history, in the order
        given: two queries for them all (`IN`), not two per artifact."""
        if not artifact_ids:
            return []
        ids = list(dict.fromkeys(artifact_ids))
        events: dict[str, list[ArtifactEvent]] = {artifact_id: [] for artifact_id in ids}
        async with self.database.read() as connection:
            found = {
                row.id: _artifact(row)
                for row in await connection.execute(_CURRENT.where(_artifacts.c.id.in_(ids)))
            }
            rows = await connection.execute(
                sa.select(_events)
                .where(_events.c.artifact_id.in_(ids))
                .order_by(_events.c.artifact_id, _events.c.seq)
            )
            for row in rows:
                events[row.artifact_id].append(_event(row))
        return [(found[i], events[i]) for i in ids if i in found]

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
        return [_event(row) for row in rows]


def _event(row: Any) -> ArtifactEvent:
    return ArtifactEvent.model_validate(
        {
            **{key: value for key, value in row._mapping.items() if key != "id"},
            "evaluation_ids": tuple(json.loads(row.evaluation_ids)),
            "created_at": as_utc(row.created_at),
        }
    )


async def _get_type(connection: AsyncConnection, name: str) -> ArtifactType:
    row = (await connection.execute(_TYPE_DOCUMENT, {"name": name})).first()
    if row is None:
        raise NotFoundError(
            f"no artifact type {name!r}; define it with "
            f"`rubricflow types set {name} --rubric RUBRIC_ID`"
        )
    return ArtifactType.model_validate_json(row.document)


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
        failures=int(row.failures or 0),
    )
