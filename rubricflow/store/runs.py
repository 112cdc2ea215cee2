"""Batch runs in the store: started, resumed, finished; their evaluations by run id."""

from __future__ import annotations

import builtins
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from rubricflow.errors import NotFoundError, StoreError
from rubricflow.results import Evaluation
from rubricflow.runs import (
    HISTOGRAM_BINS,
    CriterionSummary,
    RunData,
    RunInfo,
    RunSummary,
    latest_per_target,
    mean,
    median,
)
from rubricflow.store._sql import INCOMPLETE, parse_time, to_utc, utcnow
from rubricflow.store.database import Database
from rubricflow.store.tables import CriterionResultRow, EvaluationRow, LLMCallRow, RunRow

__all__ = [
    "HEARTBEAT_SECONDS",
    "STALE_AFTER",
    "RunOverview",
    "RunStore",
    "owner_alive",
    "run_owner",
]

_runs = RunRow.__table__  # type: ignore[attr-defined]
_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]
_criteria = CriterionResultRow.__table__  # type: ignore[attr-defined]
_calls = LLMCallRow.__table__  # type: ignore[attr-defined]
# a criterion's place in a run: (first evaluation holding it, its position there) as one
# number; positions stay far below this
_POSITIONS = 1 << 20
#: how often a running batch run says it is alive (`RunStore.beat`), and how long after
#: its last word a run whose owner cannot be asked (another host) counts as interrupted
HEARTBEAT_SECONDS = 5.0
STALE_AFTER = 60.0
# the heartbeat, built once so that SQLite runs it on its direct path
_BEAT = (
    _runs.update()
    .where(_runs.c.id == sa.bindparam("run"), _runs.c.status == "running")
    .values(heartbeat_at=sa.bindparam("beat"))
)


def run_owner() -> str:
    """This process, as a run's owner: `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str) -> bool | None:
    """Whether the process `owner` (`host:pid`) still runs: None when it cannot be told
    (another host, or an owner in another form); a zombie (killed, not yet reaped by its
    parent) is gone."""
    host, _, pid_text = owner.rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    except OSError:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # the state follows the command name in parentheses: Z is a zombie
            return stat.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _status(status: str, owner: str | None, heartbeat: datetime | None) -> str:
    """A stored status as it stands: a `running` run whose process died (its owner gone
    on this host, or its heartbeat stopped, or a run recorded before runs had owners) is
    `interrupted`, and `--resume` continues it."""
    if status != "running":
        return status
    if owner is None or heartbeat is None:
        return "interrupted"
    if owner == run_owner():
        return "running"
    alive = owner_alive(owner)
    if alive is False:
        return "interrupted"
    if alive is None and utcnow() - to_utc(heartbeat) > timedelta(seconds=STALE_AFTER):
        return "interrupted"
    return "running"


@dataclass(frozen=True)
class RunOverview:
    """A run and its figures, as `rubricflow runs list --json` prints them."""

    info: RunInfo
    summary: RunSummary

    def to_dict(self) -> dict[str, Any]:
        return {**self.info.to_dict(), "summary": self.summary.to_dict()}


def _chosen(run_ids: Sequence[str]) -> Any:
    """The evaluations a run's figures count, as `RunStore.load` picks them: the latest
    per target (by target id, else target hash), each with `seq`, the place of its
    target's first evaluation in the run (the order `latest_per_target` keeps)."""
    e = _evaluations.c
    key = sa.case(
        (sa.or_(e.target_id.is_(None), e.target_id == ""), e.target_hash), else_=e.target_id
    )
    numbered = (
        sa.select(
            e.id,
            e.run_id,
            key.label("target"),
            sa.func.row_number()
            .over(partition_by=e.run_id, order_by=(e.created_at, e.id))
            .label("n"),
            sa.func.row_number()
            .over(partition_by=(e.run_id, key), order_by=(e.created_at.desc(), e.id.desc()))
            .label("newest"),
        )
        .where(e.run_id.in_(list(run_ids)))
        .subquery("numbered")
    )
    n = numbered.c
    placed = sa.select(
        n.id,
        n.run_id,
        n.newest,
        sa.func.min(n.n).over(partition_by=(n.run_id, n.target)).label("seq"),
    ).subquery("placed")
    return (
        sa.select(placed.c.id, placed.c.run_id, placed.c.seq)
        .where(placed.c.newest == 1)
        .subquery("chosen")
    )


