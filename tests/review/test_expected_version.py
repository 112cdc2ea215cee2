"""Optimistic concurrency for callers that name the version they decided on (HTTP
`If-Match`): a stale version is refused with `PreconditionFailedError` and nothing is
written; two writers naming the same version leave one winner, the other refused the same
way, never a lost update. SQLite and PostgreSQL, concurrent tasks on separate stores."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from rubricflow.errors import PreconditionFailedError
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store

from .conftest import FAIL, PASS, assert_replays, doc_types, reach

Command = Callable[[ArtifactRegistry, str, int], Awaitable[Any]]

# each command on an existing artifact, with the state it is allowed in
COMMANDS: dict[str, tuple[str, Command]] = {
    "submit": (
        "draft",
        lambda r, a, v: r.submit_for_review(a, actor="bot", defer=True, expected_version=v),
    ),
    "revise": (
        "needs_revision",
        lambda r, a, v: r.revise(a, PASS, actor="bot", reason="fixed", expected_version=v),
    ),
    "withdraw": ("pending_review", lambda r, a, v: r.withdraw(a, actor="bot", expected_version=v)),
    "archive": ("draft", lambda r, a, v: r.archive(a, actor="carol", expected_version=v)),
    "reject": (
        "needs_revision",
        lambda r, a, v: r.reject(a, actor="carol", reason="no", expected_version=v),
    ),
    "override": (
        "needs_revision",
        lambda r, a, v: r.override(a, actor="carol", reason="fine", expected_version=v),
    ),
    "supersede": (
        "approved",
        lambda r, a, v: r.supersede(a, actor="carol", reason="newer", expected_version=v),
    ),
    "retry": ("dead_lettered", lambda r, a, v: r.retry(a, actor="carol", expected_version=v)),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
async def test_a_stale_version_is_refused_and_nothing_is_written(
    registry: ArtifactRegistry, name: str
) -> None:
    await doc_types(registry)
    state, command = COMMANDS[name]
    artifact_id = await reach(registry, state)
    before = await registry.get(artifact_id)
    events = await registry.history(artifact_id)

    with pytest.raises(PreconditionFailedError) as refused:
        await command(registry, artifact_id, before.version - 1)
    assert refused.value.current == before.version
    assert f"no longer at version {before.version - 1}" in str(refused.value)
    assert await registry.history(artifact_id) == events
    assert (await registry.get(artifact_id)).version == before.version

    # the current version is accepted
    await command(registry, artifact_id, before.version)
    assert (await registry.get(artifact_id)).version > before.version


async def test_approve_with_the_current_version_succeeds(registry: ArtifactRegistry) -> None:
    await doc_types(registry)
    created = await registry.create("gated", PASS, actor="bot")
    outcome = await registry.submit_for_review(created.id, actor="bot")
    assert outcome.artifact.awaiting_approval
    approved = await registry.approve(
        created.id, actor="carol", reason="ok", expected_version=outcome.artifact.version
    )
    assert approved.status == "approved"
    assert approved.version == outcome.artifact.version + 1


@pytest.fixture
async def two_registries(
    db_url: str, review_plugins: Any
) -> AsyncIterator[tuple[ArtifactRegistry, ArtifactRegistry]]:
    first, second = await Store.open(db_url), await Store.open(db_url)
    try:
        yield (
            ArtifactRegistry(first, plugins=review_plugins),
            ArtifactRegistry(second, plugins=review_plugins),
        )
    finally:
        await first.close()
        await second.close()


async def test_two_writers_naming_one_version_leave_one_winner(
    two_registries: tuple[ArtifactRegistry, ArtifactRegistry],
) -> None:
    """Both read version v and decide: one decision is written, the other is a 412-style
    refusal (whether it lost at the read or at the conditional write), and the history is
    one consistent chain: no lost update."""
    alice, bob = two_registries
    await doc_types(alice)
    for _ in range(10):
        artifact_id = await reach(alice, "needs_revision", content=FAIL)
        version = (await alice.get(artifact_id)).version
        results = await asyncio.gather(
            alice.reject(artifact_id, actor="alice", reason="no", expected_version=version),
            bob.revise(artifact_id, PASS, actor="bob", reason="fixed", expected_version=version),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert len(errors) == 1, results
        assert isinstance(errors[0], PreconditionFailedError), errors
        artifact = await alice.get(artifact_id)
        assert artifact.version == version + 1
        events = await alice.history(artifact_id)
        assert_replays(events, status=artifact.status, revision=artifact.revision)
