"""Two writers on one artifact: exactly one wins, the other gets a conflict (or an illegal
transition when the state moved on), and the history stays one consistent chain. Real
concurrent asyncio tasks on separate stores, and real processes."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rubricflow.errors import ArtifactConflictError, IllegalTransitionError
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store

from .conftest import HERE, PASS, PYTHON, assert_replays, doc_types, subprocess_env


@pytest.fixture
async def two_registries(
    db_url: str, review_plugins: Any
) -> AsyncIterator[tuple[ArtifactRegistry, ArtifactRegistry]]:
    """Two registries on two separate stores (engines, connections) of one database."""
    first, second = await Store.open(db_url), await Store.open(db_url)
    try:
        yield (
            ArtifactRegistry(first, plugins=review_plugins),
            ArtifactRegistry(second, plugins=review_plugins),
        )
    finally:
        await first.close()
        await second.close()


async def _awaiting(registry: ArtifactRegistry, count: int) -> list[str]:
    """`count` artifacts whose review passed and that wait for a human."""
    ids = []
    for _ in range(count):
        artifact = await registry.create("gated", PASS, actor="bot")
        outcome = await registry.submit_for_review(artifact.id, actor="bot")
        assert outcome.artifact.awaiting_approval
        ids.append(artifact.id)
    return ids


async def _check_one_decision(
    registry: ArtifactRegistry, artifact_id: str, winner_dest: str
) -> None:
    events = await registry.history(artifact_id)
    after_wait = events[[e.trigger for e in events].index("await_approval") + 1 :]
    assert len(after_wait) == 1, [e.trigger for e in after_wait]
    assert after_wait[0].dest == winner_dest
    artifact = await registry.get(artifact_id)
    assert artifact.status == winner_dest
    assert artifact.version == len(events)
    assert_replays(events, status=winner_dest, revision=1)


async def test_a_stale_writer_gets_a_conflict_error(
    two_registries: tuple[ArtifactRegistry, ArtifactRegistry],
) -> None:
    """A reads the artifact, B decides, A writes: A's write is refused as a conflict."""
    alice, bob = two_registries
    await doc_types(alice)
    [artifact_id] = await _awaiting(alice, 1)
    read, decided = asyncio.Event(), asyncio.Event()
    real_get = alice.repository.get

    async def get_then_wait(artifact_id: str, connection: Any = None) -> Any:
        if connection is not None:  # the read itself, inside its own transaction
            return await real_get(artifact_id, connection)
        artifact = await real_get(artifact_id)  # that transaction has ended here
        read.set()
        await decided.wait()
        return artifact

    alice.repository.get = get_then_wait  # type: ignore[method-assign]

    async def bob_decides() -> None:
        await read.wait()
        await bob.override(artifact_id, actor="bob", reason="ship it")
        decided.set()

    results = await asyncio.gather(
        alice.reject(artifact_id, actor="alice", reason="no"),
        bob_decides(),
        return_exceptions=True,
    )
    assert isinstance(results[0], ArtifactConflictError), results[0]
    assert "changed by another writer" in str(results[0])
    assert results[1] is None
    alice.repository.get = real_get  # type: ignore[method-assign]
    await _check_one_decision(alice, artifact_id, "approved")


