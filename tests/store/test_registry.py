"""The versioned rubric registry on both backends: immutable versions, semver "latest",
deletion that keeps history, and registration of many rubrics in one transaction."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

import rubricflow.store.rubrics as rubrics_module
from rubricflow.errors import NotFoundError, RubricVersionConflictError
from rubricflow.model import semver_key
from rubricflow.store import Store

from .conftest import AGENTV_SUITE, T0, make_rubric, rubric_doc, scalar

SEMVER_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.2.0",
    "1.10.0",
]


async def test_register_stores_an_immutable_version(store: Store) -> None:
    rubric = make_rubric("essay", "1.0.0")
    first = await store.rubrics.register(rubric)
    assert first.created is True
    again = await store.rubrics.register(make_rubric("essay", "1.0.0"))
    assert again.created is False
    fetched = await store.rubrics.get("essay")
    assert fetched == rubric
    assert fetched.content_hash == rubric.content_hash
    (info,) = await store.rubrics.history("essay")
    assert (info.version, info.content_hash) == ("1.0.0", rubric.content_hash)
    assert await scalar(store, "SELECT count(*) FROM rubric_versions") == 1


async def test_same_version_with_other_content_is_refused(store: Store) -> None:
    original = make_rubric("essay", "1.2.3")
    await store.rubrics.register(original)
    with pytest.raises(RubricVersionConflictError) as caught:
        await store.rubrics.register(make_rubric("essay", "1.2.3", note="edited"))
    message = str(caught.value)
    assert "'essay'" in message and "1.2.3" in message
    assert "bump the version" in message and "1.2.4" in message
    assert await store.rubrics.get("essay", "1.2.3") == original
    assert len(await store.rubrics.history("essay")) == 1


async def test_conflict_message_for_a_prerelease_suggests_a_valid_version(store: Store) -> None:
    await store.rubrics.register(make_rubric("essay", "2.0.0-rc.1"))
    with pytest.raises(RubricVersionConflictError, match="bump the version") as caught:
        await store.rubrics.register(make_rubric("essay", "2.0.0-rc.1", note="edited"))
    assert "2.0.0-rc.1" in str(caught.value) and "(e.g. to 2.0.0-rc.2)" in str(caught.value)


@pytest.mark.parametrize("order", ["ascending", "descending", "shuffled"])
async def test_latest_is_the_highest_semver_not_the_last_write(store: Store, order: str) -> None:
    versions = {
        "ascending": SEMVER_ORDER,
        "descending": SEMVER_ORDER[::-1],
        "shuffled": [SEMVER_ORDER[i] for i in (7, 2, 9, 0, 5, 8, 1, 6, 3, 4)],
    }[order]
    for version in versions:
        await store.rubrics.register(make_rubric("essay", version))
    assert (await store.rubrics.get("essay")).version == "1.10.0"
    assert [info.version for info in await store.rubrics.history("essay")] == SEMVER_ORDER
    assert [r.version for r in await store.rubrics.list_latest()] == ["1.10.0"]


async def test_prereleases_only_latest_is_the_highest_prerelease(store: Store) -> None:
    for version in ("1.0.0-rc.1", "1.0.0-alpha", "1.0.0-beta", "0.9.0"):
        await store.rubrics.register(make_rubric("essay", version))
    assert (await store.rubrics.get("essay")).version == "1.0.0-rc.1"


async def test_get_exact_version(store: Store) -> None:
    for version in ("1.0.0", "1.0.0-beta", "2.0.0"):
        await store.rubrics.register(make_rubric("essay", version))
    for version in ("1.0.0", "1.0.0-beta", "2.0.0"):
        got = await store.rubrics.get("essay", version)
        assert got.version == version
        assert got == make_rubric("essay", version)


async def test_not_found_messages_name_the_id(store: Store) -> None:
    with pytest.raises(NotFoundError, match="'ghost'"):
        await store.rubrics.get("ghost")
    with pytest.raises(NotFoundError, match="'ghost'"):
        await store.rubrics.get("ghost", "1.0.0")
    with pytest.raises(NotFoundError, match="'ghost'"):
        await store.rubrics.history("ghost")
    with pytest.raises(NotFoundError, match="'ghost'"):
        await store.rubrics.delete("ghost")
    await store.rubrics.register(make_rubric("essay", "1.0.0"))
    await store.rubrics.register(make_rubric("essay", "1.1.0"))
    with pytest.raises(NotFoundError) as caught:
        await store.rubrics.get("essay", "9.9.9")
    message = str(caught.value)
    assert "'essay'" in message and "9.9.9" in message and "1.0.0, 1.1.0" in message


async def test_list_latest_one_per_rubric_sorted_by_id(store: Store) -> None:
    await store.rubrics.register(make_rubric("zeta", "0.1.0"))
    await store.rubrics.register(make_rubric("alpha", "2.0.0"))
    await store.rubrics.register(make_rubric("alpha", "10.0.0"))
    await store.rubrics.register(make_rubric("mid", "1.0.0"))
    await store.rubrics.delete("mid")
    latest = await store.rubrics.list_latest()
    assert [(r.id, r.version) for r in latest] == [("alpha", "10.0.0"), ("zeta", "0.1.0")]


async def test_get_for_target_returns_latest_non_deleted_only(store: Store) -> None:
    # the dataknobs registry returned the oldest version here, and deleted rubrics too
    for version in ("2.0.0", "1.0.0", "1.5.0"):
        await store.rubrics.register(make_rubric("essay", version, target_type="doc"))
    await store.rubrics.register(make_rubric("gone", "1.0.0", target_type="doc"))
    await store.rubrics.delete("gone")
    await store.rubrics.register(make_rubric("code", "1.0.0", target_type="code"))
    await store.rubrics.register(make_rubric("moved", "1.0.0", target_type="doc"))
    await store.rubrics.register(make_rubric("moved", "2.0.0", target_type="code"))
    await store.rubrics.register(make_rubric("untyped", "1.0.0", target_type=None))
    found = await store.rubrics.get_for_target("doc")
    assert [(r.id, r.version) for r in found] == [("essay", "2.0.0")]
    code = await store.rubrics.get_for_target("code")
    assert [(r.id, r.version) for r in code] == [("code", "1.0.0"), ("moved", "2.0.0")]
    assert await store.rubrics.get_for_target("nothing") == []


async def test_delete_hides_but_keeps_every_version(store: Store) -> None:
    for version in ("1.0.0", "1.1.0-beta", "1.1.0"):
        await store.rubrics.register(make_rubric("essay", version))
    await store.rubrics.register(make_rubric("other", "1.0.0"))
    await store.rubrics.delete("essay")
    with pytest.raises(NotFoundError, match="'essay'"):
        await store.rubrics.get("essay")
    assert [r.id for r in await store.rubrics.list_latest()] == ["other"]
    assert await store.rubrics.get_for_target("essay") == [await store.rubrics.get("other")]
    for version in ("1.0.0", "1.1.0-beta", "1.1.0"):
        assert (await store.rubrics.get("essay", version)).version == version
    history = await store.rubrics.history("essay")
    assert [i.version for i in history] == ["1.0.0", "1.1.0-beta", "1.1.0"]
    assert all(info.deleted for info in history)
    await store.rubrics.delete("essay")  # deleting twice is harmless
    assert await scalar(store, "SELECT count(*) FROM rubric_versions") == 4


async def test_registering_a_new_version_after_delete_restores(store: Store) -> None:
    await store.rubrics.register(make_rubric("essay", "1.0.0"))
    await store.rubrics.delete("essay")
    result = await store.rubrics.register(make_rubric("essay", "1.1.0"))
    assert result.created
    assert (await store.rubrics.get("essay")).version == "1.1.0"
    assert [r.id for r in await store.rubrics.get_for_target("essay")] == ["essay"]
    assert not any(info.deleted for info in await store.rubrics.history("essay"))


async def test_history_records_source_format_and_time(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "essay.yaml"
    path.write_text(yaml.safe_dump(rubric_doc("essay", "1.0.0")))
    await store.rubrics.register_file(path)
    await store.rubrics.register(make_rubric("essay", "1.1.0"))
    first, second = await store.rubrics.history("essay")
    assert first.source_format == "native" and second.source_format is None
    assert first.created_at.tzinfo is not None and first.created_at <= second.created_at
    as_dict = first.to_dict()
    assert as_dict["id"] == "essay" and as_dict["version"] == "1.0.0"
    assert as_dict["deleted"] is False


async def test_register_file_stores_every_case_of_an_agentv_file(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(AGENTV_SUITE)
    results = await store.rubrics.register_file(path)
    assert [(r.rubric.id, r.created) for r in results] == [
        ("case-one", True),
        ("case-two", True),
        ("case-three", True),
    ]
    assert [r.id for r in await store.rubrics.list_latest()] == [
        "case-one",
        "case-three",
        "case-two",
    ]
    assert (await store.rubrics.history("case-two"))[0].source_format == "agentv"
    again = await store.rubrics.register_file(path)
    assert [r.created for r in again] == [False, False, False]


async def test_register_file_is_one_transaction(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(AGENTV_SUITE)
    # case-three's id and version are taken by other content: nothing from the file lands
    await store.rubrics.register(make_rubric("case-three", "1.0.0"))
    with pytest.raises(RubricVersionConflictError, match="case-three"):
        await store.rubrics.register_file(path)
    for missing in ("case-one", "case-two"):
        with pytest.raises(NotFoundError):
            await store.rubrics.history(missing)
    assert await scalar(store, "SELECT count(*) FROM rubric_versions") == 1
    assert await scalar(store, "SELECT count(*) FROM rubrics") == 1


async def test_register_config_of_many_rubrics(store: Store) -> None:
    config = {"rubrics": [rubric_doc(f"r{i}", f"1.{i}.0") for i in range(5)]}
    results = await store.rubrics.register_config(config)
    assert [r.rubric.id for r in results] == [f"r{i}" for i in range(5)]
    assert all(r.created for r in results)
    assert [(r.id, r.version) for r in await store.rubrics.list_latest()] == [
        (f"r{i}", f"1.{i}.0") for i in range(5)
    ]


async def test_register_config_with_one_conflict_stores_none(store: Store) -> None:
    await store.rubrics.register(make_rubric("r3", "1.3.0", note="first"))
    config = {"rubrics": [rubric_doc(f"r{i}", f"1.{i}.0") for i in range(5)]}
    with pytest.raises(RubricVersionConflictError, match="'r3'"):
        await store.rubrics.register_config(config)
    assert [r.id for r in await store.rubrics.list_latest()] == ["r3"]
    assert await scalar(store, "SELECT count(*) FROM rubric_versions") == 1


async def test_a_conflict_inside_one_batch_stores_none(store: Store) -> None:
    with pytest.raises(RubricVersionConflictError):
        await store.rubrics.register_many(
            [
                make_rubric("a", "1.0.0"),
                make_rubric("b", "1.0.0"),
                make_rubric("a", "1.0.0", note="x"),
            ]
        )
    assert await store.rubrics.list_latest() == []


async def test_concurrent_tasks_register_the_same_version(store: Store) -> None:
    rubric = make_rubric("essay", "3.0.0")
    results = await asyncio.gather(*(store.rubrics.register(rubric) for _ in range(8)))
    assert sum(r.created for r in results) == 1
    assert len(await store.rubrics.history("essay")) == 1


async def test_concurrent_tasks_with_different_content_one_wins(store: Store) -> None:
    rubrics = [make_rubric("essay", "3.0.0", note=f"variant {i}") for i in range(6)]
    outcomes = await asyncio.gather(
        *(store.rubrics.register(r) for r in rubrics), return_exceptions=True
    )
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    losers = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(winners) == 1 and winners[0].created
    assert len(losers) == 5
    assert all(isinstance(e, RubricVersionConflictError) for e in losers), losers
    assert await store.rubrics.get("essay") == winners[0].rubric


def _sql_log(store: Store) -> list[tuple[str, Any]]:
    """Every statement the store's engine sends from now on, with its parameters."""
    log: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        log.append((statement, params))

    sa.event.listen(store.database.engine.sync_engine, "before_cursor_execute", record)
    return log


