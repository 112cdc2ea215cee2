"""Reading the stored criterion and call rows back: per-criterion pass rates (per rubric
version, per ISO week or day), judge usage per run and model, and the run overviews
`rubricflow runs list` prints, computed in SQL and equal to what the evaluation documents
give; the indexes behind them, after a migration and in SQLite's query plans. On a real
SQLite file and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rubricflow.store.database as database_module
from rubricflow.results import CriterionResult, Evaluation, LLMCall
from rubricflow.runs import RunInfo, summarize
from rubricflow.store import CriterionPassRate, JudgeUsage, Store, StoredEvaluation

from .conftest import T0, fetch, make_call, make_evaluation, migrate_to

# --------------------------------------------------------------------------- builders


def _evaluation(
    *,
    rubric_version: str = "1.0.0",
    created_at: datetime | str = T0,
    outcomes: dict[str, bool | None],
    calls: tuple[LLMCall, ...] = (),
    run: str | None = None,
) -> Evaluation:
    """An evaluation whose criteria passed (True), failed (False) or were not scored
    (None: status `error`)."""
    results = tuple(
        CriterionResult(
            criterion_id=cid,
            status="scored" if passed is not None else "error",
            score=None if passed is None else float(passed),
            passed=passed,
            llm_calls=calls if index == 0 else (),
        )
        for index, (cid, passed) in enumerate(outcomes.items())
    )
    base = make_evaluation(rubric_version=rubric_version, created_at=created_at, criteria=0)
    return base.model_copy(update={"criteria": results, "metadata": {"run": run}})


def _expected_rates(
    evaluations: list[Evaluation], bucket_of: Any = lambda e: None
) -> dict[tuple[Any, str, str], tuple[int, int, int]]:
    """(bucket, version, criterion) -> (scored, passed, unscored), from the documents."""
    counts: dict[tuple[Any, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for evaluation in evaluations:
        for result in evaluation.criteria:
            entry = counts[(bucket_of(evaluation), evaluation.rubric_version, result.criterion_id)]
            if result.scored and result.passed is not None:
                entry[0] += 1
                entry[1] += bool(result.passed)
            else:
                entry[2] += 1
    return {key: (s, p, u) for key, (s, p, u) in counts.items()}


def _got(rates: list[CriterionPassRate]) -> dict[tuple[Any, str, str], tuple[int, int, int]]:
    return {
        (r.bucket, r.rubric_version, r.criterion_id): (r.scored, r.passed, r.unscored)
        for r in rates
    }


# ----------------------------------------------------------------- criterion pass rates


async def test_pass_rates_per_version_most_failing_first(store: Store) -> None:
    evaluations = [
        _evaluation(outcomes={"tone": True, "facts": False, "length": True}),
        _evaluation(outcomes={"tone": True, "facts": False, "length": None}),
        _evaluation(outcomes={"tone": False, "facts": True, "length": True}),
        _evaluation(rubric_version="2.0.0", outcomes={"tone": False, "facts": True}),
        _evaluation(rubric_version="2.0.0", outcomes={"tone": False, "facts": None}),
    ]
    other = make_evaluation(rubric_id="other", criteria=2)
    await store.evaluations.save_many([*evaluations, other])

    rates = await store.evaluations.criterion_pass_rates("essay")

    assert _got(rates) == _expected_rates(evaluations)
    # the criteria that fail most come first: tone@2 (2 failures), facts@1 (2 of 3)
    assert [(r.rubric_version, r.criterion_id, r.failed) for r in rates[:2]] == [
        ("2.0.0", "tone", 2),
        ("1.0.0", "facts", 2),
    ]
    facts = next(r for r in rates if (r.rubric_version, r.criterion_id) == ("1.0.0", "facts"))
    assert facts.to_dict() == {
        "rubric_id": "essay",
        "rubric_version": "1.0.0",
        "criterion_id": "facts",
        "bucket": None,
        "scored": 3,
        "passed": 1,
        "failed": 2,
        "unscored": 0,
        "pass_rate": pytest.approx(1 / 3),
    }
    unscored = next(r for r in rates if (r.rubric_version, r.criterion_id) == ("2.0.0", "facts"))
    assert (unscored.scored, unscored.unscored, unscored.pass_rate) == (1, 1, 1.0)
    only_v2 = await store.evaluations.criterion_pass_rates("essay", rubric_version="2.0.0")
    assert {r.rubric_version for r in only_v2} == {"2.0.0"} and len(only_v2) == 2
    assert await store.evaluations.criterion_pass_rates("nobody") == []


async def test_pass_rates_per_iso_week_and_day_in_utc(store: Store) -> None:
    # Sunday 1 March 2026 23:30 UTC closes ISO week 9 (from Monday 23 February); Monday
    # 00:30 opens week 10. 01:30+02:00 on Monday is still Sunday in UTC. 1 January 2026 is
    # a Thursday: its ISO week starts on Monday 29 December 2025.
    times: dict[str, datetime | str] = {
        "sunday": datetime(2026, 3, 1, 23, 30, tzinfo=timezone.utc),
        "monday": datetime(2026, 3, 2, 0, 30, tzinfo=timezone.utc),
        "monday+2": "2026-03-02T01:30:00+02:00",
        "new year": datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc),
    }
    evaluations = {
        name: _evaluation(created_at=when, outcomes={"tone": name != "monday"})
        for name, when in times.items()
    }
    await store.evaluations.save_many(evaluations.values())

    weekly = await store.evaluations.criterion_pass_rates("essay", bucket="week")
    assert [(r.bucket, r.scored, r.passed) for r in weekly] == [
        ("2025-12-29", 1, 1),
        ("2026-02-23", 2, 2),
        ("2026-03-02", 1, 0),
    ]
    daily = await store.evaluations.criterion_pass_rates("essay", bucket="day")
    assert [(r.bucket, r.scored) for r in daily] == [
        ("2026-01-01", 1),
        ("2026-03-01", 2),
        ("2026-03-02", 1),
    ]
    # the time window: since inclusive, until exclusive
    window = await store.evaluations.criterion_pass_rates(
        "essay",
        since=datetime(2026, 3, 1, 23, 30, tzinfo=timezone.utc),
        until=datetime(2026, 3, 2, 0, 30, tzinfo=timezone.utc),
        bucket="week",
    )
    assert [(r.bucket, r.scored) for r in window] == [("2026-02-23", 2)]


async def test_pass_rates_of_one_run_and_of_one_artifact_type(store: Store) -> None:
    in_run = [_evaluation(outcomes={"tone": False}), _evaluation(outcomes={"tone": True})]
    reviewed = _evaluation(outcomes={"tone": True})
    loose = _evaluation(outcomes={"tone": False})
    await store.runs.start(RunInfo(id="run-1", rubric_id="essay", rubric_version="1.0.0"))
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
    await store.evaluations.save_many(
        [
            *(StoredEvaluation(e, run_id="run-1") for e in in_run),
            StoredEvaluation(reviewed, artifact_id="post-1", revision=1),
            loose,
        ]
    )
    run = await store.evaluations.criterion_pass_rates("essay", run_id="run-1")
    assert [(r.scored, r.passed) for r in run] == [(2, 1)]
    blog = await store.evaluations.criterion_pass_rates("essay", artifact_type="blog")
    assert [(r.scored, r.passed) for r in blog] == [(1, 1)]
    everything = await store.evaluations.criterion_pass_rates("essay")
    assert [(r.scored, r.passed) for r in everything] == [(4, 2)]


# ------------------------------------------------------------------------- judge usage


def _call(model: str, outcome: str = "ok", **extra: Any) -> LLMCall:
    return make_call("tone", model=model, outcome=outcome, **extra)


async def test_judge_usage_per_run_and_model_matches_the_evaluations(store: Store) -> None:
    for name in ("run-a", "run-b"):
        await store.runs.start(RunInfo(id=name, rubric_id="essay", rubric_version="1.0.0"))
    plans: dict[str | None, list[tuple[LLMCall, ...]]] = {
        "run-a": [
            (_call("big"), _call("big", "cached", cost=None), _call("small", cost=0.25)),
            (_call("big", input_tokens=None, cost=None),),
        ],
        "run-b": [(_call("small", "error", output_tokens=None),)],
        None: [(_call("big", cost=0.5),)],
    }
    stored = {
        run_id: [_evaluation(outcomes={"tone": True}, calls=calls) for calls in call_sets]
        for run_id, call_sets in plans.items()
    }
    await store.evaluations.save_many(
        StoredEvaluation(e, run_id=run_id) for run_id, items in stored.items() for e in items
    )

    per_model = await store.evaluations.judge_usage()
    expected: dict[tuple[str | None, str, str], Counter[str]] = defaultdict(Counter)
    costs: dict[tuple[str | None, str, str], list[float]] = defaultdict(list)
    for run_id, items in stored.items():
        for evaluation in items:
            for call in evaluation.llm_calls:
                key = (run_id, call.provider, call.model)
                expected[key].update(
                    {
                        "calls": call.outcome != "cached",
                        "cache_hits": call.outcome == "cached",
                        "input_tokens": (call.input_tokens or 0) * (call.outcome != "cached"),
                        "output_tokens": (call.output_tokens or 0) * (call.outcome != "cached"),
                    }
                )
                if call.cost is not None:
                    costs[key].append(call.cost)
    assert [(u.run_id, u.provider, u.model) for u in per_model] == [
        ("run-a", "fake", "big"),
        ("run-a", "fake", "small"),
        ("run-b", "fake", "small"),
        (None, "fake", "big"),
    ]
    for usage in per_model:
        key = (usage.run_id, usage.provider or "", usage.model or "")
        want = expected[key]
        assert (usage.calls, usage.cache_hits, usage.input_tokens, usage.output_tokens) == (
            want["calls"],
            want["cache_hits"],
            want["input_tokens"],
            want["output_tokens"],
        )
        assert usage.cost == (pytest.approx(sum(costs[key])) if costs[key] else None)

    # per run, the totals equal the evaluations' own usage figures
    totals = await store.evaluations.judge_usage(by_model=False)
    for usage in totals:
        spent = [e.usage() for e in stored[usage.run_id]]
        assert usage.model is None and usage.provider is None
        assert usage.calls == sum(s["llm_calls"] for s in spent)
        assert usage.cache_hits == sum(s["cache_hits"] for s in spent)
        assert usage.input_tokens == sum(s["input_tokens"] for s in spent)
        assert usage.output_tokens == sum(s["output_tokens"] for s in spent)
    run_b = await store.evaluations.judge_usage(run_id="run-b")
    assert [u.to_dict() for u in run_b] == [
        {
            "run_id": "run-b",
            "provider": "fake",
            "model": "small",
            "calls": 1,
            "cache_hits": 0,
            "input_tokens": 100,
            "output_tokens": 0,
            "cost": pytest.approx(0.001),
        }
    ]
    assert isinstance(run_b[0], JudgeUsage)
    later = await store.evaluations.judge_usage(since=T0 + timedelta(seconds=1))
    assert later == []


# ------------------------------------------------ run overviews == summarize(documents)

_SCORES = st.one_of(
    st.sampled_from([0.0, 0.1, 0.2, 0.3, 1 / 3, 0.7, 0.95, 0.99999, 1.0]),
    st.floats(0, 1, allow_nan=False),
)
_CALL = st.builds(
    LLMCall,
    provider=st.just("fake"),
    model=st.sampled_from(["big", "small"]),
    prompt_hash=st.just("p" * 64),
    outcome=st.sampled_from(["ok", "cached", "error"]),
    input_tokens=st.one_of(st.none(), st.integers(0, 5000)),
    output_tokens=st.one_of(st.none(), st.integers(0, 5000)),
    cost=st.one_of(st.none(), st.floats(0, 1, allow_nan=False), st.just(0.1)),
)


@st.composite
def _criterion(draw: st.DrawFn, criterion_id: str) -> CriterionResult:
    status = draw(st.sampled_from(["scored", "scored", "error", "unable_to_evaluate"]))
    scored = status == "scored"
    return CriterionResult(
        criterion_id=criterion_id,
        status=status,
        score=draw(st.one_of(st.none(), _SCORES)) if scored else None,
        passed=draw(st.one_of(st.none(), st.booleans())) if scored else None,
        llm_calls=tuple(draw(st.lists(_CALL, max_size=2))),
    )


@st.composite
def _run_evaluations(draw: st.DrawFn) -> list[Evaluation]:
    count = draw(st.integers(0, 8))
    evaluations = []
    for index in range(count):
        names = draw(st.permutations(["c0", "c1", "c2", "c3"]))
        criteria = tuple(draw(_criterion(n)) for n in names[: draw(st.integers(0, 4))])
        # few targets and few instants: retried targets, ties broken by id, no target id
        target = draw(st.sampled_from(["t1", "t2", "t3", "", None]))
        base = make_evaluation(
            # made unique per run by `check`; the drawn part orders evaluations of one instant
            eval_id=f"{draw(st.integers(0, 9))}-{index}",
            target_id=target,
            verdict=draw(st.sampled_from(["pass", "fail", "incomplete"])),
            created_at=T0 + timedelta(seconds=draw(st.integers(0, 3))),
            criteria=0,
            score=draw(_SCORES),
        )
        evaluations.append(
            base.model_copy(
                update={
                    "criteria": criteria,
                    "target_hash": draw(st.sampled_from(["h1", "h2"])) * 32,
                    "duration_ms": draw(st.floats(0, 1e4, allow_nan=False)),
                    "feedback_llm_calls": tuple(draw(st.lists(_CALL, max_size=1))),
                }
            )
        )
    return evaluations


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(runs=st.lists(_run_evaluations(), min_size=1, max_size=3))
def test_run_overviews_equal_summarize_over_the_documents(
    db_url: str, runs: list[list[Evaluation]]
) -> None:
    """The SQL figures of each run, printed as `runs list --json` prints them, are byte for
    byte those `summarize` computes from the run's evaluation documents."""

    async def check() -> None:
        async with await Store.open(db_url) as store:
            ids = []
            for index, evaluations in enumerate(runs):
                run_id = f"run-{uuid.uuid4().hex}"
                ids.append(run_id)
                await store.runs.start(
                    RunInfo(
                        id=run_id,
                        rubric_id="essay",
                        rubric_version="1.0.0",
                        started_at=(T0 + timedelta(days=index)).isoformat(),
                    )
                )
                await store.evaluations.save_many(
                    StoredEvaluation(e.model_copy(update={"id": f"{run_id}-{e.id}"}), run_id=run_id)
                    for e in evaluations
                )
            overviews = {o.info.id: o for o in await store.runs.overviews(limit=1000)}
            for run_id in ids:
                loaded = await store.runs.load(run_id)
                expected = {**loaded.info.to_dict(), "summary": summarize(loaded.evaluations)}
                got = overviews[run_id].to_dict()
                expected["summary"] = expected["summary"].to_dict()
                assert json.dumps(got) == json.dumps(expected)

    asyncio.run(check())


