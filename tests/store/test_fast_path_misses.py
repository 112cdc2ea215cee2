"""Every repository write of a steady workload runs on the SQLite fast path's direct
`sqlite3` path (`rubricflow.store._sqlite_direct`), never on SQLAlchemy's slow path.

The direct path leans on SQLAlchemy's compiler internals; a new SQLAlchemy (or a
repository statement rebuilt per call) can quietly send writes back to SQLAlchemy's
path, costing the review gate its speed with every test still green. The engine counts
those misses (`Database.fast_path_stats`); this test drives every write path of the
public API once to warm up (a statement's first use always takes SQLAlchemy's path),
then once more, and fails naming each write that still missed.

Some writes cannot take the direct path by its design (see `direct.py`): they are built
anew on each call, with their values inside the statement. They are listed in
`ALLOWED` with the reason; each runs once per rubric version, run, judge answer or
rubric deletion, never once per review or per stored evaluation.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from rubricflow import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.model import parse_rubric
from rubricflow.plugins import create_plugin_manager
from rubricflow.runs import RunInfo
from rubricflow.store import Store, StoredEvaluation
from rubricflow.store._sqlite_direct import FIRST_USE, NO_MAPPING, FastPathStats

from .conftest import make_evaluation, make_rubric

pytestmark = pytest.mark.fast_path_only

# (the start of the SQL, why it takes SQLAlchemy's path): statements built per call with
# their values in the statement (`.values(...)`), which the direct path never runs (it
# runs a statement object it has seen before, with its values as parameters)
_PER_CALL = "built per call with its values inside (`.values(...)`): never a repeated statement"
ALLOWED: dict[str, str] = {
    "INSERT INTO rubrics ": f"RubricRegistry.register, once per rubric version; {_PER_CALL}",
    "INSERT INTO rubric_versions ": f"RubricRegistry.register, once per version; {_PER_CALL}",
    "UPDATE rubrics SET deleted_at": (
        f"RubricRegistry.register (a new version) and delete; {_PER_CALL}"
    ),
    "INSERT INTO runs ": f"RunStore.start, once per batch run; {_PER_CALL}",
    "UPDATE runs SET ": f"RunStore.finish and resume, once per batch run; {_PER_CALL}",
    "INSERT INTO judge_cache ": f"StoreJudgeCache.put, once per new judge answer; {_PER_CALL}",
    "UPDATE judge_cache SET hits": f"StoreJudgeCache.get, once per cache hit; {_PER_CALL}",
    "INSERT INTO artifact_types ": f"ArtifactRegistry.set_type, a new type; {_PER_CALL}",
    "UPDATE artifact_types SET ": f"ArtifactRegistry.set_type, a type redefined; {_PER_CALL}",
}
# an allowed statement may miss only for these reasons: any other (a listener, a
# statement that stopped compiling for the direct path) is a regression all the same
_ALLOWED_REASONS = {FIRST_USE, NO_MAPPING}


def _allowed(sql: str, reasons: set[str]) -> bool:
    return reasons <= _ALLOWED_REASONS and any(sql.startswith(start) for start in ALLOWED)


def _rubric(version: str) -> object:
    return parse_rubric(
        {
            "id": "misses",
            "name": "Fast path misses",
            "version": version,
            "pass_threshold": 0.7,
            "criteria": [
                {
                    "id": "fine",
                    "description": "says fine",
                    "scoring": {
                        "method": "deterministic",
                        "function": "contains_all",
                        "config": {"terms": ["fine"]},
                    },
                },
                {
                    "id": "filled",
                    "description": "not empty",
                    "scoring": {"method": "deterministic", "function": "non_empty"},
                },
            ],
        }
    )


async def _every_write(store: Store, registry: ArtifactRegistry, round_: int) -> None:
    """One pass over the write paths of the public API."""
    # rubric registry: a new version, the same again (a no-op), a deletion, a re-register
    await store.rubrics.register(_rubric(f"1.0.{round_}"))
    await store.rubrics.register(_rubric(f"1.0.{round_}"))
    await store.rubrics.register(make_rubric(f"gone-{round_}"))
    await store.rubrics.delete(f"gone-{round_}")

    # artifact types: one redefined, one new
    binding = (RubricBinding(rubric_id="misses"),)
    await registry.set_type(ArtifactType(name="doc", rubrics=binding))
    await registry.set_type(ArtifactType(name=f"extra-{round_}", rubrics=binding))

    # artifacts: every lifecycle path that writes
    passing, failing = "a fine answer", "a weak answer"
    for _ in range(2):
        # submitted and reviewed at once: approved
        done = await registry.create("doc", passing, actor="bot")
        await registry.submit_for_review(done.id, actor="bot")
        # a failing review, a revision, a second review
        redo = await registry.create("doc", failing, actor="bot")
        await registry.submit_for_review(redo.id, actor="bot")
        await registry.revise(redo.id, passing, actor="bot", reason="fixed")
        await registry.submit_for_review(redo.id, actor="bot")
        # queued, then claimed and reviewed by a worker, in one call or two; then a
        # human's approval
        gated = await registry.create("gated", passing, actor="bot")
        await registry.submit_for_review(gated.id, actor="bot", defer=True)
        await registry.review(gated.id, worker="w1")
        await registry.approve(gated.id, actor="carol", reason="looks right")
        queued = await registry.create("doc", passing, actor="bot")
        await registry.submit_for_review(queued.id, actor="bot", defer=True)
        claimed = await registry.claim_next(worker="w2")
        assert claimed is not None and claimed.id == queued.id
        await registry.finish_review(claimed)
        # a human's rejection and override
        held = await registry.create("gated", passing, actor="bot")
        await registry.submit_for_review(held.id, actor="bot")
        await registry.reject(held.id, actor="carol", reason="no")
        other = await registry.create("gated", passing, actor="bot")
        await registry.submit_for_review(other.id, actor="bot")
        await registry.override(other.id, actor="carol", reason="ship it")
        # withdrawn, archived, superseded
        drawn = await registry.create("doc", passing, actor="bot")
        await registry.submit_for_review(drawn.id, actor="bot", defer=True)
        await registry.withdraw(drawn.id, actor="bot")
        spare = await registry.create("doc", passing, actor="bot")
        await registry.archive(spare.id, actor="bot")
        old = await registry.create("doc", passing, actor="bot")
        await registry.supersede(old.id, actor="bot", reason="newer", by=done.id)

    # evaluations: one, a batch, a batch in a run
    run_id = f"run-{round_}"
    await store.runs.start(RunInfo(id=run_id, rubric_id="essay", rubric_version="1.0.0"))
    await store.evaluations.save(make_evaluation(uuid.uuid4().hex))
    await store.evaluations.save_many([make_evaluation(uuid.uuid4().hex) for _ in range(3)])
    await store.evaluations.save_many(
        [StoredEvaluation(make_evaluation(uuid.uuid4().hex), run_id=run_id) for _ in range(3)]
    )
    await store.runs.finish(run_id, "interrupted")
    await store.runs.resume(run_id)
    await store.runs.finish(run_id)

    # the judge cache in the store
    key = f"key-{round_}"
    await store.judge_cache.put(key, '{"verdict": "MET"}')
    assert await store.judge_cache.get(key) is not None


def _describe(stats: FastPathStats, sql: str) -> str:
    return f"  {stats.slow_path[sql]} x {sql}\n    because: {'; '.join(sorted(stats.reasons[sql]))}"


async def test_every_repeated_repository_write_takes_the_direct_path(tmp_path: Path) -> None:
    async with await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'misses.db'}") as store:
        stats = store.database.fast_path_stats
        assert stats is not None, "a SQLite store with the fast path on counts its misses"
        registry = ArtifactRegistry(store, plugins=create_plugin_manager(load_entry_points=False))
        binding = (RubricBinding(rubric_id="misses"),)
        await store.rubrics.register(_rubric("1.0.0"))
        await registry.set_type(ArtifactType(name="doc", rubrics=binding))
        await registry.set_type(ArtifactType(name="gated", rubrics=binding, requires_approval=True))

        await _every_write(store, registry, 1)  # first uses: SQLAlchemy's path
        stats.reset()
        await _every_write(store, registry, 2)

        missed = [sql for sql in stats.slow_path if not _allowed(sql, stats.reasons[sql])]
        assert not missed, (
            "repository writes took SQLAlchemy's slow path instead of the direct sqlite3 "
            "path (see docs/store.md, 'The SQLite fast path'):\n"
            + "\n".join(_describe(stats, sql) for sql in missed)
        )
        assert stats.direct_hits > 0
        # the allow-list is exact: an entry no write needs any more must go
        unused = [
            start for start in ALLOWED if not any(s.startswith(start) for s in stats.slow_path)
        ]
        assert not unused, f"allowed slow-path writes that no longer miss: {unused}"


async def test_a_write_that_misses_is_counted_with_its_reason(tmp_path: Path) -> None:
    """The counter itself: a statement's first use is a miss, its second a direct hit,
    and a write under a cursor listener a miss naming the listener."""
    import sqlalchemy as sa

    meta = sa.MetaData()
    table = sa.Table("counted", meta, sa.Column("id", sa.Integer, primary_key=True))
    insert = table.insert()
    async with await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'counted.db'}") as store:
        database = store.database
        stats = database.fast_path_stats
        assert stats is not None
        async with database.engine.begin() as connection:
            await connection.run_sync(meta.create_all)
        stats.reset()
        for number in range(3):
            async with database.transaction() as connection:
                await connection.execute(insert, {"id": number})
        (sql,) = stats.slow_path
        assert sql.startswith("INSERT INTO counted")
        assert stats.slow_path[sql] == 1 and stats.reasons[sql] == {FIRST_USE}
        assert stats.direct_hits == 2
        assert "1 x INSERT INTO counted" in stats.report()

        stats.reset()
        sa.event.listen(database.engine.sync_engine, "before_cursor_execute", lambda *a: None)
        async with database.transaction() as connection:
            await connection.execute(insert, {"id": 10})
        (reasons,) = stats.reasons.values()
        assert stats.direct_hits == 0 and any("listeners" in r for r in reasons)
