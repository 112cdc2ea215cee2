"""Issue 17, performance 2: scale-out of the server's embedded review workers.

Workload 6 (`benchmarks/scaleout.py`) with `rubricflow serve` as the workers: artifacts
whose type binds the ten-criterion `llm_verdict` rubric, reviews deferred to the servers'
embedded workers (`--review-workers 4` per process), the server's judge the 100 ms judge
server (`--llm`, judge concurrency 4 per process: RUBRICFLOW_LLM_CONCURRENCY), on a fresh
PostgreSQL database, with `--workers 1` and then `--workers 4`.

The artifacts are created in draft before the server starts; the clock starts when the
first is submitted (deferred, one after another from this process: the workers start on
the first at once) and stops when none is waiting or in review. Throughput = artifacts
reviewed per second. Bar: 4 processes at least 3x the throughput of 1.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from benchmarks import http_server
from benchmarks.judge_concurrency import RUBRIC
from benchmarks.judge_server import RunningJudge
from benchmarks.scaleout import _postgres_url_probe
from benchmarks.store_throughput import POSTGRES_ADMIN, _drop, _postgres_url
from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.store import Store

ARTIFACTS = 200
QUICK_ARTIFACTS = 24
JUDGE_CONCURRENCY = 4
SLOTS = 4
DELAY = 0.1


async def _drafts(url: str, count: int) -> list[str]:
    async with await Store.open(url) as store:
        await store.rubrics.register(RUBRIC)
        registry = ArtifactRegistry(store)
        await registry.set_type(
            ArtifactType(name="reply", rubrics=(RubricBinding(rubric_id=RUBRIC.id),))
        )
        ids = []
        for i in range(count):
            content = f"Thanks for asking. This is scale-out reply number {i}."
            ids.append((await registry.create("reply", content, actor="bench")).id)
        return ids


async def _submit_and_wait(url: str, ids: list[str]) -> tuple[float, dict[str, int]]:
    async with await Store.open(url) as store:
        registry = ArtifactRegistry(store)
        started = time.perf_counter()
        for artifact_id in ids:
            await registry.submit_for_review(artifact_id, actor="bench", defer=True)
        repository = registry.repository
        while True:
            waiting = await repository.count(status="pending_review")
            running = await repository.count(status="in_review")
            if waiting == 0 and running == 0:
                break
            await asyncio.sleep(0.05)
        seconds = time.perf_counter() - started
        outcomes: dict[str, int] = {}
        for artifact_id in ids:
            status = (await registry.get(artifact_id)).status
            outcomes[status] = outcomes.get(status, 0) + 1
    return seconds, outcomes


async def _measure(judge: RunningJudge, processes: int, count: int) -> dict[str, Any]:
    made = await _postgres_url()
    if made is None:
        raise RuntimeError(f"no PostgreSQL server at {POSTGRES_ADMIN}")
    url, name = made
    try:
        ids = await _drafts(url, count)
        server = await asyncio.to_thread(
            http_server.start,
            url,
            *("--workers", str(processes), "--review-workers", str(SLOTS)),
            *("--llm", f"openai:bench-judge@{judge.base_url}"),
            env={"RUBRICFLOW_LLM_CONCURRENCY": str(JUDGE_CONCURRENCY)},
        )
        try:
            await asyncio.sleep(1.0 + 0.5 * processes)  # every process up, not only one
            before = judge.requests()
            seconds, outcomes = await _submit_and_wait(url, ids)
            calls = judge.requests() - before
        finally:
            await asyncio.to_thread(server.stop)
    finally:
        await _drop(name)
    per_s = count / seconds
    return {"seconds": seconds, "per_s": per_s, "judge_calls": calls, "outcomes": outcomes}


async def run(quick: bool = False) -> dict[str, Any]:
    if await _postgres_url_probe() is False:
        return {"skipped": f"no PostgreSQL server at {POSTGRES_ADMIN}"}
    count = QUICK_ARTIFACTS if quick else ARTIFACTS
    with RunningJudge(DELAY) as judge:
        one = await _measure(judge, 1, count)
        four = await _measure(judge, 4, count)
    ideal_one = JUDGE_CONCURRENCY / DELAY / len(RUBRIC.criteria)
    return {
        "artifacts": count,
        "judgments_per_artifact": len(RUBRIC.criteria),
        "judge_concurrency_per_process": JUDGE_CONCURRENCY,
        "review_slots_per_process": SLOTS,
        "one_process_per_s": one["per_s"],
        "four_processes_per_s": four["per_s"],
        "one_process_ideal_per_s": ideal_one,
        "judge_calls": [one["judge_calls"], four["judge_calls"]],
        "outcomes": [one["outcomes"], four["outcomes"]],
        "4 / 1 throughput (bar >= 3)": four["per_s"] / one["per_s"],
    }
