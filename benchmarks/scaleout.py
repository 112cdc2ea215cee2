"""Issue 9, workload 6: scale-out. Workload 2 as artifacts: 200 artifacts whose type binds
the ten-criterion `llm_verdict` rubric of `judge` (2,000 judgments against the 100 ms
judge server), queued in a fresh PostgreSQL database and reviewed by 1 and then by 4
worker processes (`benchmarks/scaleout_worker.py`: rubricflow's `Worker`, 4 reviews at
once, judge concurrency 4 per process, no answer cache). Throughput = artifacts reviewed
per second, from the moment all workers start to the last one finding the queue empty.
Bar: 4 workers at least 3x the throughput of 1.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.judge_concurrency import RUBRIC
from benchmarks.judge_server import RunningJudge
from benchmarks.store_throughput import POSTGRES_ADMIN, _drop, _postgres_url
from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.store import Store

ARTIFACTS = 200
QUICK_ARTIFACTS = 16
JUDGE_CONCURRENCY = 4
SLOTS = 4
DELAY = 0.1
ROOT = Path(__file__).resolve().parents[1]


async def _queue(url: str, count: int) -> None:
    store = await Store.open(url)
    try:
        await store.rubrics.register(RUBRIC)
        registry = ArtifactRegistry(store)
        await registry.set_type(
            ArtifactType(name="reply", rubrics=(RubricBinding(rubric_id=RUBRIC.id),))
        )
        for i in range(count):
            content = f"Thanks for asking. This is scale-out reply number {i}."
            artifact = await registry.create("reply", content, actor="bench")
            await registry.submit_for_review(artifact.id, actor="bench", defer=True)
    finally:
        await store.close()


def _workers(url: str, judge: RunningJudge, count: int) -> tuple[list[dict[str, Any]], int]:
    """Run `count` worker processes over the queue: their figures and the judge calls
    they made once started (their warm-up calls not counted)."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.scaleout_worker",
        "--db",
        url,
        "--judge",
        judge.base_url,
        "--judge-concurrency",
        str(JUDGE_CONCURRENCY),
        "--slots",
        str(SLOTS),
    ]
    processes = [
        subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for _ in range(count)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            line = process.stdout.readline()
            if line.strip() != "READY":
                raise RuntimeError(f"a scale-out worker did not start: {line!r}")
        before = judge.requests()
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = []
        for process in processes:
            out, _ = process.communicate(timeout=600)
            if process.returncode != 0:
                raise RuntimeError(f"a scale-out worker exited {process.returncode}")
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results, judge.requests() - before
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


async def _measure(judge: RunningJudge, workers: int, count: int) -> dict[str, Any]:
    made = await _postgres_url()
    if made is None:
        raise RuntimeError(f"no PostgreSQL server at {POSTGRES_ADMIN}")
    url, name = made
    try:
        await _queue(url, count)
        results, calls = await asyncio.to_thread(_workers, url, judge, workers)
    finally:
        await _drop(name)
    seconds = max(r["finished"] for r in results) - min(r["started"] for r in results)
    reviewed = sum(r["reviewed"] for r in results)
    outcomes: dict[str, int] = {}
    for result in results:
        for status, n in result["outcomes"].items():
            outcomes[status] = outcomes.get(status, 0) + n
    return {
        "seconds": seconds,
        "reviewed": reviewed,
        "per_worker": [r["reviewed"] for r in results],
        "judge_calls": calls,
        "outcomes": outcomes,
        "errors": sum(r["errors"] for r in results),
        "per_s": reviewed / seconds,
    }


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
        "judge_concurrency_per_worker": JUDGE_CONCURRENCY,
        "reviews_at_once_per_worker": SLOTS,
        "ideal_per_s_one_worker (4 / 0.1 s / 10)": ideal_one,
        "1_worker_s": one["seconds"],
        "1_worker_artifacts_per_s": one["per_s"],
        "1_worker_judge_calls": one["judge_calls"],
        "4_workers_s": four["seconds"],
        "4_workers_artifacts_per_s": four["per_s"],
        "4_workers_judge_calls": four["judge_calls"],
        "4_workers_reviewed_each": four["per_worker"],
        "reviewed (1, 4)": [one["reviewed"], four["reviewed"]],
        "outcomes (4 workers)": four["outcomes"],
        "errors": one["errors"] + four["errors"],
        "4 / 1 throughput (bar >= 3)": four["per_s"] / one["per_s"],
    }


async def _postgres_url_probe() -> bool:
    try:
        import asyncpg
    except ImportError:
        return False
    try:
        connection = await asyncpg.connect(POSTGRES_ADMIN, timeout=5)
    except (OSError, asyncpg.PostgresError):
        return False
    await connection.close()
    return True