async def test_concurrent_tasks_racing_on_decisions_leave_one_winner(
    two_registries: tuple[ArtifactRegistry, ArtifactRegistry],
) -> None:
    alice, bob = two_registries
    await doc_types(alice)
    ids = await _awaiting(alice, 15)
    kinds = set()
    for artifact_id in ids:
        results = await asyncio.gather(
            alice.reject(artifact_id, actor="alice", reason="no"),
            bob.approve(artifact_id, actor="bob", reason="yes"),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert len(errors) == 1, results
        assert isinstance(errors[0], (ArtifactConflictError, IllegalTransitionError)), errors
        kinds.add(type(errors[0]).__name__)
        winner = "rejected" if not isinstance(results[0], BaseException) else "approved"
        await _check_one_decision(alice, artifact_id, winner)
    assert kinds  # every round had a loser with a clear error


async def test_concurrent_revisions_leave_one_winner_and_a_conflict(
    two_registries: tuple[ArtifactRegistry, ArtifactRegistry],
) -> None:
    """Two writers revise one artifact read at the same version: one new revision, and
    the loser gets ArtifactConflictError (not the revision table's unique violation).
    Both name the version they read, as a client does (If-Match): however the two
    interleave (at once, or one after the other on a loaded machine), one wins."""
    alice, bob = two_registries
    await doc_types(alice)
    for round_ in range(10):
        artifact = await alice.create("doc", {"text": "first"}, actor="bot")
        read = artifact.version
        results = await asyncio.gather(
            *(
                writer.revise(
                    artifact.id,
                    {"text": name},
                    actor=name,
                    reason=f"{name[0]}{round_}",
                    expected_version=read,
                )
                for writer, name in ((alice, "alice"), (bob, "bob"))
            ),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert len(errors) == 1, results
        assert isinstance(errors[0], ArtifactConflictError), repr(errors[0])
        assert "reload it and retry" in str(errors[0])
        current = await alice.get(artifact.id)
        winner = results[1 - results.index(errors[0])]
        assert current.revision == 2
        assert current.content == winner.content  # type: ignore[union-attr]
        assert_replays(await alice.history(artifact.id), status="draft", revision=2)


async def test_concurrent_claims_give_each_review_one_owner(
    two_registries: tuple[ArtifactRegistry, ArtifactRegistry],
) -> None:
    alice, bob = two_registries
    await doc_types(alice)
    ids = []
    for _ in range(10):
        artifact = await alice.create("doc", PASS, actor="bot")
        await alice.submit_for_review(artifact.id, actor="bot", defer=True)
        ids.append(artifact.id)
    for artifact_id in ids[:5]:  # both claim the same artifact
        results = await asyncio.gather(
            alice.claim(artifact_id, worker="alice"),
            bob.claim(artifact_id, worker="bob"),
            return_exceptions=True,
        )
        won = [r for r in results if not isinstance(r, BaseException)]
        lost = [r for r in results if isinstance(r, BaseException)]
        assert len(won) == 1 and len(lost) == 1, results
        assert isinstance(lost[0], (ArtifactConflictError, IllegalTransitionError))
        assert (await alice.get(artifact_id)).lease_owner == won[0].lease_owner
    claims: list[Any] = []

    async def drain(registry: ArtifactRegistry, name: str) -> None:
        while True:
            try:
                claimed = await registry.claim_next(worker=name)
            except (ArtifactConflictError, IllegalTransitionError):
                continue
            if claimed is None:
                return
            claims.append(claimed.id)

    await asyncio.gather(drain(alice, "alice"), drain(bob, "bob"))
    assert sorted(claims) == sorted(ids[5:])
    for artifact_id in ids:
        events = await alice.history(artifact_id)
        assert [e.trigger for e in events].count("start_review") == 1
        assert_replays(events, status="in_review", revision=1)


def _race(url: str, tmp_path: Path, items: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the two racer processes over `items` ("A_ACTION/B_ACTION:ID")."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [
        subprocess.Popen(
            [PYTHON, str(HERE / "race_proc.py"), url, role, str(barrier), *items],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
        )
        for role in ("a", "b")
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=90)
        # SQLite: a busy database would surface here as "database is locked"
        assert proc.returncode == 0, err
        assert "locked" not in err, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results[0], results[1]


async def test_two_processes_racing_on_one_artifact_leave_one_winner(
    registry: ArtifactRegistry, db_url: str, tmp_path: Path
) -> None:
    """Process a rejects while process b approves; then both claim the same review."""
    await doc_types(registry)
    decided = await _awaiting(registry, 12)
    queued = []
    for _ in range(12):
        artifact = await registry.create("doc", PASS, actor="bot")
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)
        queued.append(artifact.id)
    items = [f"reject/approve:{i}" for i in decided] + [f"claim/claim:{i}" for i in queued]
    a, b = await asyncio.to_thread(_race, db_url, tmp_path, items)
    for artifact_id in decided + queued:
        outcomes = sorted([a[artifact_id], b[artifact_id]])
        assert outcomes[-1] == "won" and outcomes[0] != "won", outcomes
        assert outcomes[0] in ("ArtifactConflictError", "IllegalTransitionError"), outcomes
    for artifact_id in decided:
        winner = "rejected" if a[artifact_id] == "won" else "approved"
        await _check_one_decision(registry, artifact_id, winner)
    for artifact_id in queued:
        artifact = await registry.get(artifact_id)
        owner = "racer-a" if a[artifact_id] == "won" else "racer-b"
        assert (artifact.status, artifact.lease_owner) == ("in_review", owner)
        events = await registry.history(artifact_id)
        assert [e.trigger for e in events].count("start_review") == 1
        assert_replays(events, status="in_review", revision=1)
