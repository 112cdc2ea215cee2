"""Stored evaluations: each written whole (evaluation, criterion results, LLM calls) in one
transaction, and queried by id, target, artifact, rubric, time range and verdict."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from rubricflow.errors import NotFoundError, StoreError
from rubricflow.records.evaluations import CriterionPassRate, JudgeUsage, Spend
from rubricflow.results import Evaluation, LLMCall
from rubricflow.store._sql import INCOMPLETE, insert_ignoring_duplicates, parse_time, to_utc, utcnow
from rubricflow.store.copy import copies, copy_rows
from rubricflow.store.database import Database
from rubricflow.store.tables import ArtifactRow, CriterionResultRow, EvaluationRow, LLMCallRow

__all__ = [
    "Bucket",
    "CriterionPassRate",
    "EvaluationFilter",
    "EvaluationStore",
    "JudgeUsage",
    "Spend",
    "StoredEvaluation",
]

_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]
_criteria = CriterionResultRow.__table__  # type: ignore[attr-defined]
_calls = LLMCallRow.__table__  # type: ignore[attr-defined]
_artifacts = ArtifactRow.__table__  # type: ignore[attr-defined]
#: an artifact's `review_score` and `review_margin` before any evaluation
NO_SCORE = 1e9
_SCORED = _artifacts.update().where(
    _artifacts.c.id == sa.bindparam("match_id"),
    _artifacts.c.revision == sa.bindparam("match_revision"),
)
# built once: the same statement object is what lets a SQLite store run it directly
# (`rubricflow.store._sqlite_direct`)
_INSERT_EVALUATION = _evaluations.insert()
_INSERT_CRITERIA = _criteria.insert()
_INSERT_CALLS = _calls.insert()


@dataclass(frozen=True)
class StoredEvaluation:
    """What to store: an evaluation and, for a review, the artifact and revision it judged."""

    evaluation: Evaluation
    artifact_id: str | None = None
    revision: int | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class EvaluationFilter:
    """Which evaluations a query returns; every field left None matches anything."""

    rubric_id: str | None = None
    rubric_version: str | None = None
    target_id: str | None = None
    artifact_id: str | None = None
    revision: int | None = None
    verdict: str | None = None
    run_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def where(self) -> list[sa.ColumnElement[bool]]:
        c = _evaluations.c
        clauses: list[sa.ColumnElement[bool]] = []
        for column, value in (
            (c.rubric_id, self.rubric_id),
            (c.rubric_version, self.rubric_version),
            (c.target_id, self.target_id),
            (c.artifact_id, self.artifact_id),
            (c.revision, self.revision),
            (c.verdict, self.verdict),
            (c.run_id, self.run_id),
        ):
            if value is not None:
                clauses.append(column == value)
        if self.since is not None:
            clauses.append(c.created_at >= to_utc(self.since))
        if self.until is not None:
            clauses.append(c.created_at < to_utc(self.until))
        return clauses


Bucket = Literal["week", "day"]


def _bucket(dialect: str, bucket: Bucket, column: Any) -> Any:
    """The first day (UTC) of the day or ISO week (Monday) holding `column`."""
    if dialect == "postgresql":
        utc = sa.func.timezone("UTC", column)
        if bucket == "week":
            utc = sa.func.date_trunc("week", utc)  # ISO weeks: Mondays
        return sa.cast(utc, sa.Date)
    # SQLite stores UTC text; %w is 0 on Sunday, so (w + 6) % 7 days back is the Monday
    if bucket == "week":
        back = (sa.cast(sa.func.strftime("%w", column), sa.Integer) + 6) % 7
        return sa.func.date(column, sa.func.printf("-%d days", back))
    return sa.func.date(column)


def _day(value: date | str | None) -> str | None:
    return value if value is None or isinstance(value, str) else value.isoformat()


def _scored(criteria: Any) -> sa.ColumnElement[bool]:
    # the same rule as `rubricflow.runs.summarize`: scored with a pass or a fail
    return sa.and_(criteria.c.status == "scored", criteria.c.passed.is_not(None))


def _usage_columns() -> list[Any]:
    """The call ledger's aggregates every usage report shows: calls sent, cache hits,
    the tokens of the calls sent, and their cost."""
    k = _calls.c
    sent = k.outcome != "cached"
    return [
        _count(sent).label("calls"),
        _count(sa.not_(sent)).label("cache_hits"),
        sa.func.coalesce(
            sa.func.sum(sa.case((sent, sa.func.coalesce(k.input_tokens, 0)), else_=0)), 0
        ).label("input_tokens"),
        sa.func.coalesce(
            sa.func.sum(sa.case((sent, sa.func.coalesce(k.output_tokens, 0)), else_=0)), 0
        ).label("output_tokens"),
        sa.func.sum(k.cost).label("cost"),
    ]


def _count(condition: sa.ColumnElement[bool]) -> Any:
    return sa.func.coalesce(sa.func.sum(sa.case((condition, 1), else_=0)), 0)


def _text(value: str | None) -> str | None:
    """Text a scorer or judge wrote, without NUL (PostgreSQL refuses it in text; the JSON
    columns keep it escaped)."""
    return value.replace("\x00", "") if value else value


def _rows(
    item: StoredEvaluation,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    evaluation = item.evaluation
    usage = evaluation.usage()
    # times are stored in UTC: SQLite keeps no offset, so 13:30+02:00 must go in as 11:30
    created = parse_time(evaluation.created_at) if evaluation.created_at else utcnow()
    row = {
        "id": evaluation.id,
        "rubric_id": evaluation.rubric_id,
        "rubric_version": evaluation.rubric_version,
        "rubric_hash": evaluation.rubric_hash,
        "target_id": evaluation.target_id,
        "target_hash": evaluation.target_hash,
        "artifact_id": item.artifact_id,
        "revision": item.revision,
        "verdict": evaluation.verdict,
        "passed": evaluation.passed,
        "score": evaluation.score,
        "scaled_score": evaluation.scaled_score,
        "raw_score": evaluation.raw_score,
        "coverage": evaluation.coverage,
        "threshold": evaluation.threshold,
        "unscored_policy": evaluation.unscored_policy,
        "feedback": _text(evaluation.feedback),
        "created_at": created,
        "duration_ms": evaluation.duration_ms,
        "llm_calls": usage["llm_calls"],
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "cost": usage["cost"],
        "document": json.dumps(evaluation.to_dict(), ensure_ascii=False),
        "run_id": item.run_id,
        "margin": evaluation.margin,
    }
    criteria = []
    calls: list[dict[str, Any]] = []
    for position, result in enumerate(evaluation.criteria):
        criteria.append(
            {
                "evaluation_id": evaluation.id,
                "criterion_id": result.criterion_id,
                "position": position,
                "status": result.status,
                "score": result.score,
                "verdict": result.verdict,
                "level": result.level,
                "passed": result.passed,
                "weight": result.weight,
                "required": result.required,
                "scorer": result.scorer,
                "notes": _text(result.notes),
                "evidence": json.dumps(list(result.evidence), ensure_ascii=False),
                "confidence": result.confidence,
                "confidence_source": result.confidence_source,
            }
        )
        calls.extend(
            _call_row(evaluation.id, result.criterion_id, call, created)
            for call in result.llm_calls
        )
    # calls made for the whole evaluation (the LLM-written feedback) belong to no criterion
    calls.extend(
        _call_row(evaluation.id, None, call, created) for call in evaluation.feedback_llm_calls
    )
    return row, criteria, calls


def _call_row(
    evaluation_id: str, criterion_id: str | None, call: LLMCall, created: datetime
) -> dict[str, Any]:
    return {
        "evaluation_id": evaluation_id,
        "criterion_id": criterion_id,
        "provider": call.provider,
        "model": call.model,
        "prompt_hash": call.prompt_hash,
        "response_hash": call.response_hash,
        "input_tokens": call.input_tokens,
        "output_tokens": call.output_tokens,
        "latency_ms": call.latency_ms,
        "attempt": call.attempt,
        "outcome": call.outcome,
        "error": call.error,
        "cost": call.cost,
        "created_at": parse_time(call.created_at) if call.created_at else created,
        "judge": call.judge,
        "verdict": call.verdict,
    }


class EvaluationStore:
    """Evaluations in a `Database`."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def save(
        self, evaluation: Evaluation, *, artifact_id: str | None = None, revision: int | None = None
    ) -> None:
        """Store one evaluation whole (criterion results and LLM calls included), or nothing."""
        await self.save_many([StoredEvaluation(evaluation, artifact_id, revision)])

    async def save_many(self, items: Iterable[StoredEvaluation | Evaluation]) -> int:
        """Store a batch of evaluations in one transaction; returns how many were stored."""
        evaluations: list[dict[str, Any]] = []
        criteria: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        for item in items:
            stored = item if isinstance(item, StoredEvaluation) else StoredEvaluation(item)
            row, criterion_rows, call_rows = _rows(stored)
            evaluations.append(row)
            criteria.extend(criterion_rows)
            calls.extend(call_rows)
        if not evaluations:
            return 0
        ids = [row["id"] for row in evaluations]
        repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
        if repeated:
            raise StoreError(
                f"the batch holds evaluation id(s) {', '.join(repeated)} more than once; "
                "nothing was stored"
            )
        try:
            async with self.database.transaction() as connection:
                if copies(connection):
                    await copy_rows(connection, _evaluations, evaluations)
                    await copy_rows(connection, _criteria, criteria)
                    await copy_rows(connection, _calls, calls)
                else:
                    await connection.execute(_INSERT_EVALUATION, evaluations)
                    if criteria:
                        await connection.execute(_INSERT_CRITERIA, criteria)
                    if calls:
                        await connection.execute(_INSERT_CALLS, calls)
        except IntegrityError as error:
            taken = await self._stored_ids(ids)
            if taken:
                raise StoreError(
                    f"evaluation id(s) {', '.join(taken)} already stored in "
                    f"{self.database.display_url}; an evaluation is stored once, under its own "
                    "id; nothing from this batch was stored"
                ) from None
            raise StoreError(
                f"the batch breaks a constraint of {self.database.display_url} (e.g. a "
                f"criterion id twice in one evaluation): {error.orig}; nothing was stored"
            ) from None
        return len(evaluations)

    async def _stored_ids(self, ids: Sequence[str]) -> list[str]:
        async with self.database.read() as connection:
            rows = await connection.execute(
                sa.select(_evaluations.c.id).where(_evaluations.c.id.in_(list(ids)))
            )
            return sorted(row.id for row in rows)

    async def save_for_review(
        self,
        evaluation: Evaluation,
        *,
        artifact_id: str,
        revision: int,
        connection: Any = None,
    ) -> Evaluation:
        """Store a review's evaluation of one artifact revision under one rubric version:
        at most one complete evaluation each (when another reviewer stored one first, that
        one is returned); incomplete attempts are all kept, for the record.

        `connection` (an `AsyncConnection` in a transaction) writes it in the caller's
        transaction, e.g. with the review's decision; by default it gets its own."""
        if connection is None:
            async with self.database.transaction() as own:
                return await self.save_for_review(
                    evaluation, artifact_id=artifact_id, revision=revision, connection=own
                )
        row, criteria, calls = _rows(StoredEvaluation(evaluation, artifact_id, revision))
        inserted = await connection.execute(
            insert_ignoring_duplicates(connection, _evaluations), row
        )
        if inserted.rowcount == 1:
            if criteria:
                await connection.execute(_INSERT_CRITERIA, criteria)
            if calls:
                await connection.execute(_INSERT_CALLS, calls)
            # the artifact's latest score and |margin|, for the queue's orders
            margin = row.get("margin")
            await connection.execute(
                _SCORED,
                {
                    "match_id": artifact_id,
                    "match_revision": revision,
                    "review_score": row["score"],
                    "review_margin": NO_SCORE if margin is None else abs(margin),
                },
            )
            return evaluation
        existing = (
            await connection.execute(
                sa.select(_evaluations.c.document).where(
                    _evaluations.c.artifact_id == artifact_id,
                    _evaluations.c.revision == revision,
                    _evaluations.c.rubric_id == evaluation.rubric_id,
                    _evaluations.c.rubric_version == evaluation.rubric_version,
                    _evaluations.c.verdict != INCOMPLETE,
                )
            )
        ).first()
        if existing is None:
            raise NotFoundError(f"evaluation {evaluation.id!r} was neither stored nor found")
        return Evaluation.model_validate_json(existing.document)

    async def get(self, evaluation_id: str) -> Evaluation:
        """One evaluation by id, exactly as it was stored."""
        async with self.database.read() as connection:
            row = (
                await connection.execute(
                    sa.select(_evaluations.c.document).where(_evaluations.c.id == evaluation_id)
                )
            ).first()
        if row is None:
            raise NotFoundError(f"no evaluation {evaluation_id!r} is stored")
        return Evaluation.model_validate_json(row.document)

    async def query(
        self,
        filter: EvaluationFilter | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        **fields: Any,
    ) -> list[Evaluation]:
        """Evaluations matching `filter` (or keyword fields of `EvaluationFilter`), newest
        first, `limit` at a time from `offset`."""
        chosen = filter or EvaluationFilter(**fields)
        query = (
            sa.select(_evaluations.c.document)
            .where(*chosen.where())
            .order_by(_evaluations.c.created_at.desc(), _evaluations.c.id.desc())
            .limit(limit)
            .offset(offset)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return [Evaluation.model_validate_json(row.document) for row in rows]

    async def count(self, filter: EvaluationFilter | None = None, **fields: Any) -> int:
        chosen = filter or EvaluationFilter(**fields)
        query = sa.select(sa.func.count()).select_from(_evaluations).where(*chosen.where())
        async with self.database.read() as connection:
            return int((await connection.execute(query)).scalar_one())

    async def ids(self, filter: EvaluationFilter | None = None, **fields: Any) -> Sequence[str]:
        """The ids of matching evaluations, newest first (cheap: no documents are read)."""
        chosen = filter or EvaluationFilter(**fields)
        query = (
            sa.select(_evaluations.c.id)
            .where(*chosen.where())
            .order_by(_evaluations.c.created_at.desc(), _evaluations.c.id.desc())
        )
        async with self.database.read() as connection:
            return [row.id for row in await connection.execute(query)]

    async def criterion_pass_rates(
        self,
        rubric_id: str,
        *,
        rubric_version: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        run_id: str | None = None,
        artifact_type: str | None = None,
        bucket: Bucket | None = None,
        artifact_types: Sequence[str] | None = None,
    ) -> list[CriterionPassRate]:
        """Per-criterion pass rates of rubric `rubric_id`, per rubric version (and per
        `bucket`, "week" or "day", by the evaluations' UTC creation time), over every
        stored evaluation matching the filters (`since` inclusive, `until` exclusive;
        `artifact_type` keeps reviews of that type's artifacts; `artifact_types`, the
        types a reader may see, leaves out reviews of other types' artifacts and keeps
        evaluations of no artifact, such as runs'). Computed in SQL from the
        criterion rows. Ordered by bucket, then the most failed first (failures, then the
        lowest pass rate), then version and criterion id."""
        e, c = _evaluations.c, _criteria.c
        chosen = EvaluationFilter(
            rubric_id=rubric_id,
            rubric_version=rubric_version,
            run_id=run_id,
            since=since,
            until=until,
        )
        source = _evaluations.join(_criteria, c.evaluation_id == e.id)
        where = chosen.where()
        if artifact_type is not None:
            source = source.join(_artifacts, _artifacts.c.id == e.artifact_id)
            where.append(_artifacts.c.type == artifact_type)
        if artifact_types is not None:
            seen = sa.select(_artifacts.c.id).where(_artifacts.c.type.in_(list(artifact_types)))
            where.append(sa.or_(e.artifact_id.is_(None), e.artifact_id.in_(seen)))
        groups: list[Any] = [e.rubric_version, c.criterion_id]
        if bucket is not None:
            groups.append(_bucket(self.database.dialect, bucket, e.created_at).label("bucket"))
        scored = _scored(_criteria)
        query = (
            sa.select(
                *groups,
                _count(scored).label("scored"),
                _count(sa.and_(scored, c.passed.is_(True))).label("passed"),
                _count(sa.not_(scored)).label("unscored"),
            )
            .select_from(source)
            .where(*where)
            .group_by(*groups)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        rates = [
            CriterionPassRate(
                rubric_id=rubric_id,
                rubric_version=row.rubric_version,
                criterion_id=row.criterion_id,
                scored=int(row.scored),
                passed=int(row.passed),
                unscored=int(row.unscored),
                bucket=_day(row.bucket) if bucket is not None else None,
            )
            for row in rows
        ]
        return sorted(
            rates,
            key=lambda r: (
                r.bucket or "",
                -r.failed,
                1.0 if r.pass_rate is None else r.pass_rate,
                r.rubric_version,
                r.criterion_id,
            ),
        )

    async def spend(
        self,
        by: str = "run",
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Sequence[str] | None = None,
    ) -> list[Spend]:
        """Judge calls, cache hits, tokens and cost per `run`, artifact `type` or `day`
        (UTC, of the evaluation) of the evaluations created in [`since`, `until`),
        computed in SQL from the call ledger, in key order (no key last). `types`: only
        the reviews of artifacts of those types, and the evaluations of no artifact (a
        token restricted to some types sees no other type's spend in any total)."""
        e, k, a = _evaluations.c, _calls.c, _artifacts.c
        source = _calls.join(_evaluations, e.id == k.evaluation_id)
        if by == "type" or types is not None:
            source = source.outerjoin(_artifacts, a.id == e.artifact_id)
        if by == "run":
            key: Any = e.run_id
        elif by == "type":
            key = a.type
        elif by == "day":
            key = _bucket(self.database.dialect, "day", e.created_at)  # UTC on both
        else:
            raise ValueError(f"spend by {by!r}: use run, type or day")
        where = list(EvaluationFilter(since=since, until=until).where())
        if types is not None:
            where.append(sa.or_(e.artifact_id.is_(None), a.type.in_(list(types))))
        query = (
            sa.select(
                key.label("key"),
                *_usage_columns(),
            )
            .select_from(source)
            .where(*where)
            .group_by(key)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        spend = [
            Spend(
                key=None if row.key is None else str(row.key),
                calls=int(row.calls),
                cache_hits=int(row.cache_hits),
                input_tokens=int(row.input_tokens),
                output_tokens=int(row.output_tokens),
                cost=None if row.cost is None else float(row.cost),
            )
            for row in rows
        ]
        return sorted(spend, key=lambda s: (s.key is None, s.key or ""))

    async def judge_usage(
        self,
        *,
        run_id: str | None = None,
        rubric_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        by_model: bool = True,
    ) -> list[JudgeUsage]:
        """Judge calls, cache hits, tokens and cost per run (and per provider and model
        unless `by_model=False`) of the evaluations matching the filters (created in
        [`since`, `until`)), computed in SQL from the call ledger. Runs in id order, the
        evaluations of no run last."""
        e, k = _evaluations.c, _calls.c
        groups: list[Any] = [e.run_id]
        if by_model:
            groups += [k.provider, k.model]
        query = (
            sa.select(
                *groups,
                *_usage_columns(),
            )
            .select_from(_calls.join(_evaluations, e.id == k.evaluation_id))
            .where(
                *EvaluationFilter(
                    rubric_id=rubric_id, run_id=run_id, since=since, until=until
                ).where()
            )
            .group_by(*groups)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        usage = [
            JudgeUsage(
                run_id=row.run_id,
                provider=row.provider if by_model else None,
                model=row.model if by_model else None,
                calls=int(row.calls),
                cache_hits=int(row.cache_hits),
                input_tokens=int(row.input_tokens),
                output_tokens=int(row.output_tokens),
                cost=None if row.cost is None else float(row.cost),
            )
            for row in rows
        ]
        return sorted(
            usage,
            key=lambda u: (u.run_id is None, u.run_id or "", u.provider or "", u.model or ""),
        )
