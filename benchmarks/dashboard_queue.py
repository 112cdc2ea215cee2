"""The review queue page's server time with 10,000 artifacts in the store against 100
(issue 18, Performance: bar at most 1.5x).

The server is the real dashboard app (`create_app`, `--no-auth`, no review worker),
driven in-process through httpx's ASGI transport, so the figure is the server's own work
for `GET /ui/queue` (routing, the keyset page and the counts in SQL, the template) with
no network or client in it. The store holds N artifacts of one type, as a deployment's
would: near half of them decided (approved, rejected, archived) and half waiting in the
queue's states (awaiting approval, needs revision, dead-lettered, incomplete, in
review), written straight into the artifacts table (the queue reads nothing else). Each
size is timed over a few hundred requests after a warm-up; the figure is the median.
The bar covers the whole queue and the queue filtered to one state, each against its
100-artifact twin; a later page of the big queue (the keyset cursor) is reported against
its first page. SQLite always; PostgreSQL when $RUBRICFLOW_BENCH_PG
answers (a scratch database is made and dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from benchmarks.store_throughput import _drop, _postgres_url
from rubricflow.application import Application
from rubricflow.server.app import create_app
from rubricflow.server.settings import ServerSettings
from rubricflow.store.artifacts import ArtifactType
from rubricflow.store.tables import ArtifactRow, CriterionResultRow, EvaluationRow

SMALL, LARGE = 100, 10_000
REQUESTS, QUICK_REQUESTS = 300, 60
WARMUP = 20
BAR = 1.5
#: the pages held to the bar, and those reported beside them
BARRED = ("all", "one_state", "by_score", "by_margin")
REPORTED = ("failed_criterion",)
TYPE = "bench-post"

#: (status, awaiting_approval, failures, share of the store): 45% decided, 55%
#: waiting, so that the 100-artifact store still fills a page (50 rows) and a second one
MIX = (
    ("approved", False, 0, 0.25),
    ("rejected", False, 0, 0.10),
    ("archived", False, 0, 0.10),
    ("in_review", True, 0, 0.15),  # awaiting approval
    ("needs_revision", False, 0, 0.12),
    ("dead_lettered", False, 3, 0.03),
    ("pending_review", False, 1, 0.05),  # incomplete
    ("in_review", False, 0, 0.05),
    ("pending_review", False, 0, 0.15),
)


def _rows(count: int) -> list[dict[str, Any]]:
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rows = []
    cumulative = []
    total = 0.0
    for entry in MIX:
        total += entry[3]
        cumulative.append((total, entry))
    for index in range(count):
        fraction = (index * 7919 % count) / count  # spread the states over time
        status, awaiting, failures, _ = next(e for c, e in cumulative if fraction < c)
        when = start + timedelta(seconds=index * 37)
        rows.append(
            {
                "id": f"a{index:06d}",
                "type": TYPE,
                "status": status,
                "revision": 1,
                "version": 3,
                "title": f"Post {index}",
                "metadata_json": "{}",
                "created_by": f"bot-{index % 7}",
                "created_at": when,
                "updated_at": when + timedelta(seconds=5),
                "queued_at": when if status in {"pending_review", "in_review"} else None,
                "awaiting_approval": awaiting,
                "failures": failures,
                "last_reason": "ok" if status == "approved" else None,
                # the latest evaluation's score and |margin|, as a review writes them
                "review_score": _score(index),
                "review_margin": abs(_score(index) - 0.8),
            }
        )
    return rows


def _score(index: int) -> float:
    """Artifact `index`'s evaluation score, spread over [0, 1]."""
    return (index * 37 % 101) / 100


#: the criteria of each artifact's evaluation; one in four artifacts fails "polite"
CRITERIA = ("filled", "polite", "long")


