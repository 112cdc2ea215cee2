"""Workers: `run(once=True)` reviews everything waiting; a worker process killed with
SIGKILL mid-review loses its lease and another worker finishes the review without
evaluating anything into the record twice; SIGTERM lets the review in flight finish;
several worker processes on one store review each artifact exactly once."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from rubricflow.hookspecs import hookimpl
from rubricflow.plugins import create_plugin_manager
from rubricflow.review import ArtifactRegistry
from rubricflow.review.worker import Worker
from rubricflow.store import Store
from rubricflow.store._sql import utcnow
from rubricflow.store.artifacts import Change, NewArtifact

from .checks_plugin import ReviewChecks
from .conftest import (
    FAIL,
    PASS,
    PYTHON,
    WORKER_SCRIPT,
    assert_replays,
    check,
    define,
    doc_types,
    make_rubric,
    subprocess_env,
    triggers,
)


def spawn_worker(url: str, name: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PYTHON, str(WORKER_SCRIPT), "--db", url, "--name", name, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout)
    # on SQLite, a writer kept out too long would show here as "database is locked"
    assert proc.returncode == 0, err
    assert "locked" not in err, err
    assert "Traceback" not in err, err
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


async def wait_for(condition: Any, timeout: float, what: str) -> None:
    """Poll `condition` until it holds; the pause between looks grows from 20 ms to
    250 ms, so a costly condition (a read per artifact) leaves the CPU to the worker
    processes it waits for on a two-core machine."""
    deadline = time.monotonic() + timeout
    pause = 0.02
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(pause)
        pause = min(pause * 1.5, 0.25)


async def rows(store: Store, query: str, **params: Any) -> list[Any]:
    async with store.database.engine.connect() as connection:
        return list((await connection.execute(sa.text(query), params)).all())


async def per_artifact(store: Store, query: str) -> Counter[str]:
    return Counter({row[0]: row[1] for row in await rows(store, query)})


# ----------------------------------------------------------------------- in process


async def test_run_once_reviews_everything_waiting_and_nothing_else(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    queued = {}
    for n in range(8):
        content = PASS if n % 3 else FAIL
        artifact = await registry.create("doc", content, actor="bot")
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)
        queued[artifact.id] = "approved" if n % 3 else "needs_revision"
    gated = await registry.create("gated", PASS, actor="bot")
    await registry.submit_for_review(gated.id, actor="bot", defer=True)
    draft = await registry.create("doc", PASS, actor="bot")

    stats = await Worker(registry, concurrency=3, poll_interval=0.05).run(once=True)

    assert stats.reviewed == 9
    assert stats.outcomes == {"approved": 5, "needs_revision": 3, "awaiting_approval": 1}
    for artifact_id, status in queued.items():
        artifact = await registry.get(artifact_id)
        assert artifact.status == status
        events = await registry.history(artifact_id)
        assert triggers(events).count("start_review") == 1
        assert_replays(events, status=status, revision=1)
    assert (await registry.get(gated.id)).awaiting_approval
    assert (await registry.get(draft.id)).status == "draft"
    assert await registry.list_artifacts(status="pending_review") == []
    # a second pass finds nothing to do
    assert (await Worker(registry, poll_interval=0.05).run(once=True)).reviewed == 0


async def test_a_worker_survives_a_human_deciding_during_its_review(
    store: Store,
) -> None:
    """A human overrides while the worker is still reviewing: the worker's outcome is not
    applied over the human's decision, and the worker carries on with the queue."""
    gate = asyncio.Event()
    entered = asyncio.Event()

    class Paused(ReviewChecks):
        async def slow_non_empty(self, target: Any, seconds: float = 0.0) -> bool:
            entered.set()
            await gate.wait()
            return True

    plugins = create_plugin_manager(plugins=[Paused()], load_entry_points=False)
    registry = ArtifactRegistry(store, plugins=plugins)
    await define(registry, "doc", make_rubric("slow", check("s", "slow_non_empty")))
    first = await registry.create("doc", PASS, actor="bot")
    second = await registry.create("doc", PASS, actor="bot")
    for artifact in (first, second):
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)
    worker = Worker(registry, poll_interval=0.05)
    running = asyncio.create_task(worker.run(once=True))
    await asyncio.wait_for(entered.wait(), 10)
    busy = (await registry.list_artifacts(status="in_review"))[0]
    await registry.reject(busy.id, actor="carol", reason="pulled by legal")
    gate.set()
    stats = await asyncio.wait_for(running, 10)
    assert (await registry.get(busy.id)).status == "rejected"
    assert triggers(await registry.history(busy.id))[-1] == "reject"
    other = first.id if busy.id == second.id else second.id
    assert (await registry.get(other)).status == "approved"
    assert stats.lost_races == 1
    assert stats.reviewed == 1


