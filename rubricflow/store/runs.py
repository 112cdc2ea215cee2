"""Batch runs in the store: started, resumed, finished; their evaluations by run id."""

from __future__ import annotations

import builtins
import json

import sqlalchemy as sa

from rubricflow.errors import NotFoundError
from rubricflow.results import Evaluation
from rubricflow.runs import RunData, RunInfo, latest_per_target
from rubricflow.store._sql import parse_time, to_utc, utcnow
from rubricflow.store.database import Database
from rubricflow.store.tables import EvaluationRow, RunRow

__all__ = ["RunStore"]

_runs = RunRow.__table__  # type: ignore[attr-defined]
_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]


def _info(row: sa.Row[tuple[object, ...]]) -> RunInfo:
    mapping = row._mapping
    finished = mapping["finished_at"]
    return RunInfo(
        id=mapping["id"],
        rubric_id=mapping["rubric_id"],
        rubric_version=mapping["rubric_version"],
        source=mapping["source"],
        status=mapping["status"],
        started_at=to_utc(mapping["started_at"]).isoformat(),
        finished_at=None if finished is None else to_utc(finished).isoformat(),
        options=json.loads(mapping["options"]),
    )


class RunStore:
    """Runs in a `Database`."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def start(self, info: RunInfo) -> RunInfo:
        """Record a new run as `running`; returns it as stored."""
        started = parse_time(info.started_at) if info.started_at else utcnow()
        async with self.database.transaction() as connection:
            existing = (
                await connection.execute(sa.select(_runs.c.id).where(_runs.c.id == info.id))
            ).first()
            if existing is not None:
                from rubricflow.errors import StoreError

                raise StoreError(
                    f"run {info.id!r} already exists in {self.database.display_url}; "
                    "continue it with --resume, or give a new run id"
                )
            await connection.execute(
                _runs.insert().values(
                    id=info.id,
                    rubric_id=info.rubric_id,
                    rubric_version=info.rubric_version,
                    source=info.source,
                    status="running",
                    started_at=started,
                    finished_at=None,
                    options=json.dumps(info.options, ensure_ascii=False, sort_keys=True),
                )
            )
        return await self.get(info.id)

    async def resume(self, run_id: str) -> RunInfo:
        """Mark a stored run `running` again, for `--resume`."""
        async with self.database.transaction() as connection:
            updated = await connection.execute(
                _runs.update()
                .where(_runs.c.id == run_id)
                .values(status="running", finished_at=None)
            )
        if updated.rowcount != 1:
            raise NotFoundError(
                f"no run {run_id!r} in {self.database.display_url}; list runs with "
                "`rubricflow runs list`"
            )
        return await self.get(run_id)

    async def finish(self, run_id: str, status: str = "finished") -> None:
        """Record how the run ended: `finished` or `interrupted`."""
        async with self.database.transaction() as connection:
            await connection.execute(
                _runs.update()
                .where(_runs.c.id == run_id)
                .values(status=status, finished_at=utcnow())
            )

    async def get(self, run_id: str) -> RunInfo:
        async with self.database.read() as connection:
            row = (await connection.execute(sa.select(_runs).where(_runs.c.id == run_id))).first()
        if row is None:
            raise NotFoundError(
                f"no run {run_id!r} in {self.database.display_url}; list runs with "
                "`rubricflow runs list`"
            )
        return _info(row)

    async def list(self, *, limit: int = 50) -> builtins.list[RunInfo]:
        """The newest runs first."""
        query = sa.select(_runs).order_by(_runs.c.started_at.desc(), _runs.c.id.desc())
        async with self.database.read() as connection:
            rows = (await connection.execute(query.limit(limit))).all()
        return [_info(row) for row in rows]

    async def latest(self) -> RunInfo | None:
        runs = await self.list(limit=1)
        return runs[0] if runs else None

    async def evaluations(self, run_id: str) -> builtins.list[Evaluation]:
        """Every evaluation stored for the run, oldest first (a retried target twice)."""
        query = (
            sa.select(_evaluations.c.document)
            .where(_evaluations.c.run_id == run_id)
            .order_by(_evaluations.c.created_at, _evaluations.c.id)
        )
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return [Evaluation.model_validate_json(row.document) for row in rows]

    async def load(self, run_id: str) -> RunData:
        """The run and the latest evaluation of each of its targets."""
        info = await self.get(run_id)
        return RunData(info, latest_per_target(await self.evaluations(run_id)))
