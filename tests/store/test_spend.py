"""Judge spend per run, artifact type and day (issue 31, item 6), computed in SQL from the
call ledger and equal to the evaluations' own usage; `rubricflow llm usage` prints it. On a
real SQLite file and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.results import CriterionResult, Evaluation, LLMCall
from rubricflow.runs import RunInfo
from rubricflow.store import Store, StoredEvaluation

from .conftest import T0, make_call, make_evaluation, run_blocking


def _evaluation(created_at: object, *calls: LLMCall) -> Evaluation:
    base = make_evaluation(created_at=created_at, criteria=0)
    result = CriterionResult(
        criterion_id="tone", status="scored", score=1.0, passed=True, llm_calls=calls
    )
    return base.model_copy(update={"criteria": (result,)})


async def _fill(store: Store) -> None:
    await store.runs.start(RunInfo(id="run-a", rubric_id="essay", rubric_version="1.0.0"))
    async with store.database.transaction() as connection:
        await connection.execute(
            sa.text(
                "INSERT INTO artifact_types (name, document, updated_at) VALUES ('blog', '{}', :t)"
            ),
            {"t": T0},
        )
        await connection.execute(
            sa.text(
                "INSERT INTO artifacts (id, type, status, revision, version, metadata_json, "
                "created_by, created_at, updated_at, awaiting_approval) "
                "VALUES ('post-1', 'blog', 'draft', 1, 1, '{}', 'me', :t, :t, false)"
            ),
            {"t": T0},
        )
    paid = make_call("tone", cost=0.25)
    hit = make_call("tone", outcome="cached", cost=None)
    next_day = T0 + timedelta(days=1)
    await store.evaluations.save_many(
        [
            StoredEvaluation(_evaluation(T0, paid, hit), run_id="run-a"),
            StoredEvaluation(_evaluation(next_day, paid), artifact_id="post-1", revision=1),
            StoredEvaluation(_evaluation(next_day, paid, paid)),
        ]
    )


async def test_spend_per_run_type_and_day(store: Store) -> None:
    await _fill(store)
    by_run = await store.evaluations.spend("run")
    assert [(s.key, s.calls, s.cache_hits, s.cost) for s in by_run] == [
        ("run-a", 1, 1, pytest.approx(0.25)),
        (None, 3, 0, pytest.approx(0.75)),
    ]
    by_type = await store.evaluations.spend("type")
    assert [(s.key, s.calls, s.cost) for s in by_type] == [
        ("blog", 1, pytest.approx(0.25)),
        (None, 3, pytest.approx(0.75)),
    ]
    by_day = await store.evaluations.spend("day")
    day = T0.date().isoformat()
    later = (T0 + timedelta(days=1)).date().isoformat()
    assert [(s.key, s.calls, s.cost) for s in by_day] == [
        (day, 1, pytest.approx(0.25)),
        (later, 3, pytest.approx(0.75)),
    ]
    only_later = await store.evaluations.spend("run", since=T0 + timedelta(hours=12))
    assert sum(s.calls for s in only_later) == 3
    tokens = sum(s.input_tokens for s in by_day)
    assert tokens == 4 * (paid_tokens := make_call("tone").input_tokens or 0) and paid_tokens


def test_llm_usage_prints_the_spend(db_url: str) -> None:
    async def fill() -> None:
        async with await Store.open(db_url) as store:
            await _fill(store)

    run_blocking(fill())
    runner = CliRunner()
    shown = runner.invoke(app, ["llm", "usage", "--db", db_url, "--by", "type"])
    assert shown.exit_code == 0, shown.output
    assert "blog" in shown.stdout and "(none)" in shown.stdout
    as_json = runner.invoke(app, ["llm", "usage", "--db", db_url, "--by", "day", "--json"])
    assert [row["calls"] for row in json.loads(as_json.stdout)] == [1, 3]
    wrong = runner.invoke(app, ["llm", "usage", "--db", db_url, "--by", "week"])
    assert wrong.exit_code == 2 and "use run, type or day" in wrong.output


async def test_a_daily_budget_is_reserved_atomically(store: Store) -> None:
    """Forty reservations race for a budget that holds ten: exactly ten succeed, on SQLite
    and on PostgreSQL (separate connections), and settling corrects the total."""
    from rubricflow.store.spend import DailySpend

    spend = DailySpend(store.database)
    won = await asyncio.gather(*(spend.reserve("blog", "2026-11-28", 1.0, 10.0) for _ in range(40)))
    assert sum(won) == 10
    assert await spend.spent("blog", "2026-11-28") == 10.0
    await spend.settle("blog", "2026-11-28", -2.5)  # two calls cost less than reserved
    assert await spend.spent("blog", "2026-11-28") == 7.5
    assert await spend.reserve("blog", "2026-11-28", 2.5, 10.0)
    assert not await spend.reserve("blog", "2026-11-28", 0.01, 10.0)
    assert await spend.reserve("blog", "2026-11-29", 10.0, 10.0)  # a new day
    assert await spend.reserve("news", "2026-11-28", 1.0, 10.0)  # another type


async def test_a_call_settles_on_the_day_it_was_reserved(store: Store) -> None:
    """A batched call reserved late on one UTC day and ended on the next corrects the day
    it was reserved from; the next day is not charged a negative amount."""
    from datetime import datetime, timezone

    from rubricflow.llm.base import Price
    from rubricflow.store.spend import DailyBudget, DailySpend

    clock = [datetime(2026, 11, 28, 23, 59, tzinfo=timezone.utc)]
    spend = DailySpend(store.database)
    budget = DailyBudget(spend, "blog", 10.0, now=lambda: clock[0])
    reserved = await budget.reserve(Price(1000.0, 1000.0), 1, 100)
    assert reserved is not None and reserved > 0
    assert await spend.spent("blog", "2026-11-28") == pytest.approx(reserved)
    clock[0] = datetime(2026, 11, 29, 6, 0, tzinfo=timezone.utc)  # the batch ends
    await budget.settle(reserved, 0.25, 10)
    assert await spend.spent("blog", "2026-11-28") == pytest.approx(0.25)
    assert await spend.spent("blog", "2026-11-29") == 0.0
