"""Live status across stores and processes (issue 17, item 6): a change committed through
one store is seen promptly through another (PostgreSQL: LISTEN/NOTIFY, well under any poll
interval; SQLite: the change feed's short poll), `events()` replays what a client missed
and then streams, a rolled-back transaction tells nobody, an idle worker with a long poll
interval wakes for a deferred submission, and the LISTEN connection's loss is survived.

Timing bounds are generous (a loaded CI machine): "promptly" is under half a second on
PostgreSQL and under two seconds on SQLite (a 0.2 s poll), against 30 s poll intervals.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rubricflow.errors import NotFoundError
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.review import ArtifactRegistry
from rubricflow.review.worker import Worker
from rubricflow.store import Store

from .checks_plugin import ReviewChecks
from .conftest import (
    HERE,
    PASS,
    PG_DEFAULT,
    PG_ENV,
    PYTHON,
    WORKER_SCRIPT,
    Recorder,
    doc_types,
    subprocess_env,
)

#: "promptly": well under what a missed wake-up costs (a 30 s wait or poll in each test),
#: with room for a loaded machine (CI runs beside other work: no test depends on speed)
PROMPT = {"postgresql": 5.0, "sqlite": 6.0}
EVENTS_SCRIPT = HERE / "events_proc.py"


@pytest.fixture
async def other(db_url: str) -> AsyncIterator[ArtifactRegistry]:
    """A second registry on a store of its own (its own engine and change feed), as another
    server process would have."""
    plugins = create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
    async with await Store.open(db_url) as store:
        registry = ArtifactRegistry(store, plugins=plugins)
        try:
            yield registry
        finally:
            await registry.aclose()


async def _ready(registry: ArtifactRegistry, artifact_id: str | None = None) -> Any:
    """Open a watch on `registry`'s change feed and wait until the feed watches."""
    watch = registry.live.watch(artifact_id)
    assert await registry.live.feed.wait_ready(), "the change feed never started watching"
    return watch


async def test_a_commit_through_one_store_wakes_a_waiter_on_another_promptly(
    registry: ArtifactRegistry, other: ArtifactRegistry, backend: str
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    with await _ready(other, artifact.id):
        waiting = asyncio.create_task(
            other.wait_for_change(artifact.id, after=artifact.version, timeout=30)
        )
        await asyncio.sleep(0.05)  # let it look once and start waiting
        assert not waiting.done()
        started = time.perf_counter()
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)
        committed = time.perf_counter()
        event = await asyncio.wait_for(waiting, 10)
        seen = time.perf_counter()
    assert event is not None
    assert (event.seq, event.trigger, event.dest) == (2, "submit", "pending_review")
    assert seen - committed < PROMPT[backend], f"seen {seen - started:.3f}s after the commit"


