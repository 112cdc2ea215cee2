"""A review takes a bound rubric's latest version from memory while no rubric was
written since it read it (the rubrics' write count, kept by triggers, migration 0016).
What a user sees: a new version, or a deletion, takes effect at the next submit, however
it was written (through rubricflow, or by another program on its own connection), on
both backends; a database migrated from 0015 counts from there."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

import rubricflow.store.database as database_module
from rubricflow.errors import NotFoundError
from rubricflow.model import parse_rubric
from rubricflow.review import ArtifactRegistry, ArtifactType
from rubricflow.store import Store
from rubricflow.store.artifacts import RubricBinding

from .conftest import PostgresServer, migrate_to, rubric_doc

_TABLES = ("rubrics", "rubric_versions")
_EVENTS = ("insert", "update", "delete")


def _doc(version: str, *criteria: str) -> dict[str, Any]:
    return rubric_doc("essay", version, criteria=criteria)


async def _registry(store: Store) -> ArtifactRegistry:
    await store.rubrics.register(parse_rubric(_doc("1.0.0", "clear")))
    registry = ArtifactRegistry(store)
    await registry.set_type(ArtifactType(name="essay", rubrics=(RubricBinding(rubric_id="essay"),)))
    return registry


async def _reviewed_with(registry: ArtifactRegistry, text: str) -> tuple[str, list[str]]:
    """The rubric version an inline review of a new artifact used, and its criteria."""
    artifact = await registry.create("essay", {"text": text}, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    (evaluation,) = outcome.evaluations
    return evaluation.rubric_version, [r.criterion_id for r in evaluation.criteria]


async def _execute(url: str, statement: str, **params: Any) -> None:
    """Run `statement` on a connection of its own: another program writing the database."""
    engine = database_module._create_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(sa.text(statement), params)
    finally:
        await engine.dispose()


async def _insert_by_hand(url: str, version: str, *criteria: str) -> None:
    """Another program registers `essay` at `version`, with plain SQL."""
    rubric = parse_rubric(_doc(version, *criteria))
    await _execute(
        url,
        "INSERT INTO rubrics (rubric_id, created_at) SELECT 'essay', CURRENT_TIMESTAMP "
        "WHERE NOT EXISTS (SELECT 1 FROM rubrics WHERE rubric_id = 'essay')",
    )
    await _execute(
        url,
        "INSERT INTO rubric_versions (rubric_id, version, content_hash, name, target_type, "
        "source_format, document, created_at) VALUES ('essay', :version, :hash, 'Rubric "
        "essay', 'essay', NULL, :document, CURRENT_TIMESTAMP)",
        version=version,
        hash=rubric.content_hash,
        document=json.dumps(rubric.to_dict(), sort_keys=True),
    )


async def _generation(store: Store) -> int:
    async with store.database.read() as connection:
        value = (
            await connection.execute(sa.text("SELECT generation FROM rubric_generation"))
        ).scalar_one()
    return int(value)


async def test_a_new_version_registered_between_two_reviews_is_used_by_the_second(
    store: Store,
) -> None:
    registry = await _registry(store)
    assert await _reviewed_with(registry, "first") == ("1.0.0", ["clear"])
    assert await _reviewed_with(registry, "second") == ("1.0.0", ["clear"])

    await store.rubrics.register(parse_rubric(_doc("1.1.0", "clear", "short")))

    assert await _reviewed_with(registry, "third") == ("1.1.0", ["clear", "short"])


async def test_a_version_another_program_writes_is_used_at_the_next_review(
    store: Store, db_url: str
) -> None:
    registry = await _registry(store)
    assert await _reviewed_with(registry, "first") == ("1.0.0", ["clear"])
    before = await _generation(store)

    await _insert_by_hand(db_url, "2.0.0", "clear", "short", "kind")

    assert await _generation(store) > before  # the trigger counted the write
    assert await _reviewed_with(registry, "second") == ("2.0.0", ["clear", "short", "kind"])


async def test_a_rubric_deleted_after_a_review_refuses_the_next_submit(store: Store) -> None:
    registry = await _registry(store)
    assert await _reviewed_with(registry, "first") == ("1.0.0", ["clear"])

    await store.rubrics.delete("essay")

    artifact = await registry.create("essay", {"text": "second"}, actor="bot")
    with pytest.raises(NotFoundError, match="essay"):
        await registry.submit_for_review(artifact.id, actor="bot")
    assert (await registry.get(artifact.id)).status == "draft"  # nothing was written


async def test_every_write_to_the_rubric_tables_moves_the_count(store: Store) -> None:
    counts = [await _generation(store)]
    await store.rubrics.register(parse_rubric(_doc("1.0.0", "clear")))
    counts.append(await _generation(store))
    await store.rubrics.register(parse_rubric(_doc("1.0.1", "clear", "short")))
    counts.append(await _generation(store))
    await store.rubrics.delete("essay")
    counts.append(await _generation(store))
    await store.rubrics.register(parse_rubric(_doc("1.0.2", "clear")))  # undeletes it
    counts.append(await _generation(store))
    assert counts == sorted(set(counts)), counts  # each write moved it forward


async def test_a_second_review_reads_no_rubric_version_while_none_was_written(
    store: Store,
) -> None:
    registry = await _registry(store)
    await _reviewed_with(registry, "first")
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    engine = store.database.engine.sync_engine
    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        assert await _reviewed_with(registry, "second") == ("1.0.0", ["clear"])
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    assert any("rubric_generation" in s for s in statements)  # the count was read
    assert not [s for s in statements if "FROM rubric_versions" in s]


async def test_without_its_count_row_a_store_reads_the_versions_every_time(
    store: Store, db_url: str
) -> None:
    registry = await _registry(store)
    await _execute(db_url, "DELETE FROM rubric_generation")
    try:
        assert await _reviewed_with(registry, "first") == ("1.0.0", ["clear"])
        await store.rubrics.register(parse_rubric(_doc("1.3.0", "clear", "short")))
        assert await _reviewed_with(registry, "second") == ("1.3.0", ["clear", "short"])
    finally:
        await _execute(db_url, "INSERT INTO rubric_generation (id, generation) VALUES (1, 0)")


async def test_a_count_that_goes_back_is_not_trusted(store: Store, db_url: str) -> None:
    # a backup restored under a running process: the count goes back, then forward again
    # to a value this process saw when `essay` was another version
    registry = await _registry(store)
    await store.rubrics.register(parse_rubric(rubric_doc("note", criteria=("clear",))))
    await registry.set_type(ArtifactType(name="note", rubrics=(RubricBinding(rubric_id="note"),)))
    seen = await _generation(store)
    assert await _reviewed_with(registry, "first") == ("1.0.0", ["clear"])

    await _insert_by_hand(db_url, "2.0.0", "clear", "short")
    await _execute(db_url, "UPDATE rubric_generation SET generation = :n", n=seen - 1)
    note = await registry.create("note", {"text": "a note"}, actor="bot")
    await registry.submit_for_review(note.id, actor="bot")  # read at the earlier count
    await _execute(db_url, "UPDATE rubric_generation SET generation = :n", n=seen)

    assert await _reviewed_with(registry, "second") == ("2.0.0", ["clear", "short"])


async def test_the_head_schema_has_the_triggers_that_keep_the_count(store: Store) -> None:
    async with store.database.read() as connection:
        if store.database.dialect == "sqlite":
            query = "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        else:
            query = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
        names = set((await connection.execute(sa.text(query))).scalars())
    expected = (
        {f"{t}_generation_{e}" for t in _TABLES for e in _EVENTS}
        if store.database.dialect == "sqlite"
        else {
            f"{t}_generation{k}" for t in ("rubrics", "rubric_versions") for k in ("", "_truncate")
        }
    )
    assert expected <= names, expected - names


async def test_two_writers_of_overlapping_rubrics_wait_instead_of_deadlocking(
    pg_server: PostgresServer, pg_session_url: str
) -> None:
    # PostgreSQL only: SQLite's write transactions hold the whole file, one at a time
    pg_server.truncate(pg_session_url)
    async with await Store.open(pg_session_url) as store:
        await _register_against_another_writer(store, pg_session_url)


async def _register_against_another_writer(store: Store, db_url: str) -> None:
    import asyncpg

    dsn = make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False)
    other = await asyncpg.connect(dsn, timeout=5)
    try:
        # the other program's transaction writes rubric b (moving the count, so holding its
        # row), then rubric essay, which rubricflow registers meanwhile
        transaction = other.transaction()
        await transaction.start()
        await other.execute(
            "INSERT INTO rubrics (rubric_id, created_at) VALUES ('b', CURRENT_TIMESTAMP)"
        )
        registering = asyncio.ensure_future(
            store.rubrics.register(parse_rubric(_doc("1.0.0", "clear")))
        )
        deadline = time.monotonic() + 120
        # until rubricflow's writer waits for a lock the other transaction holds
        while not await other.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"):
            assert time.monotonic() < deadline, "the registration never waited"
            assert not registering.done(), registering
            await asyncio.sleep(0.02)
        await other.execute(
            "INSERT INTO rubrics (rubric_id, created_at) VALUES ('essay', CURRENT_TIMESTAMP)"
        )
        await transaction.commit()
        registered = await asyncio.wait_for(registering, timeout=30)
    finally:
        await other.close()
    assert registered.created
    assert (await store.rubrics.get("essay")).version == "1.0.0"


async def test_a_database_migrated_from_0015_counts_from_there(fresh_db_url: str) -> None:
    await migrate_to(fresh_db_url, "0015")
    await _insert_by_hand(fresh_db_url, "1.0.0", "clear")  # registered before 0016
    async with await Store.open(fresh_db_url, upgrade=True) as store:
        assert await store.database.current_revision() == "0016"
        assert await _generation(store) == 0
        registry = ArtifactRegistry(store)
        await registry.set_type(
            ArtifactType(name="essay", rubrics=(RubricBinding(rubric_id="essay"),))
        )
        assert await _reviewed_with(registry, "first") == ("1.0.0", ["clear"])
        await store.rubrics.register(parse_rubric(_doc("1.2.0", "clear", "short")))
        assert await _reviewed_with(registry, "second") == ("1.2.0", ["clear", "short"])
        assert await _generation(store) >= 2
