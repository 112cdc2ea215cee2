"""The worker poison test (issue 16): two worker processes, one poison rubric and 20 good
artifacts. The poison (a `matches_regex` whose backreference RE2 refuses, so it runs on
`regex` past its time limit) fails its review max-failures times and is dead-lettered,
never looping through leases; every good artifact is approved all the same; SIGTERM stops
both workers within their grace period, handing back the review that would outlive it.

And a check that spins (a JSON Schema whose `anyOf`s try 2**40 paths: it runs in the check
process pool, held to its wall-clock budget): while it spins, the workers' event loops
keep renewing the lease on short leases, so no review is taken over; each attempt is an
error naming the budget; SIGTERM during a spin stops both workers within their grace
period, and their pool processes with them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from rubricflow.plugins import create_plugin_manager
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store

from .checks_plugin import ReviewChecks
from .conftest import PYTHON, WORKER_SCRIPT, check, define, make_rubric, subprocess_env
from .test_workers import finish, wait_for

GOOD = 20
GRACE = 1.0
MAX_FAILURES = 3
# exponential on `regex` (a backreference, so RE2 refuses it), linear in nothing
POISON_PATTERN = r"^(a|a)+\1$"
POISON_CONTENT = "a" * 40 + "b"


def spawn(
    url: str,
    name: str,
    barrier: Path,
    markers: Path,
    *,
    lease: float = 30,
    max_failures: int = MAX_FAILURES,
    **env: str,
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *(PYTHON, str(WORKER_SCRIPT), "--db", url, "--name", name),
            *("--concurrency", "2", "--lease", str(lease), "--poll", "0.05"),
            *("--grace", str(GRACE), "--max-failures", str(max_failures)),
            *("--retry-delay", "0.1"),  # the poison is tried again at once
            *("--barrier", str(barrier), "--parties", "3", "--marker", str(markers)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # the slow essay's check is meant to outlive the grace period, not its budget
        env=subprocess_env(
            **{"RUBRICFLOW_REGEX_TIMEOUT": "0.2", "RUBRICFLOW_CHECK_TIMEOUT": "120", **env}
        ),
    )


def exponential_schema(depth: int = 40) -> dict[str, Any]:
    """Each level's anyOf tries both branches of the next: 2**depth validations of a
    number before it fails."""
    definitions: dict[str, Any] = {
        f"a{n}": {"anyOf": [{"$ref": f"#/$defs/a{n + 1}"}, {"$ref": f"#/$defs/a{n + 1}"}]}
        for n in range(depth)
    }
    definitions[f"a{depth}"] = {"type": "string"}
    return {"$defs": definitions, "$ref": "#/$defs/a0"}


def children(pid: int) -> set[int]:
    """The live child processes of `pid` (Linux)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found.update(int(c) for c in (task / "children").read_text().split())
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_two_workers_dead_letter_the_poison_approve_the_rest_and_stop_on_sigterm(
    db_url: str, tmp_path: Path
) -> None:
    barrier, markers = tmp_path / "barrier", tmp_path / "markers"
    barrier.mkdir()
    markers.mkdir()
    workers = [spawn(db_url, f"w{n}", barrier, markers) for n in range(2)]
    store = await Store.open(db_url)
    try:
        registry = ArtifactRegistry(
            store, plugins=create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
        )
        poison = make_rubric("poison", check("shape", "matches_regex", pattern=POISON_PATTERN))
        await define(registry, "code", poison)
        await define(registry, "reply", make_rubric("filled"))
        # a review that outlives the grace period: in flight when SIGTERM comes
        await define(
            registry, "essay", make_rubric("slow", check("s", "slow_non_empty", seconds=60))
        )
        bad = await registry.create("code", POISON_CONTENT, actor="bot")
        await registry.submit_for_review(bad.id, actor="bot", defer=True)
        good = []
        for n in range(GOOD):
            created = await registry.create("reply", f"a good reply {n}", actor="bot")
            await registry.submit_for_review(created.id, actor="bot", defer=True)
            good.append(created.id)
        slow = await registry.create("essay", "a long essay", actor="bot")
        await registry.submit_for_review(slow.id, actor="bot", defer=True)
        (barrier / "queue.ready").touch()

        seen: dict[str, Any] = {}

        async def settled() -> bool:
            statuses = [(await registry.get(a)).status for a in [*good, bad.id]]
            started = (markers / f"{slow.id}.started").exists()
            seen.update(statuses=statuses, slow_started=started)
            return started and statuses == ["approved"] * GOOD + ["dead_lettered"]

        try:
            await wait_for(settled, 60, "20 approvals, the poison dead-lettered, the slow review")
        except AssertionError as error:
            raise AssertionError(f"{error}: {seen}") from None
        poisoned = await registry.get(bad.id)
        assert poisoned.failures == MAX_FAILURES
        assert "dead-lettered after 3 failed reviews" in (poisoned.last_reason or "")
        # each attempt's criterion is an error naming the limit it ran past
        attempts = await registry.evaluations(bad.id)
        assert len(attempts) == MAX_FAILURES
        for attempt in attempts:
            (shape,) = attempt.criteria
            assert shape.status == "error" and "regex time limit" in shape.notes, shape
        assert [a.id for a in await registry.list_artifacts(status="dead_lettered")] == [bad.id]
        history = [e.trigger for e in await registry.history(bad.id)]
        assert history.count("start_review") == MAX_FAILURES  # no endless leases
        assert history[-1] == "dead_letter"

        signalled = time.monotonic()
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        results: list[dict[str, Any]] = await asyncio.gather(
            *(asyncio.to_thread(finish, worker, 30) for worker in workers)
        )
        # both within the grace period, plus the hand-back and the process's exit
        assert time.monotonic() - signalled < GRACE + 4
        assert sum(r["handed_back"] for r in results) == 1
        assert sum(r["approved"] for r in results) == GOOD
        back = await registry.get(slow.id)
        assert (back.status, back.lease_owner, back.failures) == ("pending_review", None, 0)
        assert await registry.claim_next(worker="next/0") is not None  # for another worker
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
        await store.close()