def _info(row: sa.Row[tuple[object, ...]]) -> RunInfo:
    mapping = row._mapping
    finished = mapping["finished_at"]
    return RunInfo(
        id=mapping["id"],
        rubric_id=mapping["rubric_id"],
        rubric_version=mapping["rubric_version"],
        source=mapping["source"],
        status=_status(mapping["status"], mapping["owner"], mapping["heartbeat_at"]),
        started_at=to_utc(mapping["started_at"]).isoformat(),
        finished_at=None if finished is None else to_utc(finished).isoformat(),
        options=json.loads(mapping["options"]),
    )


def _count(condition: sa.ColumnElement[bool]) -> Any:
    return sa.func.coalesce(sa.func.sum(sa.case((condition, 1), else_=0)), 0)


class _Figures:
    """One run's figures as the queries of `RunStore.overviews` deliver them."""

    def __init__(self) -> None:
        self.totals: Any = None
        self.cache_hits = 0
        self.criteria: dict[str, Any] = {}  # in the run's criterion order
        self.criterion_scores: dict[str, builtins.list[float]] = {}
        self.scores: builtins.list[float] = []
        self.histogram = [0] * HISTOGRAM_BINS
        self.duration = 0.0
        self.cost: float | None = None

    def add(self, verdict: str, score: float, duration_ms: float, cost: float | None) -> None:
        """One evaluation, in the run's order: the same arithmetic as `summarize`."""
        self.duration += duration_ms
        if verdict != "incomplete":
            self.scores.append(score)
            self.histogram[min(int(score * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def summary(self) -> RunSummary:
        totals = self.totals

        def total(name: str) -> int:
            return 0 if totals is None else int(getattr(totals, name))

        return RunSummary(
            total=total("total"),
            passed=total("passed"),
            failed=total("failed"),
            incomplete=total("incomplete"),
            mean_score=mean(self.scores),
            median_score=median(self.scores),
            histogram=self.histogram,
            criteria=[
                CriterionSummary(
                    criterion_id=name,
                    scored=int(row.scored),
                    passed=int(row.passed),
                    unscored=int(row.unscored),
                    mean_score=mean(self.criterion_scores.get(name, [])),
                )
                for name, row in self.criteria.items()
            ],
            llm_calls=total("llm_calls"),
            cache_hits=self.cache_hits,
            input_tokens=total("input_tokens"),
            output_tokens=total("output_tokens"),
            cost=self.cost,
            duration_ms=self.duration,
        )


class RunStore:
    """Runs in a `Database`."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def start(self, info: RunInfo, *, owner: str | None = None) -> RunInfo:
        """Record a new run as `running` in process `owner` (default this one); returns
        it as stored."""
        started = parse_time(info.started_at) if info.started_at else utcnow()
        async with self.database.transaction() as connection:
            existing = (
                await connection.execute(sa.select(_runs.c.id).where(_runs.c.id == info.id))
            ).first()
            if existing is not None:
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
                    owner=owner or run_owner(),
                    heartbeat_at=utcnow(),
                )
            )
        return await self.get(info.id)

    async def resume(self, run_id: str, *, owner: str | None = None) -> RunInfo:
        """Mark a stored run `running` again in process `owner` (default this one), for
        `--resume`. A run still running in another live process is refused: two sessions
        would judge the same targets."""
        owner = owner or run_owner()
        async with self.database.transaction() as connection:
            row = (
                await connection.execute(
                    sa.select(_runs.c.status, _runs.c.owner, _runs.c.heartbeat_at).where(
                        _runs.c.id == run_id
                    )
                )
            ).first()
            if row is None:
                raise NotFoundError(
                    f"no run {run_id!r} in {self.database.display_url}; list runs with "
                    "`rubricflow runs list`"
                )
            if (
                row.owner not in (None, owner)
                and _status(row.status, row.owner, row.heartbeat_at) == "running"
            ):
                raise StoreError(
                    f"run {run_id!r} is still running (process {row.owner}, alive within the "
                    f"last {STALE_AFTER:.0f} s); stop it first, or wait until it ends"
                )
            await connection.execute(
                _runs.update()
                .where(_runs.c.id == run_id)
                .values(status="running", finished_at=None, owner=owner, heartbeat_at=utcnow())
            )
        return await self.get(run_id)

    async def beat(self, run_id: str) -> None:
        """Say the run is still running (its process calls this every HEARTBEAT_SECONDS)."""
        async with self.database.transaction() as connection:
            await connection.execute(_BEAT, {"run": run_id, "beat": utcnow()})

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

    async def overviews(self, *, limit: int = 50) -> builtins.list[RunOverview]:
        """The newest runs first, each with the figures `summarize` gives for the run's
        evaluations (the latest per target), without reading one evaluation document
        (`overviews_of`)."""
        return await self.overviews_of(await self.list(limit=limit))

    async def overviews_of(self, infos: Sequence[RunInfo]) -> builtins.list[RunOverview]:
        """`infos`' runs, in their order, each with the figures `summarize` gives for the
        run's evaluations (the latest per target), without reading one evaluation document.

        Counts (verdicts, per-criterion outcomes, calls, cache hits, tokens) are SQL
        aggregates over the evaluation, criterion and call rows. The float figures are
        added up in Python from one narrow column each (scores, durations, costs), since
        SQL would sum them in an order and precision of its own and the figures must be
        `summarize`'s to the last bit."""
        if not infos:
            return []
        chosen = _chosen([info.id for info in infos])
        ch, e, c, k = chosen.c, _evaluations.c, _criteria.c, _calls.c
        with_rows = chosen.join(_evaluations, e.id == ch.id)
        with_criteria = chosen.join(_criteria, c.evaluation_id == ch.id)
        scored = sa.and_(c.status == "scored", c.passed.is_not(None))
        totals = (
            sa.select(
                ch.run_id,
                sa.func.count().label("total"),
                _count(e.verdict == "pass").label("passed"),
                _count(e.verdict == "fail").label("failed"),
                _count(e.verdict == INCOMPLETE).label("incomplete"),
                sa.func.coalesce(sa.func.sum(e.llm_calls), 0).label("llm_calls"),
                sa.func.coalesce(sa.func.sum(e.input_tokens), 0).label("input_tokens"),
                sa.func.coalesce(sa.func.sum(e.output_tokens), 0).label("output_tokens"),
            )
            .select_from(with_rows)
            .group_by(ch.run_id)
        )
        cache_hits = (
            sa.select(ch.run_id, sa.func.count().label("hits"))
            .select_from(chosen.join(_calls, k.evaluation_id == ch.id))
            .where(k.outcome == "cached")
            .group_by(ch.run_id)
        )
        criteria = (
            sa.select(
                ch.run_id,
                c.criterion_id,
                _count(scored).label("scored"),
                _count(sa.and_(scored, c.passed.is_(True))).label("passed"),
                _count(sa.not_(scored)).label("unscored"),
                sa.func.min(ch.seq * _POSITIONS + c.position).label("place"),
            )
            .select_from(with_criteria)
            .group_by(ch.run_id, c.criterion_id)
        )
        values = (
            sa.select(ch.run_id, e.verdict, e.score, e.duration_ms, e.cost)
            .select_from(with_rows)
            .order_by(ch.run_id, ch.seq)
        )
        criterion_scores = (
            sa.select(ch.run_id, c.criterion_id, c.score)
            .select_from(with_criteria)
            .where(scored, c.score.is_not(None))
        )
        async with self.database.read() as connection:
            total_rows = (await connection.execute(totals)).all()
            hit_rows = (await connection.execute(cache_hits)).all()
            criterion_rows = (await connection.execute(criteria)).all()
            value_rows = (await connection.execute(values)).all()
            score_rows = (await connection.execute(criterion_scores)).all()
        figures: dict[str, _Figures] = {info.id: _Figures() for info in infos}
        for row in total_rows:
            figures[row.run_id].totals = row
        for row in hit_rows:
            figures[row.run_id].cache_hits = int(row.hits)
        for row in sorted(criterion_rows, key=lambda r: int(r.place)):
            figures[row.run_id].criteria[row.criterion_id] = row
        for row in value_rows:
            figures[row.run_id].add(row.verdict, row.score, row.duration_ms, row.cost)
        for row in score_rows:
            figures[row.run_id].criterion_scores.setdefault(row.criterion_id, []).append(row.score)
        return [RunOverview(info, figures[info.id].summary()) for info in infos]

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
