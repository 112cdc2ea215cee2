"""Stored evaluations on both backends: written whole with criterion results and LLM
calls, read back equal, and queried by id, target, artifact, rubric, time and verdict."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone

import pytest

from rubricflow.engine.executor import evaluate
from rubricflow.errors import NotFoundError, StoreError
from rubricflow.results import Evaluation
from rubricflow.store import EvaluationFilter, Store, StoredEvaluation

from .conftest import T0, at, fetch, make_call, make_evaluation, make_rubric, scalar


async def test_saved_evaluation_reads_back_equal(store: Store) -> None:
    evaluation = make_evaluation("e1", calls=2)
    await store.evaluations.save(evaluation, artifact_id="doc-7", revision=3)
    got = await store.evaluations.get("e1")
    assert got == evaluation
    assert got.criteria[0].llm_calls == evaluation.criteria[0].llm_calls
    assert got.criteria[1].evidence == ("quote 1", "ünïcode ✓")


async def test_an_engine_evaluation_round_trips(store: Store) -> None:
    rubric = make_rubric("essay", "1.0.0")
    await store.rubrics.register(rubric)
    evaluation = await evaluate(rubric, {"id": "t-9", "content": "some text"})
    await store.evaluations.save(evaluation)
    assert await store.evaluations.get(evaluation.id) == evaluation
    (row,) = await fetch(
        store,
        "SELECT rubric_hash, target_hash, target_id FROM evaluations WHERE id = :i",
        i=evaluation.id,
    )
    assert tuple(row) == (rubric.content_hash, evaluation.target_hash, "t-9")


async def test_evaluation_row_holds_every_queryable_field(store: Store) -> None:
    evaluation = make_evaluation("e1", calls=2, verdict="fail", score=0.25)
    await store.evaluations.save(evaluation, artifact_id="doc-7", revision=3)
    (row,) = await fetch(store, "SELECT * FROM evaluations")
    row = row._mapping
    expected = {
        "id": "e1",
        "rubric_id": "essay",
        "rubric_version": "1.0.0",
        "rubric_hash": "a" * 64,
        "target_id": "t1",
        "target_hash": "b" * 64,
        "artifact_id": "doc-7",
        "revision": 3,
        "verdict": "fail",
        "score": 0.25,
        "scaled_score": 2.5,
        "raw_score": 0.75,
        "coverage": 1.0,
        "threshold": 0.7,
        "unscored_policy": "fail_closed",
        "feedback": evaluation.feedback,
        "duration_ms": 42.0,
        "llm_calls": 2,
        "input_tokens": 100 + 101,
        "output_tokens": 20 + 21,
    }
    assert {key: row[key] for key in expected} == expected
    assert not row["passed"]
    assert row["cost"] == pytest.approx(0.002)
    assert json.loads(row["document"]) == evaluation.to_dict()


async def test_criterion_results_land_in_their_table(store: Store) -> None:
    evaluation = make_evaluation("e1", criteria=4)
    await store.evaluations.save(evaluation)
    rows = await fetch(
        store,
        "SELECT criterion_id, position, status, score, verdict, passed, weight, required, "
        "scorer, notes, evidence FROM criterion_results WHERE evaluation_id = 'e1' "
        "ORDER BY position",
    )
    assert [r.criterion_id for r in rows] == ["c0", "c1", "c2", "c3"]
    for row, result in zip(rows, evaluation.criteria, strict=True):
        assert row.position == int(result.criterion_id[1:])
        assert (row.status, row.verdict, row.notes, row.scorer) == (
            result.status,
            result.verdict,
            result.notes,
            result.scorer,
        )
        assert row.score == pytest.approx(result.score)
        assert bool(row.passed) is result.passed and bool(row.required) is result.required
        assert row.weight == result.weight
        assert json.loads(row.evidence) == list(result.evidence)


async def test_llm_calls_land_in_the_ledger(store: Store) -> None:
    evaluation = make_evaluation("e1", calls=3)
    failed = make_evaluation("e2", calls=0).model_copy(
        update={
            "criteria": (
                make_evaluation("x", calls=0)
                .criteria[0]
                .model_copy(
                    update={
                        "llm_calls": (
                            make_call(
                                "c0",
                                7,
                                outcome="timeout",
                                error="read timed out",
                                response_hash=None,
                                input_tokens=None,
                            ),
                            make_call("c0", 8, outcome="cached", attempt=2),
                        )
                    }
                ),
            )
        }
    )
    await store.evaluations.save_many([evaluation, failed])
    rows = await fetch(
        store,
        "SELECT evaluation_id, criterion_id, provider, model, prompt_hash, response_hash, "
        "input_tokens, output_tokens, latency_ms, attempt, outcome, error, cost, created_at "
        "FROM llm_calls ORDER BY evaluation_id, prompt_hash",
    )
    assert len(rows) == 5
    assert [r.evaluation_id for r in rows] == ["e1"] * 3 + ["e2"] * 2
    first = rows[0]
    assert (first.criterion_id, first.provider, first.model) == ("c0", "fake", "judge-1")
    assert first.prompt_hash == f"{0:064x}" and first.response_hash == f"{1:064x}"
    assert (first.input_tokens, first.output_tokens, first.attempt) == (100, 20, 1)
    assert first.latency_ms == 12.5 and first.outcome == "ok" and first.cost == 0.001
    timeout, cached = rows[3], rows[4]
    assert (timeout.outcome, timeout.error, timeout.response_hash) == (
        "timeout",
        "read timed out",
        None,
    )
    assert timeout.input_tokens is None
    assert (cached.outcome, cached.attempt) == ("cached", 2)
    (usage,) = await fetch(store, "SELECT llm_calls, input_tokens FROM evaluations WHERE id='e2'")
    assert tuple(usage) == (1, 0)  # the cache hit is not a call; the timeout had no tokens
    assert (await store.evaluations.get("e2")) == failed


async def test_get_unknown_names_the_id(store: Store) -> None:
    with pytest.raises(NotFoundError, match="'nope'"):
        await store.evaluations.get("nope")


async def _seed(store: Store) -> list[Evaluation]:
    """Twelve evaluations a minute apart, over two rubrics, three targets, three verdicts."""
    items = []
    for i in range(12):
        evaluation = make_evaluation(
            f"e{i:02d}",
            rubric_id="essay" if i % 2 == 0 else "code",
            rubric_version="1.0.0" if i < 6 else "1.1.0",
            target_id=f"t{i % 3}",
            verdict=("pass", "fail", "incomplete")[2 if i % 3 == 0 else i % 2],
            created_at=at(i),
        )
        items.append(StoredEvaluation(evaluation, artifact_id=f"a{i % 2}", revision=i // 2))
    assert await store.evaluations.save_many(items) == 12
    return [item.evaluation for item in items]


def _ids(evaluations: list[Evaluation]) -> list[str]:
    return [e.id for e in evaluations]


async def test_queries_are_newest_first_and_filter(store: Store) -> None:
    seeded = await _seed(store)
    newest_first = sorted(seeded, key=lambda e: e.created_at, reverse=True)
    assert _ids(await store.evaluations.query()) == _ids(newest_first)

    def expect(predicate) -> list[str]:  # type: ignore[no-untyped-def]
        return [e.id for e in newest_first if predicate(e)]

    cases = [
        (EvaluationFilter(target_id="t1"), expect(lambda e: e.target_id == "t1")),
        (EvaluationFilter(rubric_id="essay"), expect(lambda e: e.rubric_id == "essay")),
        (
            EvaluationFilter(rubric_id="code", rubric_version="1.1.0"),
            expect(lambda e: e.rubric_id == "code" and e.rubric_version == "1.1.0"),
        ),
        (EvaluationFilter(verdict="incomplete"), expect(lambda e: e.verdict == "incomplete")),
        (EvaluationFilter(verdict="fail"), expect(lambda e: e.verdict == "fail")),
        (EvaluationFilter(artifact_id="a1"), expect(lambda e: int(e.id[1:]) % 2 == 1)),
        (
            EvaluationFilter(artifact_id="a0", revision=1),
            ["e02"],
        ),
        (EvaluationFilter(since=at(3), until=at(7)), ["e06", "e05", "e04", "e03"]),
        (EvaluationFilter(since=at(10)), ["e11", "e10"]),
        (EvaluationFilter(until=at(2)), ["e01", "e00"]),
        (EvaluationFilter(since=at(3.5), until=at(3.6)), []),
        (
            EvaluationFilter(target_id="t0", verdict="incomplete", since=at(1)),
            ["e09", "e06", "e03"],
        ),
        (EvaluationFilter(target_id="nobody"), []),
    ]
    assert sum(not expected for _, expected in cases) == 2  # the rest really select something
    for chosen, expected in cases:
        assert _ids(await store.evaluations.query(chosen)) == expected, chosen
        assert await store.evaluations.count(chosen) == len(expected), chosen
        assert list(await store.evaluations.ids(chosen)) == expected, chosen
    # keyword fields work as well as a filter object
    assert _ids(await store.evaluations.query(target_id="t2", limit=100)) == expect(
        lambda e: e.target_id == "t2"
    )
    assert await store.evaluations.count(verdict="pass") == len(
        expect(lambda e: e.verdict == "pass")
    )
    assert await store.evaluations.count() == 12


async def test_time_range_is_inclusive_since_exclusive_until(store: Store) -> None:
    await _seed(store)
    assert _ids(await store.evaluations.query(since=at(5), until=at(6))) == ["e05"]
    assert _ids(await store.evaluations.query(since=at(5), until=at(5))) == []


async def test_times_in_other_offsets_compare_as_instants(store: Store) -> None:
    plus_two = timezone(timedelta(hours=2))
    minus_five = timezone(timedelta(hours=-5))
    # e-east happened at 11:30 UTC, e-west at 12:30 UTC, e-utc at 12:00 UTC
    await store.evaluations.save_many(
        [
            make_evaluation("e-east", created_at=datetime(2026, 3, 1, 13, 30, tzinfo=plus_two)),
            make_evaluation("e-west", created_at=datetime(2026, 3, 1, 7, 30, tzinfo=minus_five)),
            make_evaluation("e-utc", created_at=T0),
        ]
    )
    assert _ids(await store.evaluations.query()) == ["e-west", "e-utc", "e-east"]
    since = datetime(2026, 3, 1, 14, 0, tzinfo=plus_two)  # 12:00 UTC
    assert _ids(await store.evaluations.query(since=since)) == ["e-west", "e-utc"]
    assert _ids(await store.evaluations.query(until=T0)) == ["e-east"]
    assert (await store.evaluations.get("e-east")).created_at == "2026-03-01T13:30:00+02:00"


async def test_paging_has_no_duplicates_or_gaps(store: Store) -> None:
    seeded = await _seed(store)
    # two evaluations share a timestamp: ties are broken by id, consistently across pages
    extra = [make_evaluation(f"tie{i}", created_at=at(5)) for i in range(3)]
    await store.evaluations.save_many(extra)
    everything = _ids(await store.evaluations.query(limit=1000))
    assert len(everything) == len(set(everything)) == len(seeded) + 3
    for size in (1, 4, 5):
        pages: list[str] = []
        offset = 0
        while page := await store.evaluations.query(limit=size, offset=offset):
            assert len(page) <= size
            pages.extend(_ids(page))
            offset += size
        assert pages == everything, size
    assert _ids(await store.evaluations.query(limit=3, offset=100)) == []


async def test_save_many_with_a_duplicate_id_stores_nothing(store: Store) -> None:
    await store.evaluations.save(make_evaluation("taken"))
    batch = [make_evaluation("n1"), make_evaluation("taken"), make_evaluation("n2")]
    with pytest.raises(StoreError, match="taken"):
        await store.evaluations.save_many(batch)
    assert list(await store.evaluations.ids()) == ["taken"]
    assert await scalar(store, "SELECT count(*) FROM criterion_results") == 3
    assert await scalar(store, "SELECT count(*) FROM llm_calls") == 1


async def test_a_batch_repeating_an_id_stores_nothing(store: Store) -> None:
    batch = [make_evaluation("n1"), make_evaluation("n2"), make_evaluation("n1")]
    with pytest.raises(StoreError, match="n1"):
        await store.evaluations.save_many(batch)
    assert await store.evaluations.count() == 0
    assert await scalar(store, "SELECT count(*) FROM criterion_results") == 0


async def test_save_many_of_nothing(store: Store) -> None:
    assert await store.evaluations.save_many([]) == 0


async def test_deleting_an_evaluation_row_cascades(store: Store) -> None:
    # foreign keys are enforced on both backends (SQLite needs PRAGMA foreign_keys=ON)
    await store.evaluations.save(make_evaluation("e1", calls=2))
    await store.evaluations.save(make_evaluation("e2", calls=1))
    async with store.database.transaction() as connection:
        await connection.exec_driver_sql("DELETE FROM evaluations WHERE id = 'e1'")
    assert await scalar(store, "SELECT count(*) FROM criterion_results") == 3
    assert await scalar(store, "SELECT count(*) FROM llm_calls") == 1


async def test_a_batch_breaking_another_constraint_stores_nothing(store: Store) -> None:
    twice = make_evaluation("e1", criteria=2)
    twice = twice.model_copy(update={"criteria": (twice.criteria[0], twice.criteria[0])})
    with pytest.raises(StoreError, match="constraint"):
        await store.evaluations.save_many([make_evaluation("e0"), twice])
    assert await store.evaluations.count() == 0


async def test_utc_written_with_a_z(store: Store) -> None:
    await store.evaluations.save(make_evaluation("z", created_at="2026-03-01T12:00:00Z"))
    assert _ids(await store.evaluations.query(since=T0, until=at(1))) == ["z"]
    assert (await store.evaluations.get("z")).created_at == "2026-03-01T12:00:00Z"


async def test_an_in_memory_store_takes_concurrent_batches() -> None:
    # one shared connection: one batch's rollback must not undo another's work
    async with await Store.open("sqlite+aiosqlite:///:memory:") as store:
        await store.evaluations.save(make_evaluation("taken"))
        good = [[make_evaluation(f"g{k}-{i}") for i in range(10)] for k in range(4)]
        bad = [[make_evaluation(f"b{k}"), make_evaluation("taken")] for k in range(4)]
        outcomes = await asyncio.gather(
            *(
                store.evaluations.save_many(batch)
                for pair in zip(good, bad, strict=True)
                for batch in pair
            ),
            return_exceptions=True,
        )
        assert outcomes[0::2] == [10, 10, 10, 10]
        assert all(isinstance(o, StoreError) for o in outcomes[1::2]), outcomes
        assert await store.evaluations.count() == 41
        await store.rubrics.register(make_rubric("essay", "1.0.0"))
        assert [r.id for r in await store.rubrics.list_latest()] == ["essay"]
