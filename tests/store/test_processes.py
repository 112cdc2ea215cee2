"""Several processes on one store, on both backends: two opening a new database and
registering the same rubric versions at the same moment, and a writer (a real
sys.executable child) killed with SIGKILL in the middle of a batch."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from rubricflow.errors import RubricVersionConflictError
from rubricflow.store import Database, Store

from .conftest import PostgresServer, fetch, make_rubric, run_blocking, scalar

TESTS = Path(__file__).resolve().parents[1]

# The racers are forked (no interpreter start-up, so the suite stays fast) and meet at a
# multiprocessing.Barrier before each step, so they really do open and register at once.
_FORK = multiprocessing.get_context("fork")


def _racer(
    role: str, barrier: Any, urls: list[str], rounds: int, out: Path
) -> None:  # pragma: no cover - runs in the child
    async def race(tag: int, url: str, lines: list[dict[str, Any]]) -> None:
        barrier.wait(timeout=20)
        store = await Store.open(url)
        try:
            for n in range(rounds):
                # even rounds: identical content; odd rounds: each racer its own content
                note = "same" if n % 2 == 0 else f"from {role}"
                rubric = make_rubric(f"race-{n}", "1.0.0", note=note)
                barrier.wait(timeout=20)
                line: dict[str, Any] = {"url": tag, "round": n, "role": role}
                try:
                    line["created"] = (await store.rubrics.register(rubric)).created
                except RubricVersionConflictError as error:
                    line["conflict"] = str(error)
                lines.append(line)
        finally:
            await store.close()

    async def main() -> None:
        lines: list[dict[str, Any]] = []
        try:
            for tag, url in enumerate(urls):
                await race(tag, url, lines)
        except BaseException as error:
            lines.append({"error": f"{type(error).__name__}: {error}"})
            barrier.abort()  # release the other racer at once
        out.write_text("\n".join(json.dumps(line) for line in lines))

    asyncio.run(main())


def _race(tmp_path: Path, urls: list[str], rounds: int) -> list[dict[str, Any]]:
    barrier = _FORK.Barrier(2)
    outputs = {role: tmp_path / f"racer-{role}.jsonl" for role in ("a", "b")}
    racers = [
        _FORK.Process(target=_racer, args=(role, barrier, urls, rounds, out))
        for role, out in outputs.items()
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=60)
        if racer.is_alive():
            racer.kill()
    lines = [
        json.loads(line)
        for out in outputs.values()
        if out.exists()
        for line in out.read_text().splitlines()
    ]
    errors = [line["error"] for line in lines if "error" in line]
    assert not errors, errors
    assert [racer.exitcode for racer in racers] == [0, 0]
    assert len(lines) == 2 * rounds * len(urls)
    return lines


def _check_rounds(lines: list[dict[str, Any]], tag: int, rounds: int) -> None:
    for n in range(rounds):
        pair = [line for line in lines if line["url"] == tag and line["round"] == n]
        assert len(pair) == 2
        if n % 2 == 0:  # identical content: no error, exactly one of them stored it
            assert all("conflict" not in line for line in pair), pair
            assert sorted(line["created"] for line in pair) == [False, True], pair
        else:  # different content: one winner, one clear conflict
            winners = [line for line in pair if line.get("created") is True]
            losers = [line for line in pair if "conflict" in line]
            assert len(winners) == 1 and len(losers) == 1, pair
            assert "bump the version" in losers[0]["conflict"]


def test_two_processes_race_on_a_new_store(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two workers start on a new, empty store at once (both migrate it: one must wait for
    the other, not fail), then register the same rubric versions at the same moment."""
    rounds = 4
    if backend == "sqlite":
        urls = [f"sqlite+aiosqlite:///{tmp_path / f'new{i}.db'}" for i in range(2)]
    else:
        server: PostgresServer = request.getfixturevalue("pg_server")
        urls = [server.create_database() for _ in range(2)]
    try:
        lines = _race(tmp_path, urls, rounds)
        for tag, url in enumerate(urls):
            _check_rounds(lines, tag, rounds)
            run_blocking(_check_store(url, tag, rounds, lines))
    finally:
        if backend == "postgresql":
            for url in urls:
                server.drop_database(make_url(url).database or "")


async def _check_store(url: str, tag: int, rounds: int, lines: list[dict[str, Any]]) -> None:
    async with await Store.open(url) as store:
        assert await store.database.current_revision() == Database.head_revision()
        assert await scalar(store, "SELECT count(*) FROM alembic_version") == 1
        assert await scalar(store, "SELECT count(*) FROM rubric_versions") == rounds
        for n in range(1, rounds, 2):  # the stored content is the winner's
            (loser,) = [
                line
                for line in lines
                if line["url"] == tag and line["round"] == n and "conflict" in line
            ]
            (info,) = await store.rubrics.history(f"race-{n}")
            stored = await store.rubrics.get(f"race-{n}", "1.0.0")
            assert (
                stored.description == f"race-{n} 1.0.0 from {'b' if loser['role'] == 'a' else 'a'}"
            )
            assert info.content_hash == stored.content_hash
            assert stored.content_hash[:12] in loser["conflict"]


WRITER = textwrap.dedent(
    """
    import asyncio, sys

    sys.path.insert(0, sys.argv[1])
    from store.conftest import make_evaluation
    from rubricflow.store import Store

    url, batch = sys.argv[2], int(sys.argv[3])


    async def main():
        store = await Store.open(url)
        n = 0
        while True:
            items = [
                make_evaluation(f"b{n:04d}-{i:03d}", criteria=4, calls=2) for i in range(batch)
            ]
            print(f"begin {n}", flush=True)
            await store.evaluations.save_many(items)
            print(f"stored {n}", flush=True)
            n += 1


    asyncio.run(main())
    """
)

