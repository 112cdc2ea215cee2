"""The review dashboard's reads: the queue of artifacts waiting for people, a page at a
time in SQL (keyset pagination on `(updated_at, id)`, both in one direction, so page N
costs what page 1 costs however long the queue is), the counts per queue bucket, and
an artifact's revisions.

Which states make up the queue is the caller's decision (`QueueBucket`): the store reads
what it is asked and decides nothing. Queue rows carry no content: a queue page never
reads the artifacts' (possibly large) content.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from rubricflow.runs import RunInfo
from rubricflow.store._sql import as_utc, to_utc, utcnow
from rubricflow.store.database import Database
from rubricflow.store.rubrics import RubricVersionInfo
from rubricflow.store.rubrics import _latest_key as version_order
from rubricflow.store.runs import RunOverview, RunStore
from rubricflow.store.runs import _info as run_info
from rubricflow.store.tables import (
    ArtifactRevisionRow,
    ArtifactRow,
    CriterionResultRow,
    EvaluationRow,
    ReviewClaimRow,
    RubricRow,
    RubricVersionRow,
    RunRow,
)

__all__ = [
    "QUEUE_SORTS",
    "CatalogueEntry",
    "CataloguePage",
    "DashboardQueries",
    "QueueBucket",
    "QueueCursor",
    "QueueFilter",
    "QueueItem",
    "QueuePage",
    "Revision",
    "RunCursor",
    "RunPage",
]

_artifacts = ArtifactRow.__table__  # type: ignore[attr-defined]
_revisions = ArtifactRevisionRow.__table__  # type: ignore[attr-defined]
_rubrics = RubricRow.__table__  # type: ignore[attr-defined]
_rubric_versions = RubricVersionRow.__table__  # type: ignore[attr-defined]
_runs = RunRow.__table__  # type: ignore[attr-defined]
_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]
_criteria = CriterionResultRow.__table__  # type: ignore[attr-defined]
_claims = ReviewClaimRow.__table__  # type: ignore[attr-defined]

#: the queue's orders: by last change (the default), by the latest evaluation's score
#: (lowest first), or by its margin to the pass threshold (nearest first)
QUEUE_SORTS = ("updated", "score", "margin")
#: an artifact's score and margin columns before any evaluation of its current revision
#: (they sort after the rest)
_NO_SCORE = 1e9


def _sort_key(sort: str) -> Any:
    """The column a queue order reads: each artifact's latest score, or its distance to the
    pass threshold, kept with the artifact as its evaluations are stored (1e9 before any
    evaluation of its current revision, so those come last), each indexed per state."""
    c = _artifacts.c
    return c.review_score if sort == "score" else c.review_margin


@dataclass(frozen=True)
class QueueBucket:
    """One part of the queue: artifacts in one of `statuses`, optionally only those
    awaiting (or not awaiting) a person's approval, or with (or without) failed reviews
    in a row. An artifact belongs to the first bucket it matches."""

    name: str
    statuses: tuple[str, ...]
    awaiting_approval: bool | None = None
    failed: bool | None = None

    def holds(self, status: str, awaiting_approval: bool, failed: bool) -> bool:
        """Whether an artifact in this state matches (`clause`, in Python)."""
        return (
            status in self.statuses
            and self.awaiting_approval in (None, awaiting_approval)
            and self.failed in (None, failed)
        )

    def clause(self) -> sa.ColumnElement[bool]:
        c = _artifacts.c
        parts: list[sa.ColumnElement[bool]] = [c.status.in_(self.statuses)]
        if self.awaiting_approval is not None:
            parts.append(
                c.awaiting_approval.is_(sa.true())
                if self.awaiting_approval
                else c.awaiting_approval.is_(sa.false())
            )
        if self.failed is not None:
            failures = sa.func.coalesce(c.failures, 0)
            parts.append(failures > 0 if self.failed else failures == 0)
        return sa.and_(*parts)


@dataclass(frozen=True)
class QueueFilter:
    """Which artifacts a queue shows: `buckets` (all of them unless `bucket` names one),
    of `types` (None: any type; empty: none), created by `created_by` (a submitter sees
    its own), unchanged since `changed_before` (how long they have waited), whose
    title, id or last reason contains `search` (case-insensitive and literal: `%` and
    `_` match themselves), whose latest evaluation scored within `score_min` and
    `score_max`, that failed criterion `failed_criterion` in a review of the current
    revision, and not claimed by anyone but `claimant` at `now` (a reviewer's queue skips
    what others are reviewing)."""

    buckets: tuple[QueueBucket, ...]
    bucket: str | None = None
    types: tuple[str, ...] | None = None
    created_by: str | None = None
    changed_before: datetime | None = None
    search: str | None = None
    score_min: float | None = None
    score_max: float | None = None
    failed_criterion: str | None = None
    claimant: str | None = None
    now: datetime | None = None

    def _bucket_clauses(self) -> list[tuple[str, sa.ColumnElement[bool]]]:
        """Each bucket's own clause: matching it and none before it."""
        clauses: list[tuple[str, sa.ColumnElement[bool]]] = []
        earlier: list[sa.ColumnElement[bool]] = []
        for bucket in self.buckets:
            own = bucket.clause()
            clauses.append((bucket.name, sa.and_(own, *[sa.not_(e) for e in earlier])))
            earlier.append(own)
        return clauses

    def _common(self) -> list[sa.ColumnElement[bool]]:
        c = _artifacts.c
        where: list[sa.ColumnElement[bool]] = []
        if self.types is not None:
            where.append(c.type.in_(self.types) if self.types else sa.false())
        if self.created_by is not None:
            where.append(c.created_by == self.created_by)
        if self.changed_before is not None:
            where.append(c.updated_at <= to_utc(self.changed_before))
        if self.search:
            where.append(_contains((c.title, c.id, c.last_reason), self.search))
        return where + self._judged()

    def _unclaimed(self) -> list[sa.ColumnElement[bool]]:
        """Not claimed by anyone but `claimant` (a page's rows only: the counts hold every
        waiting artifact, claimed or not, and stay an index-only scan)."""
        if self.claimant is None:
            return []
        c, k = _artifacts.c, _claims.c
        now = to_utc(self.now) if self.now is not None else utcnow()
        held = sa.select(sa.literal(1)).where(
            k.artifact_id == c.id, k.holder != self.claimant, k.expires_at > now
        )
        return [sa.not_(held.exists())]

    def _judged(self) -> list[sa.ColumnElement[bool]]:
        """The filters on the artifacts' evaluations."""
        c, e, r = _artifacts.c, _evaluations.c, _criteria.c
        where: list[sa.ColumnElement[bool]] = []
        if self.score_min is not None:
            where.append(c.review_score.between(self.score_min, 1.0))
        if self.score_max is not None:
            where.append(c.review_score <= self.score_max)
        if self.failed_criterion:
            failed = (
                sa.select(sa.literal(1))
                .select_from(_evaluations.join(_criteria, r.evaluation_id == e.id))
                .where(
                    e.artifact_id == c.id,
                    e.revision == c.revision,
                    r.criterion_id == self.failed_criterion,
                    r.passed.is_(sa.false()),
                )
            )
            where.append(failed.exists())
        return where