# ------------------------------------------------------------------- crash recovery


def rescuer_registry(store: Store, lease: float) -> ArtifactRegistry:
    """The registry of the process that takes a killed review over: its slow check is
    instant, and its claims hold `lease` seconds."""
    checks = ReviewChecks(slow_factor=0.0)
    return ArtifactRegistry(
        store,
        plugins=create_plugin_manager(plugins=[checks], load_entry_points=False),
        lease_seconds=lease,
    )


async def test_a_worker_killed_mid_review_is_taken_over_after_its_lease(
    db_url: str, tmp_path: Path
) -> None:
    """The worker process evaluates `quick` (stored) and sleeps inside `slow` when it is
    killed. Until its lease expires nobody touches the review; then another worker
    finishes it, reusing the stored `quick` evaluation."""
    lease = 3.0
    store = await Store.open(db_url)
    try:
        registry = rescuer_registry(store, lease)
        await store.rubrics.register(make_rubric("quick", check("q", "non_empty")))
        await store.rubrics.register(make_rubric("slow", check("s", "slow_non_empty", seconds=60)))
        await define(registry, "doc", "quick", "slow")
        artifact = await registry.create("doc", PASS, actor="bot")
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)

        markers = tmp_path / "markers"
        markers.mkdir()
        doomed = spawn_worker(
            db_url, "doomed", "--once", "--lease", str(lease), "--marker", str(markers)
        )
        try:

            async def quick_stored() -> bool:
                started = (markers / f"{artifact.id}.started").exists()
                stored = await registry.evaluations(artifact.id)
                return started and len(stored) == 1

            await wait_for(quick_stored, 30, "the doomed worker to be mid-review")
        finally:
            doomed.send_signal(signal.SIGKILL)
            doomed.communicate(timeout=10)
        assert doomed.returncode == -signal.SIGKILL
        [quick] = await registry.evaluations(artifact.id)
        assert quick.rubric_id == "quick"

        stranded = await registry.get(artifact.id)
        assert (stranded.status, stranded.lease_owner) == ("in_review", "doomed/0")
        assert stranded.lease_expires_at is not None
        # while the lease holds, a worker leaves the review alone
        rescuer = Worker(registry, name="rescuer", poll_interval=0.05)
        early = (await rescuer.run(once=True)).reviewed
        if time.time() < stranded.lease_expires_at.timestamp() - 0.2:  # (a very slow box)
            assert early == 0
            assert (await registry.get(artifact.id)).lease_owner == "doomed/0"

        wait = (stranded.lease_expires_at.timestamp() - time.time()) + 0.1
        await asyncio.sleep(max(wait, 0))
        stats = await Worker(registry, name="rescuer", poll_interval=0.05).run(once=True)
        assert early + stats.reviewed == 1

        done = await registry.get(artifact.id)
        assert done.status == "approved"
        assert await registry.list_artifacts(status="in_review") == []
        events = await registry.history(artifact.id)
        assert [(e.trigger, e.actor) for e in events[2:]] == [
            ("start_review", "doomed/0"),
            ("abort_review", "rubricflow"),
            ("start_review", "rescuer/0"),
            ("approve", "rubricflow"),
        ]
        assert "lease of doomed/0 expired" in (events[3].reason or "")
        assert_replays(events, status="approved", revision=1)
        # one stored evaluation per rubric for the revision; quick's is the doomed one's
        stored = await registry.evaluations(artifact.id, 1)
        assert Counter(e.rubric_id for e in stored) == {"quick": 1, "slow": 1}
        assert quick.id in events[-1].evaluation_ids
        assert set(events[-1].evaluation_ids) == {e.id for e in stored}
    finally:
        await store.close()