async def test_wait_for_change_returns_at_once_when_behind_and_none_on_timeout(
    registry: ArtifactRegistry, other: ArtifactRegistry
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot")  # 4 more events
    event = await other.wait_for_change(artifact.id, after=1, timeout=30)
    assert event is not None and event.seq == 2, "the next event after the one given"
    started = time.perf_counter()
    assert await other.wait_for_change(artifact.id, after=5, timeout=0.3) is None
    assert 0.25 < time.perf_counter() - started < 5
    with pytest.raises(NotFoundError, match="no artifact 'nope'"):
        await other.wait_for_change("nope", after=0, timeout=1)


async def test_events_replay_what_was_missed_then_stream_live_in_order(
    registry: ArtifactRegistry, other: ArtifactRegistry, backend: str
) -> None:
    await doc_types(registry)
    artifact = await registry.create("gated", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot")  # submit .. await_approval
    stream = other.events(artifact.id, after_seq=2)  # the client saw create and submit
    seen = [await asyncio.wait_for(anext(stream), 10) for _ in range(2)]
    assert [(e.seq, e.trigger) for e in seen] == [(3, "start_review"), (4, "await_approval")]
    following = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.05)
    assert not following.done(), "nothing new yet"
    await registry.approve(artifact.id, actor="alice", reason="good")
    committed = time.perf_counter()
    event = await asyncio.wait_for(following, 10)
    assert time.perf_counter() - committed < PROMPT[backend]
    await registry.revise(artifact.id, PASS, actor="bot", reason="again")
    await registry.archive(artifact.id, actor="alice")
    seen = [event, *[await asyncio.wait_for(anext(stream), 10) for _ in range(2)]]
    await stream.aclose()  # type: ignore[attr-defined]
    assert [(e.seq, e.trigger) for e in seen] == [
        (5, "approve"),
        (6, "revise"),
        (7, "archive"),
    ]
    assert [e.model_dump() for e in await registry.history(artifact.id)][4:] == [
        e.model_dump() for e in seen
    ]
    with pytest.raises(NotFoundError):
        await anext(other.events("nope"))


async def test_a_rolled_back_transition_wakes_nobody(
    registry: ArtifactRegistry, other: ArtifactRegistry, recorder: Recorder, backend: str
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    heard = len(recorder.heard)
    with await _ready(other) as watch:
        await asyncio.sleep(0.05)
        watch.clear()  # the feed's first "look again"
        context = registry._context
        with pytest.raises(RuntimeError, match="changed my mind"):
            async with context.repository.transaction() as tx:
                await tx.write_transition(artifact, context.change(artifact, "archive", actor="x"))
                raise RuntimeError("changed my mind")
        assert not await watch.wait(0.8), "a rolled-back change was announced"  # 4 SQLite polls
        assert len(recorder.heard) == heard
        assert [e.seq for e in await registry.history(artifact.id)] == [1]
        await registry.archive(artifact.id, actor="bot")
        assert await watch.wait(10), "the committed change was not seen"


async def test_an_idle_worker_with_a_long_poll_wakes_for_a_deferred_submission(
    registry: ArtifactRegistry, other: ArtifactRegistry, backend: str
) -> None:
    await doc_types(registry)
    worker = Worker(other, poll_interval=30, name="sleepy", concurrency=2)
    running = asyncio.create_task(worker.run())
    try:
        assert await other.live.feed.wait_ready()
        await asyncio.sleep(0.2)  # both slots looked once, found nothing and wait
        artifact = await registry.create("doc", PASS, actor="bot")
        started = time.perf_counter()
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)
        after = 2
        while True:
            event = await registry.wait_for_change(artifact.id, after=after, timeout=10)
            assert event is not None, "the worker never took the review"
            if event.dest == "approved":
                break
            after = event.seq
        # woken by the change feed, not by its 30 s poll: the bound is half the poll, so
        # the test holds on a loaded machine and still fails if only the poll wakes it
        assert time.perf_counter() - started < 15
    finally:
        worker.stop()
        await asyncio.wait_for(running, 10)
    assert worker.stats.approved == 1


async def test_a_worker_process_with_a_long_poll_wakes_for_a_deferred_submission(
    registry: ArtifactRegistry, db_url: str, backend: str
) -> None:
    """The same, with the worker in a process of its own."""
    await doc_types(registry)
    proc = subprocess.Popen(
        [PYTHON, str(WORKER_SCRIPT), "--db", db_url, "--name", "sleepy", "--poll", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == "ready"
        await asyncio.sleep(0.5)  # it looked once, found nothing and waits
        artifact = await registry.create("doc", PASS, actor="bot")
        started = time.perf_counter()
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)
        after = 2
        while True:
            event = await registry.wait_for_change(artifact.id, after=after, timeout=15)
            assert event is not None, "the worker process never took the review"
            if event.dest == "approved":
                break
            after = event.seq
        elapsed = time.perf_counter() - started
        assert elapsed < PROMPT[backend] + 1.0, f"{elapsed:.3f}s"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["approved"] == 1


async def test_a_watcher_in_another_process_sees_a_commit_promptly(
    registry: ArtifactRegistry, db_url: str, backend: str
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    proc = subprocess.Popen(
        [PYTHON, str(EVENTS_SCRIPT), "--db", db_url, "--artifact", artifact.id, "--after", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == "ready"
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)
        committed = time.time()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    seen = json.loads(out)
    assert seen["event"]["seq"] == 2 and seen["event"]["trigger"] == "submit"
    assert seen["seen_at"] - committed < PROMPT[backend]


async def test_the_listen_connection_dropping_is_survived(
    pg_url: str, review_plugins: PluginRegistry
) -> None:
    import asyncpg  # type: ignore[import-untyped]

    async with await Store.open(pg_url) as store_a, await Store.open(pg_url) as store_b:
        writer = ArtifactRegistry(store_a, plugins=review_plugins)
        plugins = create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
        watcher = ArtifactRegistry(store_b, plugins=plugins)
        try:
            await doc_types(writer)
            artifact = await writer.create("doc", PASS, actor="bot")
            feed = watcher.live.feed
            with await _ready(watcher, artifact.id):
                pid = feed.listener_pid
                assert pid is not None and feed.connections == 1
                admin = await asyncpg.connect(os.environ.get(PG_ENV, PG_DEFAULT))
                try:
                    assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
                finally:
                    await admin.close()
                # a change while the feed is down (or reconnecting) is still seen
                await writer.submit_for_review(artifact.id, actor="bot", defer=True)
                event = await watcher.wait_for_change(artifact.id, after=1, timeout=10)
                assert event is not None and event.trigger == "submit"
                deadline = time.monotonic() + 15
                while feed.connections < 2 or not feed.listening:
                    assert time.monotonic() < deadline, "the LISTEN connection never came back"
                    await feed.wait_ready(0.5)
                    await asyncio.sleep(0.01)
                assert feed.listener_pid not in (None, pid)
                # and, listening again, changes arrive promptly
                waiting = asyncio.create_task(
                    watcher.wait_for_change(artifact.id, after=2, timeout=30)
                )
                await asyncio.sleep(0.05)
                await writer.withdraw(artifact.id, actor="bot")
                committed = time.perf_counter()
                event = await asyncio.wait_for(waiting, 10)
                assert event is not None and event.trigger == "withdraw"
                assert time.perf_counter() - committed < PROMPT["postgresql"]
        finally:
            await watcher.aclose()
            await writer.aclose()


async def test_the_bus_wakes_waiters_in_this_process_at_once(
    registry: ArtifactRegistry, backend: str
) -> None:
    """On SQLite too, a change made in this process reaches its waiters without waiting
    for the poll: the bus's in-process wake-up."""
    registry.live.feed.poll_interval = 30  # only the bus can be quick enough
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    try:
        with await _ready(registry, artifact.id):
            waiting = asyncio.create_task(
                registry.wait_for_change(artifact.id, after=1, timeout=30)
            )
            await asyncio.sleep(0.05)
            await registry.archive(artifact.id, actor="bot")
            committed = time.perf_counter()
            event = await asyncio.wait_for(waiting, 10)
            assert event is not None and event.trigger == "archive"
            # the poll would take 30 s; the bound leaves a loaded machine its slack
            assert time.perf_counter() - committed < 5
    finally:
        await registry.aclose()
