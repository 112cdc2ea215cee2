"""Human decisions as labels of the judge: every approve, override and reject of a
reviewed artifact says what a person thought of the review's verdict, and, with the
criteria the person marked wrong (`judge_corrections`), of each criterion's.

Nothing is copied: a label is read from the audit trail (the decision's event), the
latest stored evaluation of the decided revision for each rubric, its criterion rows,
and the corrections. So every person's decision counts, however it was made (dashboard,
API or CLI), approvals as well as rejects: keeping only the disagreements would leave
nothing to agree with and make kappa meaningless. Decisions rubricflow makes itself (an
automatic approval, a blocking reject: actor `SYSTEM_ACTOR`) are not labels, whenever they
were stored: they are the judge's own verdict.

- The verdict: approve and override say "pass", reject says "fail"; the judge's is the
  evaluation's verdict (an incomplete evaluation is no verdict and is left out).
- A criterion: the person's label is the judge's (pass or fail), flipped where the
  person marked it wrong. Only scored criteria with a pass or fail count.

The figures are counts per (rubric, criterion, judge, person) grouped in SQL; the
disagreements are read a page at a time (keyset on the event's row id).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from rubricflow.store._sql import as_utc, utcnow
from rubricflow.store.artifact_models import SYSTEM_ACTOR
from rubricflow.store.database import Database
from rubricflow.store.tables import (
    ArtifactEventRow,
    ArtifactRevisionRow,
    ArtifactRow,
    CriterionResultRow,
    EvaluationRow,
    JudgeCorrectionRow,
)

__all__ = [
    "DECISION_TRIGGERS",
    "CriterionCount",
    "CriterionLabel",
    "Disagreement",
    "DisagreementPage",
    "JudgeLabels",
    "VerdictCount",
]

#: the triggers that are a person's decision on a reviewed artifact, and the verdict each says
DECISION_TRIGGERS = {"approve": "pass", "override": "pass", "reject": "fail"}

_events = ArtifactEventRow.__table__  # type: ignore[attr-defined]
_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]
_criteria = CriterionResultRow.__table__  # type: ignore[attr-defined]
_corrections = JudgeCorrectionRow.__table__  # type: ignore[attr-defined]
_artifacts = ArtifactRow.__table__  # type: ignore[attr-defined]
_revisions = ArtifactRevisionRow.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class VerdictCount:
    """How many decisions on `rubric_id` had the judge say `judge` and the person `human`."""

    rubric_id: str
    judge: str
    human: str
    count: int


@dataclass(frozen=True)
class CriterionCount:
    """How many labels of one criterion had the judge say `judge_passed` and the person
    `human_passed`."""

    rubric_id: str
    criterion_id: str
    judge_passed: bool
    human_passed: bool
    count: int


@dataclass(frozen=True)
class CriterionLabel:
    """One person's label of one criterion: what the judge decided (`judge_passed`) and
    what the person holds (`human_passed`), when, and on which content (`content` is
    None unless asked for)."""

    artifact_id: str
    revision: int
    evaluation_id: str
    rubric_version: str
    decided_at: datetime
    criterion_id: str
    judge_passed: bool
    human_passed: bool
    content: str | None = None


@dataclass(frozen=True)
class Disagreement:
    """A decision where the person and the judge differ: on the verdict, or on the
    criteria listed in `corrected`."""

    event_id: int
    artifact_id: str
    title: str | None
    seq: int
    revision: int
    decision: str
    actor: str
    reason: str | None
    decided_at: datetime
    evaluation_id: str
    rubric_id: str
    rubric_version: str
    judge_verdict: str
    human_verdict: str
    corrected: tuple[str, ...]


@dataclass(frozen=True)
class DisagreementPage:
    items: tuple[Disagreement, ...]
    #: the event row id the next page starts below; None on the last page
    next: int | None


def _decided(rubric_id: str | None = None, types: Sequence[str] | None = None) -> sa.Subquery:
    """Each decision with the latest evaluation of the decided revision per rubric; of
    artifacts of `types` only, unless None."""
    ev, e = _events.c, _evaluations.c
    where = [
        ev.trigger.in_(list(DECISION_TRIGGERS)),
        # a person's decision only: rubricflow's own approvals and blocking rejects (its
        # reviews, workers' and inline ones alike, all act as SYSTEM_ACTOR) are the judge
        # agreeing with itself
        ev.actor != SYSTEM_ACTOR,
        e.verdict.in_(("pass", "fail")),
    ]
    if rubric_id is not None:
        where.append(e.rubric_id == rubric_id)
    if types is not None:
        a = _artifacts.c
        where.append(ev.artifact_id.in_(sa.select(a.id).where(a.type.in_(list(types)))))
    ranked = (
        sa.select(
            ev.id.label("event_id"),
            ev.artifact_id,
            ev.seq,
            ev.revision,
            ev.trigger,
            ev.actor,
            ev.reason,
            ev.created_at.label("decided_at"),
            e.id.label("evaluation_id"),
            e.rubric_id,
            e.rubric_version,
            e.verdict,
            sa.func.row_number()
            .over(
                partition_by=(ev.id, e.rubric_id),
                order_by=(e.created_at.desc(), e.id.desc()),
            )
            .label("newest"),
        )
        .select_from(
            _events.join(
                _evaluations,
                sa.and_(e.artifact_id == ev.artifact_id, e.revision == ev.revision),
            )
        )
        .where(*where)
        .subquery("ranked")
    )
    return sa.select(ranked).where(ranked.c.newest == 1).subquery("decided")


def _human_verdict(trigger: sa.ColumnElement[str]) -> sa.ColumnElement[str]:
    return sa.case(*[(trigger == t, v) for t, v in DECISION_TRIGGERS.items()], else_="")


def _corrected(decided: sa.Subquery) -> sa.ColumnElement[bool]:
    k, d = _corrections.c, decided.c
    return (
        sa.select(sa.literal(1))
        .where(
            k.artifact_id == d.artifact_id,
            k.event_seq == d.seq,
            k.evaluation_id == d.evaluation_id,
        )
        .exists()
    )


class JudgeLabels:
    """Reads human decisions as labels, and records the criteria a person marked wrong."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def correct(
        self,
        artifact_id: str,
        event_seq: int,
        marks: Iterable[tuple[str, str]],
        *,
        actor: str,
    ) -> int:
        """Record that the person deciding (audit event `event_seq` of `artifact_id`)
        marked each `(evaluation_id, criterion_id)` in `marks` as judged wrong; how many
        marks were new."""
        rows = [
            {
                "artifact_id": artifact_id,
                "event_seq": event_seq,
                "evaluation_id": evaluation_id,
                "criterion_id": criterion_id,
                "actor": actor,
                "created_at": utcnow(),
            }
            for evaluation_id, criterion_id in sorted(set(marks))
        ]
        if not rows:
            return 0
        k = _corrections.c
        async with self.database.transaction() as connection:
            known = {
                (row.evaluation_id, row.criterion_id)
                for row in await connection.execute(
                    sa.select(k.evaluation_id, k.criterion_id).where(
                        k.artifact_id == artifact_id, k.event_seq == event_seq
                    )
                )
            }
            fresh = [r for r in rows if (r["evaluation_id"], r["criterion_id"]) not in known]
            if fresh:
                await connection.execute(sa.insert(_corrections), fresh)
        return len(fresh)

    async def corrections(self, artifact_id: str) -> set[tuple[int, str, str]]:
        """Every `(event_seq, evaluation_id, criterion_id)` people marked judged wrong on
        `artifact_id`."""
        k = _corrections.c
        query = sa.select(k.event_seq, k.evaluation_id, k.criterion_id).where(
            k.artifact_id == artifact_id
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return {(int(r.event_seq), r.evaluation_id, r.criterion_id) for r in rows}

    async def verdict_counts(
        self, rubric_id: str | None = None, *, types: Sequence[str] | None = None
    ) -> list[VerdictCount]:
        """Decisions per rubric by (judge's verdict, person's verdict); on artifacts of
        `types` only, unless None."""
        decided = _decided(rubric_id, types)
        d = decided.c
        human = _human_verdict(d.trigger).label("human")
        query = (
            sa.select(d.rubric_id, d.verdict, human, sa.func.count().label("n"))
            .group_by(d.rubric_id, d.verdict, human)
            .order_by(d.rubric_id)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return [VerdictCount(r.rubric_id, r.verdict, r.human, int(r.n)) for r in rows]

    async def criterion_counts(
        self, rubric_id: str | None = None, *, types: Sequence[str] | None = None
    ) -> list[CriterionCount]:
        """Criterion labels per rubric and criterion by (judge passed, person passed); on
        artifacts of `types` only, unless None."""
        decided = _decided(rubric_id, types)
        d, c, k = decided.c, _criteria.c, _corrections.c
        flipped = (
            sa.select(sa.literal(1))
            .where(
                k.artifact_id == d.artifact_id,
                k.event_seq == d.seq,
                k.evaluation_id == d.evaluation_id,
                k.criterion_id == c.criterion_id,
            )
            .exists()
        )
        wrong = sa.case((flipped, 1), else_=0).label("wrong")
        passed = sa.case((c.passed.is_(True), 1), else_=0).label("passed")
        query = (
            sa.select(d.rubric_id, c.criterion_id, passed, wrong, sa.func.count().label("n"))
            .select_from(decided.join(_criteria, c.evaluation_id == d.evaluation_id))
            .where(c.status == "scored", c.passed.is_not(None))
            .group_by(d.rubric_id, c.criterion_id, passed, wrong)
            .order_by(d.rubric_id, c.criterion_id)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return [
            CriterionCount(
                r.rubric_id,
                r.criterion_id,
                judge_passed=bool(r.passed),
                human_passed=bool(r.passed) != bool(r.wrong),
                count=int(r.n),
            )
            for r in rows
        ]

    async def criterion_labels(
        self, rubric_id: str, *, with_content: bool = False, limit: int = 100_000
    ) -> list[CriterionLabel]:
        """Every criterion label of decisions on `rubric_id`, oldest first (at most
        `limit`, the newest kept), with the decided revision's content if asked."""
        decided = _decided(rubric_id)
        d, c, k, r = decided.c, _criteria.c, _corrections.c, _revisions.c
        flipped = (
            sa.select(sa.literal(1))
            .where(
                k.artifact_id == d.artifact_id,
                k.event_seq == d.seq,
                k.evaluation_id == d.evaluation_id,
                k.criterion_id == c.criterion_id,
            )
            .exists()
        )
        columns: list[sa.ColumnElement[object]] = [
            d.artifact_id,
            d.revision,
            d.evaluation_id,
            d.rubric_version,
            d.decided_at,
            d.event_id,
            c.criterion_id,
            c.passed,
            sa.case((flipped, 1), else_=0).label("wrong"),
        ]
        joined = decided.join(_criteria, c.evaluation_id == d.evaluation_id)
        if with_content:
            columns.append(r.content)
            joined = joined.join(
                _revisions, sa.and_(r.artifact_id == d.artifact_id, r.revision == d.revision)
            )
        query = (
            sa.select(*columns)
            .select_from(joined)
            .where(c.status == "scored", c.passed.is_not(None))
            .order_by(d.event_id.desc(), c.criterion_id)
            .limit(limit)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return [
            CriterionLabel(
                artifact_id=row.artifact_id,
                revision=int(row.revision),
                evaluation_id=row.evaluation_id,
                rubric_version=row.rubric_version,
                decided_at=as_utc(row.decided_at),
                criterion_id=row.criterion_id,
                judge_passed=bool(row.passed),
                human_passed=bool(row.passed) != bool(row.wrong),
                content=row.content if with_content else None,
            )
            for row in reversed(rows)
        ]

    async def disagreements(
        self,
        *,
        rubric_id: str | None = None,
        limit: int = 50,
        before: int | None = None,
        types: Sequence[str] | None = None,
    ) -> DisagreementPage:
        """Decisions that disagree with the judge (on the verdict or a criterion), newest
        first, a page at a time: those with an event row id below `before`; on artifacts
        of `types` only, unless None."""
        decided = _decided(rubric_id, types)
        d, a = decided.c, _artifacts.c
        human = _human_verdict(d.trigger)
        where: list[sa.ColumnElement[bool]] = [sa.or_(human != d.verdict, _corrected(decided))]
        if before is not None:
            where.append(d.event_id < before)
        query = (
            sa.select(decided, a.title)
            .select_from(decided.join(_artifacts, a.id == d.artifact_id))
            .where(*where)
            .order_by(d.event_id.desc(), d.rubric_id)
            .limit(limit + 1)
        )
        k = _corrections.c
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
            keys = {(r.artifact_id, r.seq) for r in rows[:limit]}
            marks: dict[tuple[str, int, str], list[str]] = {}
            if keys:
                found = await connection.execute(
                    sa.select(k.artifact_id, k.event_seq, k.evaluation_id, k.criterion_id)
                    .where(
                        sa.tuple_(k.artifact_id, k.event_seq).in_(sorted(keys)),
                    )
                    .order_by(k.criterion_id)
                )
                for m in found:
                    key = (m.artifact_id, m.event_seq, m.evaluation_id)
                    marks.setdefault(key, []).append(m.criterion_id)
        # a page ends at a whole event (one event may disagree on several rubrics)
        more = len(rows) > limit
        page = rows[:limit]
        if more and page and rows[limit].event_id == page[-1].event_id:
            page = [r for r in page if r.event_id != page[-1].event_id] or page
        items = tuple(
            Disagreement(
                event_id=int(r.event_id),
                artifact_id=r.artifact_id,
                title=r.title,
                seq=int(r.seq),
                revision=int(r.revision),
                decision=r.trigger,
                actor=r.actor,
                reason=r.reason,
                decided_at=as_utc(r.decided_at),
                evaluation_id=r.evaluation_id,
                rubric_id=r.rubric_id,
                rubric_version=r.rubric_version,
                judge_verdict=r.verdict,
                human_verdict=DECISION_TRIGGERS[r.trigger],
                corrected=tuple(marks.get((r.artifact_id, int(r.seq), r.evaluation_id), ())),
            )
            for r in page
        )
        return DisagreementPage(items, items[-1].event_id if more and items else None)
