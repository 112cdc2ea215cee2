"""A review takes a bound rubric's latest version from memory while no rubric was
written since it read it (the rubrics' write count, kept by triggers, migration 0016).
What a user sees: a new version, or a deletion, takes effect at the next submit, however
it was written (through rubricflow, or by another program on its own connection), on
both backends; a database migrated from 0015 counts from there."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

import rubricflow.store.database as database_module
from rubricflow.errors import NotFoundError
from rubricflow.model import parse_rubric
from rubricflow.review import ArtifactRegistry, ArtifactType
from rubricflow.store import Store
from rubricflow.store.artifacts import RubricBinding

from .conftest import rubric_doc


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

    rubric = parse_rubric(_doc("2.0.0", "clear", "short", "kind"))
    await _execute(
        db_url,
        "INSERT INTO rubric_versions (rubric_id, version, content_hash, name, target_type, "
        "source_format, document, created_at) VALUES ('essay', '2.0.0', :hash, 'Rubric "
        "essay', 'essay', NULL, :document, CURRENT_TIMESTAMP)",
        hash=rubric.content_hash,
        document=json.dumps(rubric.to_dict(), sort_keys=True),
    )

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


async def test_a_database_migrated_from_0015_counts_from_there(fresh_db_url: str) -> None:
    engine = database_module._create_engine(fresh_db_url)
    config = database_module._alembic_config()
    try:
        async with engine.begin() as connection:

            def to_0015(sync: sa.Connection) -> None:
                config.attributes["connection"] = sync
                command.upgrade(config, "0015")

            await connection.run_sync(to_0015)
    finally:
        await engine.dispose()
    async with await Store.open(fresh_db_url, upgrade=True) as store:
        assert await store.database.current_revision() == "0016"
        assert await _generation(store) == 0
        registry = await _registry(store)
        assert await _reviewed_with(registry, "first") == ("1.0.0", ["clear"])
        await store.rubrics.register(parse_rubric(_doc("1.2.0", "clear", "short")))
        assert await _reviewed_with(registry, "second") == ("1.2.0", ["clear", "short"])
        assert await _generation(store) >= 2