def _contains(columns: Sequence[Any], text: str) -> sa.ColumnElement[bool]:
    """Any of `columns` holds `text`, ignoring case, with LIKE's wildcards escaped."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = f"%{escaped}%"
    return sa.or_(
        *(
            sa.func.lower(sa.func.coalesce(column, "")).like(pattern, escape="\\")
            for column in columns
        )
    )


@dataclass(frozen=True)
class QueueCursor:
    """Where a page ends: the last row's change time and id, or, in an order by score or
    margin, its sort `value` and id."""

    updated_at: datetime
    id: str
    value: float | None = None

    def encode(self) -> str:
        if self.value is not None:
            return f"~{self.value!r}|{self.id}"
        return f"{to_utc(self.updated_at).isoformat()}|{self.id}"

    @classmethod
    def decode(cls, text: str) -> QueueCursor | None:
        """The cursor `encode` wrote, or None for anything else (a stale or forged one
        starts from the first page)."""
        when, sep, artifact_id = text.partition("|")
        if not sep or not artifact_id:
            return None
        try:
            if when.startswith("~"):
                value = float(when[1:])
                if value != value or abs(value) > _NO_SCORE:  # NaN or out of range
                    return None
                return cls(_EPOCH, artifact_id, value)
            return cls(as_utc(datetime.fromisoformat(when)), artifact_id)
        except ValueError:
            return None


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class QueueItem:
    """One artifact in the queue (no content)."""

    id: str
    type: str
    status: str
    bucket: str
    title: str | None
    created_by: str
    revision: int
    version: int
    updated_at: datetime
    awaiting_approval: bool
    failures: int
    last_reason: str | None
    #: the latest evaluation of the current revision: its score, verdict, margin to the
    #: threshold and the criteria it failed (None and empty before any)
    score: float | None = None
    verdict: str | None = None
    margin: float | None = None
    failed: tuple[str, ...] = ()


@dataclass(frozen=True)
class QueuePage:
    items: tuple[QueueItem, ...]
    #: the cursor of the next page; None on the last page
    next: QueueCursor | None


@dataclass(frozen=True)
class Revision:
    """One revision of an artifact's content."""

    revision: int
    content: Any
    status: str
    actor: str
    reason: str | None
    created_at: datetime