async def test_a_submitter_killed_mid_review_is_taken_over_after_its_lease(
    db_url: str, tmp_path: Path
) -> None:
    """The submitting process reviews inline and is killed inside the slow check. Its
    submit and claim were committed together, so the review is held under its lease
    (`inline-PID`), never queued unclaimed; once the lease runs out a worker finishes it."""
    lease = 3.0
    store = await Store.open(db_url)
    try:
        registry = rescuer_registry(store, lease)
        await store.rubrics.register(make_rubric("slow", check("s", "slow_non_empty", seconds=60)))
        await define(registry, "doc", "slow")
        artifact = await registry.create("doc", PASS, actor="bot")

        markers = tmp_path / "markers"
        markers.mkdir()
        doomed = spawn_worker(
            db_url,
            "submitter",
            "--submit",
            artifact.id,
            "--lease",
            str(lease),
            "--marker",
            str(markers),
        )
        try:

            async def evaluating() -> bool:
                return (markers / f"{artifact.id}.started").exists()

            await wait_for(evaluating, 30, "the submitter to be mid-review")
        finally:
            doomed.send_signal(signal.SIGKILL)
            doomed.communicate(timeout=10)
        assert doomed.returncode == -signal.SIGKILL

        stranded = await registry.get(artifact.id)
        owner = f"inline-{doomed.pid}"
        assert (stranded.status, stranded.lease_owner) == ("in_review", owner)
        assert stranded.lease_expires_at is not None
        wait = (stranded.lease_expires_at.timestamp() - time.time()) + 0.1
        await asyncio.sleep(max(wait, 0))
        stats = await Worker(registry, name="rescuer", poll_interval=0.05).run(once=True)
        assert stats.reviewed == 1

        events = await registry.history(artifact.id)
        assert [(e.trigger, e.actor) for e in events] == [
            ("create", "bot"),
            ("submit", "submitter"),
            ("start_review", owner),
            ("abort_review", "rubricflow"),
            ("start_review", "rescuer/0"),
            ("approve", "rubricflow"),
        ]
        assert f"lease of {owner} expired" in (events[3].reason or "")
        assert_replays(events, status="approved", revision=1)
    finally:
        await store.close()


async def test_sigterm_lets_the_review_in_flight_finish(sqlite_url: str, tmp_path: Path) -> None:
    store = await Store.open(sqlite_url)
    try:
        registry = ArtifactRegistry(
            store, plugins=create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
        )
        await define(registry, "doc", make_rubric("slow", check("s", "slow_non_empty", seconds=1)))
        artifact = await registry.create("doc", PASS, actor="bot")
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)
        markers = tmp_path / "markers"
        markers.mkdir()
        worker = spawn_worker(sqlite_url, "polite", "--poll", "0.05", "--marker", str(markers))

        async def started() -> bool:
            return (markers / f"{artifact.id}.started").exists()

        await wait_for(started, 30, "the review to start")
        worker.send_signal(signal.SIGTERM)
        stats = await asyncio.to_thread(finish, worker, 30)
        assert stats["reviewed"] == 1
        done = await registry.get(artifact.id)
        assert (done.status, done.lease_owner) == ("approved", None)
        assert triggers(await registry.history(artifact.id))[-2:] == ["start_review", "approve"]
    finally:
        await store.close()