BATCH = 40


async def test_a_writer_killed_mid_batch_leaves_a_consistent_database(
    db_url: str, backend: str, tmp_path: Path
) -> None:
    async with await Store.open(db_url):
        pass
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    writer = subprocess.Popen(
        [sys.executable, str(script), str(TESTS), db_url, str(BATCH)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    stored = 0
    deadline = time.monotonic() + 30
    try:
        for line in writer.stdout:
            if line.startswith("stored"):
                stored += 1
            # kill it right after it starts a batch, once a few have landed
            if line.startswith("begin") and stored >= 4:
                time.sleep(0.01)
                os.kill(writer.pid, signal.SIGKILL)
                break
            assert time.monotonic() < deadline, "the writer is too slow"
    finally:
        writer.kill()
        writer.wait(timeout=10)
        writer.stdout.close()
        writer.stderr.close()  # type: ignore[union-attr]
    assert writer.returncode == -signal.SIGKILL

    if backend == "sqlite":
        path = make_url(db_url).database or ""
        with sqlite3.connect(path) as plain:
            assert plain.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert plain.execute("PRAGMA foreign_key_check").fetchall() == []
    async with await Store.open(db_url) as store:
        evaluations = await scalar(store, "SELECT count(*) FROM evaluations")
        assert evaluations >= 4 * BATCH
        assert evaluations % BATCH == 0, evaluations
        incomplete = await fetch(
            store,
            "SELECT e.id FROM evaluations e WHERE "
            "(SELECT count(*) FROM criterion_results c WHERE c.evaluation_id = e.id) != 4 "
            "OR (SELECT count(*) FROM llm_calls l WHERE l.evaluation_id = e.id) != 2",
        )
        assert incomplete == []
        assert await scalar(store, "SELECT count(*) FROM criterion_results") == 4 * evaluations
        assert await scalar(store, "SELECT count(*) FROM llm_calls") == 2 * evaluations
        orphans = await scalar(
            store,
            "SELECT count(*) FROM criterion_results c WHERE NOT EXISTS "
            "(SELECT 1 FROM evaluations e WHERE e.id = c.evaluation_id)",
        )
        assert orphans == 0
        batches = await fetch(
            store,
            "SELECT substr(id, 1, 5) AS batch, count(*) AS n FROM evaluations GROUP BY 1",
        )
        assert all(row.n == BATCH for row in batches)
        # the store stays usable
        from .conftest import make_evaluation

        await store.evaluations.save(make_evaluation("after-the-crash"))
        assert await store.evaluations.count() == evaluations + 1


def _opener(barrier: Any, paths: list[str], out: Path) -> None:  # pragma: no cover - child
    async def main() -> list[str]:
        failures = []
        for path in paths:
            barrier.wait(timeout=20)
            try:
                async with await Store.open(f"sqlite+aiosqlite:///{path}"):
                    pass
            except Exception as error:
                failures.append(f"{type(error).__name__}: {error}")
        return failures

    out.write_text(json.dumps(asyncio.run(main())))


def test_four_processes_opening_new_sqlite_files_at_once_all_succeed(tmp_path: Path) -> None:
    """SQLite refuses a journal-mode change that races another connection without waiting,
    and a database can be migrated between two reads: neither may fail a process that opens
    a new store at the same moment as others."""
    paths = [str(tmp_path / f"fresh{i}.db") for i in range(12)]
    barrier = _FORK.Barrier(4)
    outputs = [tmp_path / f"opener{i}.json" for i in range(4)]
    openers = [_FORK.Process(target=_opener, args=(barrier, paths, out)) for out in outputs]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(timeout=120)
    assert [opener.exitcode for opener in openers] == [0, 0, 0, 0]
    assert [json.loads(out.read_text()) for out in outputs] == [[], [], [], []]
    for path in paths:
        with sqlite3.connect(path) as plain:
            assert plain.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert plain.execute("SELECT count(*) FROM alembic_version").fetchone()[0] == 1


_LOCK_HOLDER = """
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.readline()
c.execute("ROLLBACK")
print("released", flush=True)
"""


async def test_a_transaction_cancelled_while_waiting_for_the_lock_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    """Another process holds SQLite's write lock; a transaction waiting for it is
    cancelled (a lease heartbeat stopped, a second Ctrl-C). The wait, already handed to
    aiosqlite's thread, still gets the lock once the other process lets go: it must be
    rolled back then, not left holding the lock on a pooled connection. So the other
    process can take the lock again, and this process's next transaction works."""
    path = tmp_path / "locked.db"
    database = await Database.open(f"sqlite+aiosqlite:///{path}")
    holder = subprocess.Popen(
        [sys.executable, "-c", _LOCK_HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "held"

        async def write() -> None:
            async with database.transaction() as connection:
                await connection.exec_driver_sql("SELECT 1")

        waiting = asyncio.create_task(write())
        await asyncio.sleep(0.3)
        waiting.cancel()
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await asyncio.sleep(0.2)

        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # nobody kept the lock
            other.execute("ROLLBACK")
        finally:
            other.close()
        async with database.transaction() as connection:
            assert (await connection.exec_driver_sql("SELECT 1")).scalar() == 1
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()
        await database.close()