async def test_overviews_newest_first_with_empty_runs(store: Store) -> None:
    for index, run_id in enumerate(["old", "empty", "new"]):
        await store.runs.start(
            RunInfo(
                id=run_id,
                rubric_id="essay",
                rubric_version="1.0.0",
                started_at=(T0 + timedelta(hours=index)).isoformat(),
            )
        )
    await store.evaluations.save_many(
        [
            StoredEvaluation(make_evaluation(target_id="a", verdict="fail"), run_id="old"),
            StoredEvaluation(make_evaluation(target_id="a"), run_id="new"),
        ]
    )
    overviews = await store.runs.overviews(limit=2)
    assert [o.info.id for o in overviews] == ["new", "empty"]
    assert (overviews[0].summary.total, overviews[0].summary.passed) == (1, 1)
    assert overviews[1].summary.to_dict() == summarize([]).to_dict()
    assert [o.info.id for o in await store.runs.overviews()] == ["new", "empty", "old"]


# ---------------------------------------------------------------------------- indexes

INDEXES = {
    "criterion_results": (
        "ix_criterion_results_outcome",
        ["evaluation_id", "criterion_id", "status", "passed", "score", "position"],
    ),
    "llm_calls": (
        "ix_llm_calls_usage",
        [
            "evaluation_id",
            "outcome",
            "provider",
            "model",
            "input_tokens",
            "output_tokens",
            "cost",
        ],
    ),
}