async def test_sigterm_hands_back_what_outlives_the_grace_period(
    sqlite_url: str, tmp_path: Path
) -> None:
    """A review that would run 60 s: SIGTERM with a 1 s grace period stops the worker within
    it, and the review goes back to the queue (not a failure) for another worker."""
    store = await Store.open(sqlite_url)
    try:
        registry = ArtifactRegistry(
            store, plugins=create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
        )
        await define(registry, "doc", make_rubric("slow", check("s", "slow_non_empty", seconds=60)))
        artifact = await registry.create("doc", PASS, actor="bot")
        await registry.submit_for_review(artifact.id, actor="bot", defer=True)
        markers = tmp_path / "markers"
        markers.mkdir()
        worker = spawn_worker(
            sqlite_url, "brief", "--poll", "0.05", "--marker", str(markers), "--grace", "1"
        )

        async def started() -> bool:
            return (markers / f"{artifact.id}.started").exists()

        await wait_for(started, 30, "the review to start")
        signalled = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        stats = await asyncio.to_thread(finish, worker, 30)
        assert time.monotonic() - signalled < 6  # the grace period, plus the hand-back
        assert (stats["reviewed"], stats["handed_back"]) == (0, 1)
        back = await registry.get(artifact.id)
        assert (back.status, back.lease_owner, back.failures) == ("pending_review", None, 0)
        events = await registry.history(artifact.id)
        assert [e.trigger for e in events][-2:] == ["start_review", "abort_review"]
        assert "grace period ran out" in (events[-1].reason or "")
        # another worker takes it at once (no retry delay)
        assert await registry.claim_next(worker="next/0") is not None
    finally:
        await store.close()


# ---------------------------------------------------------------- many processes


async def _queue(registry: ArtifactRegistry, count: int) -> dict[str, str]:
    """`count` queued artifacts; every 4th fails its review. Returns id -> expected status.

    Written in one transaction through the artifact repository (the same writes `create`
    and `submit_for_review(defer=True)` make), which is several times faster than the
    service's one-by-one calls; those are tested on their own."""
    await doc_types(registry)
    expected: dict[str, str] = {}
    repository, lifecycle = registry.repository, registry.lifecycle
    async with repository.transaction() as tx:
        for n in range(count):
            artifact_id = f"a{n:04d}"
            content = FAIL if n % 4 == 0 else PASS
            await tx.insert(
                NewArtifact(
                    artifact_id=artifact_id,
                    type_name="doc",
                    content=content,
                    actor="bot",
                    title=None,
                    metadata={},
                    trigger="create",
                    state=lifecycle.initial_state,
                    revision_state=lifecycle.new_revision_state,
                )
            )
            await tx.write_transition(
                await tx.get(artifact_id),
                Change(
                    trigger="submit",
                    dest="pending_review",
                    actor="bot",
                    reason="submitted",
                    queued_at=utcnow(),
                ),
            )
            expected[artifact_id] = "needs_revision" if n % 4 == 0 else "approved"
    assert len(await registry.list_artifacts(status="pending_review", limit=1000)) == count
    return expected


async def _check_each_reviewed_once(
    registry: ArtifactRegistry, expected: dict[str, str], results: list[dict[str, Any]]
) -> None:
    store = registry.store
    assert sum(r["reviewed"] for r in results) == len(expected)
    assert all(r["errors"] == 0 for r in results), results
    assert all(r["reviewed"] > 0 for r in results), f"a worker did nothing: {results}"
    statuses = {row.id: row.status for row in await rows(store, "SELECT id, status FROM artifacts")}
    assert statuses == expected
    starts = await per_artifact(
        store,
        "SELECT artifact_id, count(*) FROM artifact_events "
        "WHERE trigger = 'start_review' GROUP BY artifact_id",
    )
    assert set(starts) == set(expected)
    assert set(starts.values()) == {1}, "some artifact was reviewed twice"
    aborts = await rows(
        store, "SELECT count(*) FROM artifact_events WHERE trigger = 'abort_review'"
    )
    assert aborts[0][0] == 0
    evaluations = await per_artifact(
        store, "SELECT artifact_id, count(*) FROM evaluations GROUP BY artifact_id"
    )
    assert set(evaluations) == set(expected)
    assert set(evaluations.values()) == {1}
    decisions = await rows(
        store,
        "SELECT artifact_id, count(*) FROM artifact_events "
        "WHERE trigger IN ('approve', 'request_revision') GROUP BY artifact_id",
    )
    assert {row[1] for row in decisions} == {1}
    assert len(decisions) == len(expected)
    for artifact_id in list(expected)[:20]:
        events = await registry.history(artifact_id)
        assert_replays(events, status=expected[artifact_id], revision=1)