SPIN_BUDGET = 3.0
SHORT_LEASE = 2.0  # renewed every 0.67 s: a loop stalled by the spin would lose it


async def test_a_spinning_check_runs_in_the_pool_while_the_workers_renew_leases_and_stop(
    sqlite_url: str, tmp_path: Path
) -> None:
    barrier, markers = tmp_path / "barrier", tmp_path / "markers"
    barrier.mkdir()
    markers.mkdir()
    budget = {"RUBRICFLOW_CHECK_TIMEOUT": str(SPIN_BUDGET), "RUBRICFLOW_CHECK_WORKERS": "1"}
    workers = [
        spawn(sqlite_url, f"w{n}", barrier, markers, lease=SHORT_LEASE, max_failures=1, **budget)
        for n in range(2)
    ]
    store = await Store.open(sqlite_url)
    try:
        registry = ArtifactRegistry(
            store, plugins=create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
        )
        spinning = make_rubric(
            "spinning",
            {
                "id": "shape",
                "description": "the content has the shape",
                "scoring": {"method": "schema", "schema": exponential_schema()},
            },
            check("filled", "non_empty"),
        )
        await define(registry, "data", spinning)
        await define(registry, "reply", make_rubric("filled"))
        bad = await registry.create("data", {"n": 1}, actor="bot")
        await registry.submit_for_review(bad.id, actor="bot", defer=True)
        good = []
        for n in range(4):
            created = await registry.create("reply", f"a good reply {n}", actor="bot")
            await registry.submit_for_review(created.id, actor="bot", defer=True)
            good.append(created.id)
        (barrier / "queue.ready").touch()

        async def settled() -> bool:
            statuses = [(await registry.get(a)).status for a in [*good, bad.id]]
            return statuses == ["approved"] * len(good) + ["dead_lettered"]

        await wait_for(settled, 60, "the good replies approved, the spinner dead-lettered")
        (attempt,) = await registry.evaluations(bad.id)
        shape, filled = attempt.criteria
        assert shape.status == "error", shape
        assert shape.notes == (
            f"the schema check of 'shape' exceeded its wall-clock budget of {SPIN_BUDGET:g} "
            "s (RUBRICFLOW_CHECK_TIMEOUT); raise it or fix the check"
        )
        assert filled.status == "scored"  # the rest of the rubric still scored
        history = await registry.history(bad.id)
        # it spun longer than a lease, and no other worker took it over
        assert [e.trigger for e in history] == ["create", "submit", "start_review", "dead_letter"]
        assert "expired" not in (history[-1].reason or "")

        # SIGTERM while a check spins: both stop within their grace period
        again = await registry.create("data", {"n": 2}, actor="bot")
        await registry.submit_for_review(again.id, actor="bot", defer=True)

        async def spinning_now() -> bool:
            return (await registry.get(again.id)).status == "in_review"

        await wait_for(spinning_now, 30, "the second spinner in review")
        pool_processes = set().union(*(children(w.pid) for w in workers))
        assert pool_processes  # each worker started its pool with it
        signalled = time.monotonic()
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        results: list[dict[str, Any]] = await asyncio.gather(
            *(asyncio.to_thread(finish, worker, 30) for worker in workers)
        )
        assert time.monotonic() - signalled < GRACE + 4
        assert sum(r["handed_back"] for r in results) == 1
        assert sum(r["lost_races"] for r in results) == 0
        back = await registry.get(again.id)
        assert (back.status, back.lease_owner, back.failures) == ("pending_review", None, 0)
        assert not any(alive(pid) for pid in pool_processes)  # no pool process outlives them
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
        await store.close()