async def _indexes(url: str) -> dict[str, dict[str, list[str]]]:
    engine = database_module._create_engine(url)
    try:
        async with engine.connect() as connection:

            def read(sync: sa.Connection) -> dict[str, dict[str, list[str]]]:
                inspector = sa.inspect(sync)
                return {
                    table: {
                        i["name"] or "": [str(c) for c in i["column_names"]]
                        for i in inspector.get_indexes(table)
                    }
                    for table in INDEXES
                }

            return await connection.run_sync(read)
    finally:
        await engine.dispose()


async def test_a_store_at_0003_upgraded_gets_the_usage_indexes(fresh_db_url: str) -> None:
    await migrate_to(fresh_db_url, "0003")
    before = await _indexes(fresh_db_url)
    assert "ix_llm_calls_evaluation_id" in before["llm_calls"]

    async with await Store.open(fresh_db_url, upgrade=True) as store:
        assert await store.database.current_revision() == store.database.head_revision()
        await store.evaluations.save(make_evaluation(calls=2))
        assert [(u.calls, u.input_tokens) for u in await store.evaluations.judge_usage()] == [
            (2, 201)
        ]
    after = await _indexes(fresh_db_url)
    for table, (name, columns) in INDEXES.items():
        assert after[table][name] == columns
    # the covering index replaced the one on evaluation_id alone (its first column)
    assert "ix_llm_calls_evaluation_id" not in after["llm_calls"]


