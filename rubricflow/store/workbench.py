"""The reviewer's workbench in the store: claims, comments and the export of decisions.

- A *claim* says who is reviewing an artifact on the dashboard, until when: a short lease
  that the open page renews. Others are not shown the artifact as their next item and see
  who holds it; a lapsed lease is no claim, and the next claim takes it over. Taking one
  is a single conditional UPDATE (or an INSERT where no row exists), so two reviewers
  racing for an artifact on SQLite or PostgreSQL get one winner.
- A *comment* is a note on an artifact, kept with its history (append-only).
- The *export* reads every person's decision (approve, override, reject; rubricflow's own
  are not decisions) with the judge's verdict of the decided revision per rubric, and its
  criterion labels (what the judge said, what the person holds: `store/labels.py`), a
  page at a time (keyset on the decision's event row id), so an export of any size
  streams in bounded memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from rubricflow.errors import StoreError
from rubricflow.store._sql import as_utc, to_utc, utcnow
from rubricflow.store.artifact_models import SYSTEM_ACTOR
from rubricflow.store.database import Database
from rubricflow.store.labels import DECISION_TRIGGERS
from rubricflow.store.tables import (
    ArtifactCommentRow,
    ArtifactEventRow,
    ArtifactRow,
    CriterionResultRow,
    EvaluationRow,
    JudgeCorrectionRow,
    ReviewClaimRow,
)

__all__ = [
    "Claim",
    "Comment",
    "CriterionMark",
    "ExportedDecision",
    "Workbench",
]

_claims = ReviewClaimRow.__table__  # type: ignore[attr-defined]
_comments = ArtifactCommentRow.__table__  # type: ignore[attr-defined]
_events = ArtifactEventRow.__table__  # type: ignore[attr-defined]
_artifacts = ArtifactRow.__table__  # type: ignore[attr-defined]
_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]
_criteria = CriterionResultRow.__table__  # type: ignore[attr-defined]
_corrections = JudgeCorrectionRow.__table__  # type: ignore[attr-defined]

#: the longest comment kept
MAX_COMMENT_CHARS = 4000


@dataclass(frozen=True)
class Claim:
    """Who holds an artifact, since when and until when; `mine` is whether the asker
    holds it (a claim answers the asker either way)."""

    artifact_id: str
    holder: str
    claimed_at: datetime
    expires_at: datetime
    mine: bool
    #: the artifact's title (listed with others' claims; None when it has none)
    title: str | None = None


@dataclass(frozen=True)
class Comment:
    id: int
    artifact_id: str
    revision: int
    author: str
    body: str
    created_at: datetime


@dataclass(frozen=True)
class CriterionMark:
    """One criterion label of a decision: the judge's pass or fail, and the person's."""

    criterion_id: str
    judge_passed: bool
    human_passed: bool


@dataclass(frozen=True)
class ExportedDecision:
    """One person's decision on one artifact, with the judge's latest evaluation of the
    decided revision for one rubric (none: the rubric fields are None)."""

    event_id: int
    artifact_id: str
    artifact_type: str
    title: str | None
    revision: int
    decision: str
    actor: str
    reason: str | None
    decided_at: datetime
    human_verdict: str
    rubric_id: str | None
    rubric_version: str | None
    evaluation_id: str | None
    judge_verdict: str | None
    score: float | None
    criteria: tuple[CriterionMark, ...] = field(default=())

    @property
    def corrected(self) -> tuple[str, ...]:
        """The criteria the person marked the judge wrong on."""
        return tuple(m.criterion_id for m in self.criteria if m.judge_passed != m.human_passed)


class Workbench:
    """Claims, comments and the decision export over one store's database. `clock` gives
    the time claims are measured against (tests pass their own)."""

    def __init__(self, database: Database, *, clock: Callable[[], datetime] = utcnow) -> None:
        self.database = database
        self.clock = clock

    # --- claims ------------------------------------------------------------------------------
    async def claim(self, artifact_id: str, holder: str, *, seconds: float) -> Claim:
        """Take (or renew) `holder`'s claim on the artifact for `seconds`, unless someone
        else holds an unexpired one: then that claim, with `mine` False."""
        k = _claims.c
        for _ in range(3):
            now = to_utc(self.clock())
            until = now + timedelta(seconds=seconds)
            async with self.database.transaction() as connection:
                taken = await connection.execute(
                    sa.update(_claims)
                    .where(
                        k.artifact_id == artifact_id,
                        sa.or_(k.holder == holder, k.expires_at <= now),
                    )
                    .values(
                        holder=holder,
                        claimed_at=sa.case((k.holder == holder, k.claimed_at), else_=now),
                        expires_at=until,
                    )
                )
            if taken.rowcount == 1:
                found = await self.holder_of(artifact_id, holder)
                if found is not None:
                    return found
                continue
            try:
                async with self.database.transaction() as connection:
                    await connection.execute(
                        sa.insert(_claims).values(
                            artifact_id=artifact_id,
                            holder=holder,
                            claimed_at=now,
                            expires_at=until,
                        )
                    )
                return Claim(artifact_id, holder, now, until, mine=True)
            except (IntegrityError, StoreError):
                # someone else's unexpired claim (or a race for a new one), or no such
                # artifact (a foreign key): read what is there
                current = await self.holder_of(artifact_id, holder)
                if current is not None:
                    return current
        raise StoreError(f"could not claim artifact {artifact_id!r}: it does not exist")

    async def release(self, artifact_id: str, holder: str) -> bool:
        """Drop `holder`'s claim on the artifact; whether it held one."""
        k = _claims.c
        async with self.database.transaction() as connection:
            done = await connection.execute(
                sa.delete(_claims).where(k.artifact_id == artifact_id, k.holder == holder)
            )
        return bool(done.rowcount)

    async def holder_of(self, artifact_id: str, asker: str) -> Claim | None:
        """The artifact's unexpired claim, if any, as `asker` sees it."""
        found = await self.claims_of([artifact_id], asker)
        return found.get(artifact_id)

    async def claims_of(self, artifact_ids: Sequence[str], asker: str) -> dict[str, Claim]:
        """The unexpired claims on the artifacts among `artifact_ids`, by artifact id."""
        if not artifact_ids:
            return {}
        k = _claims.c
        now = to_utc(self.clock())
        query = sa.select(_claims).where(k.artifact_id.in_(list(artifact_ids)), k.expires_at > now)
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return {
            row.artifact_id: Claim(
                row.artifact_id,
                row.holder,
                as_utc(row.claimed_at),
                as_utc(row.expires_at),
                mine=row.holder == asker,
            )
            for row in rows
        }

    async def others_claims(
        self, asker: str, *, types: Sequence[str] | None = None, limit: int = 20
    ) -> list[Claim]:
        """Unexpired claims held by anyone but `asker` on artifacts of `types` (None: any),
        soonest to lapse first."""
        k, a = _claims.c, _artifacts.c
        now = to_utc(self.clock())
        where = [k.holder != asker, k.expires_at > now]
        if types is not None:
            where.append(
                k.artifact_id.in_(sa.select(a.id).where(a.type.in_(list(types))))
                if types
                else sa.false()
            )
        query = (
            sa.select(_claims, a.title)
            .join(_artifacts, a.id == k.artifact_id)
            .where(*where)
            .order_by(k.expires_at, k.artifact_id)
            .limit(limit)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return [
            Claim(
                row.artifact_id,
                row.holder,
                as_utc(row.claimed_at),
                as_utc(row.expires_at),
                mine=False,
                title=row.title,
            )
            for row in rows
        ]

    # --- comments ----------------------------------------------------------------------------
    async def add_comment(
        self, artifact_id: str, *, revision: int, author: str, body: str
    ) -> Comment:
        """Keep a comment on the artifact (the caller checked it may)."""
        now = utcnow()
        text = body[:MAX_COMMENT_CHARS]
        async with self.database.transaction() as connection:
            done = await connection.execute(
                sa.insert(_comments)
                .values(
                    artifact_id=artifact_id,
                    revision=revision,
                    author=author,
                    body=text,
                    created_at=now,
                )
                .returning(_comments.c.id)
            )
            comment_id = int(done.scalar_one())
        return Comment(comment_id, artifact_id, revision, author, text, now)

    async def comments(self, artifact_id: str, *, limit: int = 500) -> list[Comment]:
        """The artifact's comments, oldest first (the newest `limit`)."""
        c = _comments.c
        query = (
            sa.select(_comments)
            .where(c.artifact_id == artifact_id)
            .order_by(c.id.desc())
            .limit(limit)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return [
            Comment(
                int(row.id),
                row.artifact_id,
                int(row.revision),
                row.author,
                row.body,
                as_utc(row.created_at),
            )
            for row in reversed(rows)
        ]

    # --- the export of decisions ----------------------------------------------------------
    async def decisions(
        self,
        *,
        types: Sequence[str] | None = None,
        since: datetime | None = None,
        page_size: int = 500,
    ) -> AsyncIterator[ExportedDecision]:
        """Every person's decision, oldest first, on artifacts of `types` (None: any),
        decided at `since` or later, read `page_size` events at a time."""
        after = 0
        while True:
            page, last = await self._decision_page(types, since, after, page_size)
            for item in page:
                yield item
            if last is None:
                return
            after = last

    async def _decision_page(
        self,
        types: Sequence[str] | None,
        since: datetime | None,
        after: int,
        limit: int,
    ) -> tuple[list[ExportedDecision], int | None]:
        """The decisions of up to `limit` events after event row id `after`, and the last
        event's id when more may follow."""
        ev, a = _events.c, _artifacts.c
        where = [
            ev.trigger.in_(list(DECISION_TRIGGERS)),
            ev.actor != SYSTEM_ACTOR,
            ev.id > after,
        ]
        if since is not None:
            where.append(ev.created_at >= to_utc(since))
        if types is not None:
            where.append(a.type.in_(list(types)) if types else sa.false())
        events = (
            sa.select(
                ev.id,
                ev.artifact_id,
                ev.seq,
                ev.revision,
                ev.trigger,
                ev.actor,
                ev.reason,
                ev.created_at,
                a.type,
                a.title,
            )
            .select_from(_events.join(_artifacts, a.id == ev.artifact_id))
            .where(*where)
            .order_by(ev.id)
            .limit(limit)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(events)).all()
            if not rows:
                return [], None
            judged = await _judged(connection, rows)
            marks = await _marks(connection, rows, judged)
        out: list[ExportedDecision] = []
        for row in rows:
            common = {
                "event_id": int(row.id),
                "artifact_id": row.artifact_id,
                "artifact_type": row.type,
                "title": row.title,
                "revision": int(row.revision),
                "decision": row.trigger,
                "actor": row.actor,
                "reason": row.reason,
                "decided_at": as_utc(row.created_at),
                "human_verdict": DECISION_TRIGGERS[row.trigger],
            }
            evaluations = judged.get((row.artifact_id, int(row.revision)), [])
            if not evaluations:
                out.append(
                    ExportedDecision(
                        **common,
                        rubric_id=None,
                        rubric_version=None,
                        evaluation_id=None,
                        judge_verdict=None,
                        score=None,
                    )
                )
            for e in evaluations:
                out.append(
                    ExportedDecision(
                        **common,
                        rubric_id=e.rubric_id,
                        rubric_version=e.rubric_version,
                        evaluation_id=e.id,
                        judge_verdict=e.verdict,
                        score=float(e.score),
                        criteria=marks.get((int(row.id), e.id), ()),
                    )
                )
        return out, (int(rows[-1].id) if len(rows) == limit else None)


async def _judged(
    connection: AsyncConnection, rows: Sequence[Any]
) -> dict[tuple[str, int], list[Any]]:
    """The latest evaluation per rubric of each decided revision among `rows` (read by
    `artifact_id IN (...)`, a seek per artifact: a row-value IN list scans on SQLite)."""
    e = _evaluations.c
    keys = {(r.artifact_id, int(r.revision)) for r in rows}
    found = await connection.execute(
        sa.select(
            e.id,
            e.artifact_id,
            e.revision,
            e.rubric_id,
            e.rubric_version,
            e.verdict,
            e.score,
        )
        .where(e.artifact_id.in_(sorted({k[0] for k in keys})))
        .order_by(e.artifact_id, e.revision, e.rubric_id, e.created_at.desc(), e.id.desc())
    )
    judged: dict[tuple[str, int], list[Any]] = {}
    seen: set[tuple[str, int, str]] = set()
    for row in found:
        key = (row.artifact_id, int(row.revision))
        if key in keys and (*key, row.rubric_id) not in seen:
            seen.add((*key, row.rubric_id))
            judged.setdefault(key, []).append(row)
    return judged


async def _marks(
    connection: AsyncConnection,
    rows: Sequence[Any],
    judged: dict[tuple[str, int], list[Any]],
) -> dict[tuple[int, str], tuple[CriterionMark, ...]]:
    """Each (event, evaluation)'s criterion labels: the scored criteria with a pass or
    fail, flipped where the person marked the judge wrong."""
    evaluation_ids = sorted({e.id for found in judged.values() for e in found})
    if not evaluation_ids:
        return {}
    c, k = _criteria.c, _corrections.c
    criteria = await connection.execute(
        sa.select(c.evaluation_id, c.criterion_id, c.passed)
        .where(
            c.evaluation_id.in_(evaluation_ids),
            c.status == "scored",
            c.passed.is_not(None),
        )
        .order_by(c.evaluation_id, c.position)
    )
    by_evaluation: dict[str, list[tuple[str, bool]]] = {}
    for row in criteria:
        by_evaluation.setdefault(row.evaluation_id, []).append((row.criterion_id, bool(row.passed)))
    keys = {(r.artifact_id, int(r.seq)) for r in rows}
    wrong = {
        (m.artifact_id, int(m.event_seq), m.evaluation_id, m.criterion_id)
        for m in await connection.execute(
            sa.select(k.artifact_id, k.event_seq, k.evaluation_id, k.criterion_id).where(
                k.artifact_id.in_(sorted({key[0] for key in keys}))
            )
        )
        if (m.artifact_id, int(m.event_seq)) in keys
    }
    marks: dict[tuple[int, str], tuple[CriterionMark, ...]] = {}
    for row in rows:
        for e in judged.get((row.artifact_id, int(row.revision)), []):
            marks[(int(row.id), e.id)] = tuple(
                CriterionMark(
                    criterion_id,
                    passed,
                    passed != ((row.artifact_id, int(row.seq), e.id, criterion_id) in wrong),
                )
                for criterion_id, passed in by_evaluation.get(e.id, [])
            )
    return marks