async def test_latest_lookups_over_many_rubrics_versions_and_types(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = [*SEMVER_ORDER, "0.1.0", "2.0.0-rc.1", "2.0.0", "2.0.1", "10.0.0-alpha"]
    types = ["doc", "code", "chat", None]
    chance = random.Random(20260301)
    expected: dict[str, tuple[str, str | None]] = {}  # id -> latest (version, target type)
    registered: list[Any] = []
    for n in range(24):
        rubric_id = f"r{n:02d}"
        versions = chance.sample(pool, chance.randint(1, 7))
        # each version may target another type: "latest" decides which one counts
        typed = [(v, chance.choice(types)) for v in versions]
        registered += [make_rubric(rubric_id, v, target_type=t) for v, t in typed]
        expected[rubric_id] = max(typed, key=lambda pair: semver_key(pair[0]))
    chance.shuffle(registered)
    await store.rubrics.register_many(registered)
    for rubric_id in ("r03", "r11", "r17"):
        await store.rubrics.delete(rubric_id)
        del expected[rubric_id]

    # nothing parsed yet in this process: count the parses and the documents read
    monkeypatch.setattr(rubrics_module, "_parsed", {})
    parses: list[str] = []
    real_parse = rubrics_module.parse_rubric

    def counting_parse(document: Any) -> Any:
        parses.append(document["id"])
        return real_parse(document)

    monkeypatch.setattr(rubrics_module, "parse_rubric", counting_parse)
    log = _sql_log(store)

    latest = await store.rubrics.list_latest()
    assert [(r.id, r.version, r.target_type) for r in latest] == [
        (rid, version, target) for rid, (version, target) in sorted(expected.items())
    ]
    assert sorted(parses) == sorted(expected)  # only the winners were parsed...
    documents = [params for statement, params in log if "document" in statement]
    assert len(documents) == 1 and len(documents[0]) == 2 * len(expected)  # ...and read

    for target in ("doc", "code", "chat", "nothing"):
        log.clear()
        found = await store.rubrics.get_for_target(target)
        assert [(r.id, r.version) for r in found] == [
            (rid, version) for rid, (version, t) in sorted(expected.items()) if t == target
        ]
        assert all(r.target_type == target for r in found)
        assert [s for s, _ in log if "document" in s] == []  # parsed once, never read again
        # filtered in SQL, by target type (its index) and not deleted
        (query,) = [s for s, _ in log if "rubric_versions" in s]
        assert "target_type" in query.split("WHERE", 1)[1] and "deleted_at" in query
    for rubric_id, (version, _) in expected.items():
        assert (await store.rubrics.get(rubric_id)).version == version
    assert sorted(parses) == sorted(expected)

    # a fresh process (nothing parsed) reads only the winners among the target's rubrics
    monkeypatch.setattr(rubrics_module, "_parsed", {})
    log.clear()
    docs = await store.rubrics.get_for_target("doc")
    (read,) = [params for statement, params in log if "document" in statement]
    assert len(read) == 2 * len(docs)


async def test_build_metadata_ties_go_to_the_later_registration_then_the_version(
    store: Store,
) -> None:
    # semver ranks 1.0.0+a and 1.0.0+b equal: the one registered later is latest, and when
    # both were registered at the same instant, the higher version string; never row order
    await store.rubrics.register(make_rubric("essay", "1.0.0+b"))
    await store.rubrics.register(make_rubric("essay", "1.0.0+a"))
    await store.rubrics.register(make_rubric("essay", "1.0.0-rc.1+z"))

    async def set_time(version: str, minutes: int) -> None:
        async with store.database.transaction() as connection:
            await connection.execute(
                sa.text(
                    "UPDATE rubric_versions SET created_at = :at "
                    "WHERE rubric_id = 'essay' AND version = :version"
                ),
                {"at": T0 + timedelta(minutes=minutes), "version": version},
            )

    async def latest() -> tuple[str, str, list[str]]:
        (listed,) = await store.rubrics.list_latest()
        history = [info.version for info in await store.rubrics.history("essay")]
        return (await store.rubrics.get("essay")).version, listed.version, history

    await set_time("1.0.0+a", 1)
    await set_time("1.0.0+b", 0)
    assert await latest() == ("1.0.0+a", "1.0.0+a", ["1.0.0-rc.1+z", "1.0.0+b", "1.0.0+a"])
    await set_time("1.0.0+b", 2)
    assert await latest() == ("1.0.0+b", "1.0.0+b", ["1.0.0-rc.1+z", "1.0.0+a", "1.0.0+b"])
    await set_time("1.0.0+a", 2)  # the same instant: the version string decides
    assert await latest() == ("1.0.0+b", "1.0.0+b", ["1.0.0-rc.1+z", "1.0.0+a", "1.0.0+b"])
    await set_time("1.0.0-rc.1+z", 9)  # a later registration never beats higher precedence
    assert (await store.rubrics.get("essay")).version == "1.0.0+b"
    assert [r.version for r in await store.rubrics.get_for_target("essay")] == ["1.0.0+b"]
    with pytest.raises(NotFoundError, match=r"1\.0\.0-rc\.1\+z, 1\.0\.0\+a, 1\.0\.0\+b"):
        await store.rubrics.get("essay", "1.0.0+c")