def _evaluations(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One evaluation of each artifact's revision (its score spread over [0, 1]) and its
    criterion rows, as a review stores them: the queue's score, margin and failed-criterion
    columns read these."""
    evaluations, criteria = [], []
    for index, row in enumerate(rows):
        score = _score(index)
        evaluation_id = f"e{index:06d}"
        evaluations.append(
            {
                "id": evaluation_id,
                "rubric_id": "bench",
                "rubric_version": "1.0.0",
                "rubric_hash": "0" * 64,
                "target_id": row["id"],
                "target_hash": "0" * 64,
                "artifact_id": row["id"],
                "revision": 1,
                "verdict": "pass" if score >= 0.8 else "fail",
                "passed": score >= 0.8,
                "score": score,
                "scaled_score": score,
                "raw_score": score,
                "coverage": 1.0,
                "threshold": 0.8,
                "unscored_policy": "fail",
                "feedback": "",
                "created_at": row["created_at"],
                "document": "{}",
                "margin": score - 0.8,
            }
        )
        for position, criterion in enumerate(CRITERIA):
            passed = not (criterion == "polite" and index % 4 == 0)
            criteria.append(
                {
                    "evaluation_id": evaluation_id,
                    "criterion_id": criterion,
                    "position": position,
                    "status": "scored",
                    "score": 1.0 if passed else 0.0,
                    "passed": passed,
                    "weight": 1.0,
                    "required": False,
                    "scorer": "deterministic",
                    "notes": "",
                    "evidence": "[]",
                }
            )
    return evaluations, criteria


async def _fill(url: str, count: int) -> None:
    async with await Application.open(url) as app:
        await app.artifacts.set_type(ArtifactType(name=TYPE, rubrics=(), requires_approval=True))
        rows = _rows(count)
        evaluations, criteria = _evaluations(rows)
        async with app.store.database.transaction() as connection:
            for table, values in (
                (ArtifactRow.__table__, rows),  # type: ignore[attr-defined]
                (EvaluationRow.__table__, evaluations),  # type: ignore[attr-defined]
                (CriterionResultRow.__table__, criteria),  # type: ignore[attr-defined]
            ):
                for start in range(0, len(values), 1000):
                    await connection.execute(sa.insert(table), values[start : start + 1000])
    if url.startswith("postgresql"):
        # what autovacuum does to a table soon after a bulk insert: the visibility map
        # (index-only scans for the counts) and the planner's statistics
        import asyncpg

        connection = await asyncpg.connect(url)
        try:
            await connection.execute("VACUUM ANALYZE")
        finally:
            await connection.close()


async def _client(stack: contextlib.AsyncExitStack, url: str) -> httpx.AsyncClient:
    app = create_app(ServerSettings(db=url, auth=False, review_workers=0, webhooks=False))
    await stack.enter_async_context(app.router.lifespan_context(app))
    return await stack.enter_async_context(
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
    )


async def _second_page(client: httpx.AsyncClient) -> str:
    first = await client.get("/ui/queue")
    assert first.status_code == 200, first.text[:500]
    found = re.search(r'href="/ui/queue\?([^"]*after=[^"]+)" rel="next"', first.text)
    assert found, "the first page has no next page"
    return "/ui/queue?" + found.group(1).replace("&amp;", "&")


async def _timed(client: httpx.AsyncClient, path: str) -> float:
    began = time.perf_counter()
    response = await client.get(path)
    elapsed = time.perf_counter() - began
    assert response.status_code == 200
    return elapsed


async def _backend(make_url: Any, requests: int) -> dict[str, Any]:
    """Both stores served side by side, their requests interleaved (small, large, small,
    ...), so that whatever else the machine does weighs on both alike."""
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for count in (SMALL, LARGE):
            url = await stack.enter_async_context(make_url(count))
            await _fill(url, count)
            clients[count] = await _client(stack, url)
        paths = {
            "all": {n: "/ui/queue" for n in clients},
            "one_state": {n: "/ui/queue?bucket=needs_revision" for n in clients},
            "by_score": {n: "/ui/queue?order=score" for n in clients},
            "by_margin": {n: "/ui/queue?order=margin" for n in clients},
            "failed_criterion": {n: "/ui/queue?criterion=polite" for n in clients},
            "next_page": {LARGE: await _second_page(clients[LARGE])},
        }
        figures: dict[str, dict[str, float]] = {str(n): {} for n in clients}
        for name, by_count in paths.items():
            spent: dict[int, list[float]] = {n: [] for n in by_count}
            for index in range(WARMUP + requests):
                for count, path in by_count.items():
                    elapsed = await _timed(clients[count], path)
                    if index >= WARMUP:
                        spent[count].append(elapsed)
            for count, values in spent.items():
                figures[str(count)][name] = statistics.median(values) * 1000
    small, large = figures[str(SMALL)], figures[str(LARGE)]
    ratios = {name: large[name] / small[name] for name in (*BARRED, *REPORTED)}
    # a later page of the big queue against its first page (keyset: page N costs page 1)
    ratios["next_page_vs_first"] = large["next_page"] / large["all"]
    return {"ms": figures, "ratio": ratios}


@contextlib.asynccontextmanager
async def _sqlite(count: int) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite+aiosqlite:///{Path(folder) / f'queue-{count}.db'}"


@contextlib.asynccontextmanager
async def _postgresql(count: int) -> Any:
    made = await _postgres_url()
    if made is None:
        raise RuntimeError("no PostgreSQL")
    url, name = made
    try:
        yield url
    finally:
        await _drop(name)


async def run(quick: bool = False) -> dict[str, Any]:
    requests = QUICK_REQUESTS if quick else REQUESTS
    result: dict[str, Any] = {"artifacts": [SMALL, LARGE], "requests": requests}
    sqlite = await _backend(_sqlite, requests)
    result["sqlite"] = sqlite
    worst = max(sqlite["ratio"][name] for name in BARRED)
    if await _postgres_url_available():
        postgresql = await _backend(_postgresql, requests)
        result["postgresql"] = postgresql
        worst = max(worst, *(postgresql["ratio"][name] for name in BARRED))
    result[f"queue {LARGE} / {SMALL} server time (bar <= {BAR})"] = round(worst, 3)
    return result


async def _postgres_url_available() -> bool:
    made = await _postgres_url()
    if made is None:
        return False
    await _drop(made[1])
    return True


if __name__ == "__main__":
    import json

    print(json.dumps(asyncio.run(run(quick=True)), indent=2))