async def _plans(store: Store, call: Any) -> list[str]:
    """SQLite's query plan of every statement `call` runs."""
    statements: list[tuple[str, Any]] = []
    sync_engine = store.database.engine.sync_engine

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append((statement, parameters))

    sa.event.listen(sync_engine, "before_cursor_execute", capture)
    try:
        await call()
    finally:
        sa.event.remove(sync_engine, "before_cursor_execute", capture)
    plans = []
    async with store.database.engine.connect() as connection:
        for statement, parameters in statements:
            rows = await connection.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {statement}", tuple(parameters)
            )
            plans.append("\n".join(str(row[-1]) for row in rows))
    return plans


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_sqlite_reads_the_rows_through_the_covering_indexes(store: Store) -> None:
    await store.runs.start(RunInfo(id="run-1", rubric_id="essay", rubric_version="1.0.0"))
    await store.evaluations.save_many(
        StoredEvaluation(make_evaluation(target_id=f"t{n}", calls=2), run_id="run-1")
        for n in range(20)
    )
    await store.evaluations.save_many(make_evaluation(target_id=f"x{n}") for n in range(20))

    async def queries() -> None:
        await store.evaluations.criterion_pass_rates("essay", bucket="week")
        await store.evaluations.judge_usage(run_id="run-1")

    rates, usage = await _plans(store, queries)
    assert "USING COVERING INDEX ix_criterion_results_outcome" in rates, rates
    assert "ix_evaluations_rubric" in rates, rates
    assert "USING COVERING INDEX ix_llm_calls_usage" in usage, usage
    assert "ix_evaluations_run" in usage, usage

    overview = "\n".join(await _plans(store, lambda: store.runs.overviews(limit=5)))
    assert "USING COVERING INDEX ix_criterion_results_outcome" in overview, overview
    assert "USING COVERING INDEX ix_llm_calls_usage" in overview, overview
    assert "ix_evaluations_run" in overview, overview