@dataclass(frozen=True)
class RunCursor:
    """Where a page of runs ends: the last run's start time and id."""

    started_at: datetime
    id: str

    def encode(self) -> str:
        return f"{to_utc(self.started_at).isoformat()}|{self.id}"

    @classmethod
    def decode(cls, text: str) -> RunCursor | None:
        when, sep, run_id = text.partition("|")
        if not sep or not run_id:
            return None
        try:
            return cls(as_utc(datetime.fromisoformat(when)), run_id)
        except ValueError:
            return None


@dataclass(frozen=True)
class RunPage:
    items: tuple[RunOverview, ...]
    next: RunCursor | None


@dataclass(frozen=True)
class CatalogueEntry:
    """A rubric and its stored versions (lowest to highest semver)."""

    rubric_id: str
    deleted: bool
    versions: tuple[RubricVersionInfo, ...]

    @property
    def latest(self) -> RubricVersionInfo | None:
        return self.versions[-1] if self.versions else None


@dataclass(frozen=True)
class CataloguePage:
    items: tuple[CatalogueEntry, ...]
    #: the rubric id the next page starts after; None on the last page
    next: str | None


class DashboardQueries:
    """The dashboard's read queries over one store's database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def queue_page(
        self,
        queue: QueueFilter,
        *,
        limit: int = 50,
        after: QueueCursor | None = None,
        newest_first: bool = True,
        sort: str = "updated",
    ) -> QueuePage:
        """One page of the queue, ordered by last change (newest first, or oldest) then
        id, or with `sort` by the latest evaluation's score (lowest first) or margin to
        the threshold (nearest first), starting after `after`; each item with its latest
        evaluation's figures and failed criteria."""
        c = _artifacts.c
        clauses = queue._bucket_clauses()
        if queue.bucket is not None:
            clauses = [(name, clause) for name, clause in clauses if name == queue.bucket]
        if not clauses:
            return QueuePage((), None)
        by_value = sort in ("score", "margin")
        bucket = sa.case(*[(clause, name) for name, clause in clauses], else_="").label("bucket")
        where = [
            sa.or_(*[clause for _, clause in clauses]),
            *queue._common(),
            *queue._unclaimed(),
        ]
        columns: list[Any] = [
            c.id,
            c.type,
            c.status,
            c.title,
            c.created_by,
            c.revision,
            c.version,
            c.updated_at,
            c.awaiting_approval,
            c.failures,
            c.last_reason,
            bucket,
        ]
        if by_value:
            key = _sort_key(sort)
            columns.append(key.label("sort_value"))
            order: tuple[Any, ...] = (key, c.id)
            if after is not None and after.value is not None:
                where.append(sa.tuple_(key, c.id) > sa.tuple_(sa.literal(after.value), after.id))
        else:
            if after is not None and after.value is None:
                mark = sa.tuple_(sa.literal(to_utc(after.updated_at), sa.DateTime(True)), after.id)
                keyset = sa.tuple_(c.updated_at, c.id)
                where.append(keyset < mark if newest_first else keyset > mark)
            order = (c.updated_at.desc(), c.id.desc()) if newest_first else (c.updated_at, c.id)
        # both keys in one direction; one arm per state, each read in order from the
        # (status, updated_at, id) index and cut at the page's size, then merged: a page
        # reads at most a page per state, however many artifacts wait (one query over
        # all states would sort every queued artifact first)
        chosen = {name for name, _ in clauses}
        statuses = sorted({s for b in queue.buckets if b.name in chosen for s in b.statuses})
        arms = [
            sa.select(
                *sa.select(*columns)
                .where(c.status == status, *where)
                .order_by(*order)
                .limit(limit + 1)
                .subquery(f"s{index}")
                .c
            )
            for index, status in enumerate(statuses)
        ]
        merged = sa.union_all(*arms).subquery("merged")
        m = merged.c
        if by_value:
            merged_order: tuple[Any, ...] = (m.sort_value, m.id)
        elif newest_first:
            merged_order = (m.updated_at.desc(), m.id.desc())
        else:
            merged_order = (m.updated_at, m.id)
        query = sa.select(merged).order_by(*merged_order).limit(limit + 1)
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
            judged = await _judged(connection, rows[:limit])
        items = tuple(
            replace(
                QueueItem(
                    id=row.id,
                    type=row.type,
                    status=row.status,
                    bucket=row.bucket,
                    title=row.title,
                    created_by=row.created_by,
                    revision=row.revision,
                    version=row.version,
                    updated_at=as_utc(row.updated_at),
                    awaiting_approval=bool(row.awaiting_approval),
                    failures=int(row.failures or 0),
                    last_reason=row.last_reason,
                ),
                **judged.get(row.id, {}),
            )
            for row in rows[:limit]
        )
        if len(rows) <= limit or not items:
            return QueuePage(items, None)
        last, row = items[-1], rows[limit - 1]
        if by_value:
            return QueuePage(items, QueueCursor(_EPOCH, last.id, float(row.sort_value)))
        return QueuePage(items, QueueCursor(last.updated_at, last.id))

    async def queue_counts(self, queue: QueueFilter) -> dict[str, int]:
        """How many artifacts each bucket holds under `queue`'s filters (its `bucket`
        choice aside), in one query: counted per (status, awaiting approval, failures) in
        SQL (an index-only scan of the states index, unsorted), each group then given to
        its bucket here (a handful of groups)."""
        if not queue.buckets:
            return {}
        c = _artifacts.c
        statuses = sorted({status for bucket in queue.buckets for status in bucket.statuses})
        # grouped by the index's own columns, in its order: the groups stream out of the
        # index with no sort (an expression such as `failures > 0` needs a temporary
        # B-tree over every queued row); `failed` is decided here per group
        query = (
            sa.select(c.status, c.awaiting_approval, c.failures, sa.func.count().label("n"))
            .where(c.status.in_(statuses), *queue._common())
            .group_by(c.status, c.awaiting_approval, c.failures)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        counts = {bucket.name: 0 for bucket in queue.buckets}
        for row in rows:
            failed = (row.failures or 0) > 0
            for bucket in queue.buckets:
                if bucket.holds(row.status, bool(row.awaiting_approval), failed):
                    counts[bucket.name] += int(row.n)
                    break
        return counts

    async def revisions(
        self, artifact_id: str, *, numbers: Sequence[int] | None = None
    ) -> list[Revision]:
        """The artifact's revisions (all, or those numbered `numbers`), oldest first."""
        r = _revisions.c
        query = sa.select(_revisions).where(r.artifact_id == artifact_id)
        if numbers is not None:
            query = query.where(r.revision.in_(list(numbers)))
        async with self.database.read() as connection:
            rows = (await connection.execute(query.order_by(r.revision))).all()
        return [
            Revision(
                revision=row.revision,
                content=json.loads(row.content),
                status=row.status,
                actor=row.actor,
                reason=row.reason,
                created_at=as_utc(row.created_at),
            )
            for row in rows
        ]

    async def run_page(self, *, limit: int = 50, after: RunCursor | None = None) -> RunPage:
        """One page of runs, newest first (keyset on start time and id), each with its
        figures summed in SQL (`RunStore.overviews_of`)."""
        r = _runs.c
        query = sa.select(_runs)
        if after is not None:
            when = to_utc(after.started_at)
            query = query.where(
                sa.or_(r.started_at < when, sa.and_(r.started_at == when, r.id < after.id))
            )
        query = query.order_by(r.started_at.desc(), r.id.desc()).limit(limit + 1)
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        infos: list[RunInfo] = [run_info(row) for row in rows[:limit]]
        overviews = await RunStore(self.database).overviews_of(infos)
        more = len(rows) > limit
        last = rows[limit - 1] if more else None
        cursor = RunCursor(as_utc(last.started_at), last.id) if last is not None else None
        return RunPage(tuple(overviews), cursor)

    async def rubric_catalogue(
        self, *, limit: int = 50, after: str | None = None, search: str = ""
    ) -> CataloguePage:
        """One page of rubrics by id (keyset), each with every stored version; `search`
        keeps ids containing it."""
        rb, v = _rubrics.c, _rubric_versions.c
        query = sa.select(rb.rubric_id, rb.deleted_at)
        if after is not None:
            query = query.where(rb.rubric_id > after)
        if search:
            escaped = search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            query = query.where(rb.rubric_id.like(f"%{escaped}%", escape="\\"))
        query = query.order_by(rb.rubric_id).limit(limit + 1)
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
            chosen = [row.rubric_id for row in rows[:limit]]
            versions = (
                await connection.execute(
                    sa.select(
                        v.rubric_id,
                        v.version,
                        v.content_hash,
                        v.name,
                        v.target_type,
                        v.source_format,
                        v.created_at,
                    ).where(v.rubric_id.in_(chosen))
                )
            ).all()
        by_id: dict[str, list[RubricVersionInfo]] = {}
        deleted = {row.rubric_id: row.deleted_at is not None for row in rows}
        for row in versions:
            by_id.setdefault(row.rubric_id, []).append(
                RubricVersionInfo(
                    row.rubric_id,
                    row.version,
                    row.content_hash,
                    row.name,
                    row.target_type,
                    row.source_format,
                    as_utc(row.created_at),
                    deleted[row.rubric_id],
                )
            )
        items = tuple(
            CatalogueEntry(
                rubric_id,
                deleted[rubric_id],
                tuple(
                    sorted(
                        by_id.get(rubric_id, []),
                        key=lambda info: version_order(info.version, info.created_at),
                    )
                ),
            )
            for rubric_id in chosen
        )
        return CataloguePage(items, chosen[-1] if len(rows) > limit and chosen else None)


async def _judged(connection: Any, rows: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """The latest evaluation of each row's current revision (score, verdict, margin) and
    the criteria it failed, by artifact id: two queries for a page, whatever its size,
    each a seek per artifact on an index (`artifact_id IN (...)`: a row-value IN list
    would scan the table on SQLite)."""
    if not rows:
        return {}
    e, r = _evaluations.c, _criteria.c
    current = {row.id: int(row.revision) for row in rows}
    found = await connection.execute(
        sa.select(e.id, e.artifact_id, e.revision, e.score, e.verdict, e.margin, e.created_at)
        .where(e.artifact_id.in_(sorted(current)))
        .order_by(e.artifact_id, e.created_at.desc(), e.id.desc())
    )
    latest: dict[str, Any] = {}
    for row in found:
        if row.revision == current[row.artifact_id] and row.artifact_id not in latest:
            latest[row.artifact_id] = row
    if not latest:
        return {}
    owner = {row.id: artifact_id for artifact_id, row in latest.items()}
    failed: dict[str, list[str]] = {}
    marks = await connection.execute(
        sa.select(r.evaluation_id, r.criterion_id)
        .where(r.evaluation_id.in_(sorted(owner)), r.passed.is_(sa.false()))
        .order_by(r.evaluation_id, r.position)
    )
    for row in marks:
        failed.setdefault(owner[row.evaluation_id], []).append(row.criterion_id)
    return {
        artifact_id: {
            "score": float(row.score),
            "verdict": row.verdict,
            "margin": None if row.margin is None else float(row.margin),
            "failed": tuple(failed.get(artifact_id, ())),
        }
        for artifact_id, row in latest.items()
    }
