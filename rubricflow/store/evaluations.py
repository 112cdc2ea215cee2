"""Stored evaluations: each written whole (evaluation, criterion results, LLM calls) in one
transaction, and queried by id, target, artifact, rubric, time range and verdict."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from rubricflow.errors import NotFoundError, StoreError
from rubricflow.results import Evaluation, LLMCall
from rubricflow.store._sql import INCOMPLETE, insert_ignoring_duplicates, parse_time, to_utc, utcnow
from rubricflow.store.copy import copies, copy_rows
from rubricflow.store.database import Database
from rubricflow.store.tables import CriterionResultRow, EvaluationRow, LLMCallRow

__all__ = ["EvaluationFilter", "EvaluationStore", "StoredEvaluation"]

_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]
_criteria = CriterionResultRow.__table__  # type: ignore[attr-defined]
_calls = LLMCallRow.__table__  # type: ignore[attr-defined]
# built once: the same statement object is what lets a SQLite store run it directly
# (`rubricflow.store.direct`)
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
        "feedback": evaluation.feedback,
        "created_at": created,
        "duration_ms": evaluation.duration_ms,
        "llm_calls": usage["llm_calls"],
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "cost": usage["cost"],
        "document": json.dumps(evaluation.to_dict(), ensure_ascii=False),
        "run_id": item.run_id,
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
                "notes": result.notes,
                "evidence": json.dumps(list(result.evidence), ensure_ascii=False),
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