async def test_runs_list_reads_no_evaluation_document(store: Store) -> None:
    await store.runs.start(RunInfo(id="run-1", rubric_id="essay", rubric_version="1.0.0"))
    await store.evaluations.save_many(
        [StoredEvaluation(make_evaluation(target_id="a"), run_id="run-1")]
    )
    # a document nobody can parse: the overview must not need it
    async with store.database.transaction() as connection:
        await connection.execute(sa.text("UPDATE evaluations SET document = 'not json'"))
    [overview] = await store.runs.overviews()
    assert (overview.summary.total, overview.summary.passed) == (1, 1)
    assert [c.criterion_id for c in overview.summary.criteria] == ["c0", "c1", "c2"]
    assert overview.summary.llm_calls == 1 and overview.summary.cost == pytest.approx(0.001)
    rows = await fetch(store, "SELECT count(*) FROM criterion_results")
    assert rows[0][0] == 3


async def test_cli_runs_list_json_is_what_the_documents_give(db_url: str) -> None:
    from typer.testing import CliRunner

    from rubricflow.cli import app

    async with await Store.open(db_url) as store:
        for index, run_id in enumerate(["nightly-1", "nightly-2"]):
            await store.runs.start(
                RunInfo(
                    id=run_id,
                    rubric_id="essay",
                    rubric_version="1.0.0",
                    source="targets.jsonl",
                    started_at=(T0 + timedelta(hours=index)).isoformat(),
                    options={"concurrency": 4},
                )
            )
            await store.evaluations.save_many(
                StoredEvaluation(
                    make_evaluation(
                        f"{run_id}-{n}",
                        target_id=f"t{n % 4}",  # t0 and t1 retried: the later one counts
                        verdict=["pass", "fail", "incomplete"][n % 3],
                        score=n / 7,
                        created_at=T0 + timedelta(minutes=n),
                        calls=n % 3,
                    ),
                    run_id=run_id,
                )
                for n in range(6 + index)
            )
        expected = []
        for info in await store.runs.list():
            loaded = await store.runs.load(info.id)
            expected.append({**info.to_dict(), "summary": summarize(loaded.evaluations).to_dict()})

    listed = await asyncio.to_thread(
        CliRunner().invoke, app, ["runs", "list", "--db", db_url, "--json"]
    )
    assert listed.exit_code == 0, listed.output
    assert json.dumps(json.loads(listed.stdout)) == json.dumps(expected)
    assert [run["summary"]["total"] for run in expected] == [4, 4]