async def _many_workers(url: str, tmp_path: Path, workers: int, count: int) -> None:
    store = await Store.open(url)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    # the workers start (and import) while the queue fills; all go at once when it is full
    procs = [
        spawn_worker(
            url,
            f"w{n}",
            "--once",
            "--concurrency",
            "2",
            "--lease",
            "60",
            "--barrier",
            str(barrier),
            "--parties",
            str(workers + 1),
        )
        for n in range(workers)
    ]
    try:
        registry = ArtifactRegistry(
            store, plugins=create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
        )
        expected = await _queue(registry, count)
        (barrier / "queue.ready").touch()
        results = [await asyncio.to_thread(finish, proc, 120) for proc in procs]
        await _check_each_reviewed_once(registry, expected, results)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        await store.close()


async def test_three_worker_processes_on_postgresql_review_300_artifacts_once_each(
    pg_url: str, tmp_path: Path
) -> None:
    await _many_workers(pg_url, tmp_path, workers=3, count=300)


async def test_two_worker_processes_on_one_sqlite_file_review_300_artifacts_once_each(
    sqlite_url: str, tmp_path: Path
) -> None:
    await _many_workers(sqlite_url, tmp_path, workers=2, count=300)


class _HeldCheck:
    """A check function (`held`) that waits until the test releases it: a review that
    lasts exactly as long as the test needs, however fast the machine is."""

    __name__ = "held-check"

    def __init__(self) -> None:
        self.release = asyncio.Event()

    @hookimpl
    def rubricflow_check_functions(self) -> Mapping[str, Callable[..., Any]]:
        return {"held": self.held}

    async def held(self, target: Any) -> bool:
        await self.release.wait()
        return True


async def test_a_review_longer_than_its_lease_keeps_it(db_url: str) -> None:
    """The reviewing process renews its lease while it works, so a second worker does not
    take over a live review whose first lease period has run out.

    The review is held open until the first lease has run out and the rival has tried
    twice, each try just after the test saw a renewal: no fixed sleep has to outlast
    anything, and a busy machine only makes the test wait longer (the lease is 3 s, so a
    renewal, due every 1 s, has 2 s of slack)."""
    lease = 3.0
    store = await Store.open(db_url)
    try:
        gate = _HeldCheck()
        plugins = create_plugin_manager(plugins=[gate], load_entry_points=False)
        reviewer = ArtifactRegistry(store, plugins=plugins, lease_seconds=lease)
        rival = ArtifactRegistry(store, plugins=plugins, lease_seconds=lease)
        await define(reviewer, "doc", make_rubric("held", check("h", "held")))
        artifact = await reviewer.create("doc", PASS, actor="bot")
        await reviewer.submit_for_review(artifact.id, actor="bot", defer=True)
        claimed = await reviewer.claim(artifact.id, worker="first")
        first_expiry = claimed.lease_expires_at
        assert first_expiry is not None
        review = asyncio.create_task(reviewer.finish_review(claimed))
        takeovers: list[Any] = []
        seen, deadline = first_expiry, time.monotonic() + 120
        while len(takeovers) < 2:
            assert time.monotonic() < deadline, "the lease was not renewed in two minutes"
            assert not review.done(), "the review ended while it was held"
            await asyncio.sleep(0.05)
            expiry = (await reviewer.get(artifact.id)).lease_expires_at
            assert expiry is not None
            if expiry > seen:  # just renewed
                seen = expiry
                if utcnow() > first_expiry:  # and the first lease period is over
                    takeovers.append(await rival.claim_next(worker="second"))
        gate.release.set()
        outcome = await asyncio.wait_for(review, 120)
        assert takeovers == [None, None]
        assert outcome.artifact.status == "approved"
        assert triggers(await reviewer.history(artifact.id)).count("start_review") == 1
    finally:
        await store.close()
