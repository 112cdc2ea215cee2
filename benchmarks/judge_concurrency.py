"""Issue 9, workloads 2 and 4: per-criterion LLM judgments against a local
OpenAI-compatible server that answers after a fixed 100 ms.

`judge`: 200 targets x 10 binary `llm_verdict` criteria = 2,000 judgments at provider
concurrency 32, cache off; throughput against the ideal 32 / 0.1 s = 320/s (bar: >= 90%).

`cache`: the same run twice with a fresh SQLite answer cache; the second run must make
zero judge calls and take at most 10% of the first run's time.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.judge_server import RunningJudge
from rubricflow import evaluate_many, parse_rubric
from rubricflow.llm.cache import SQLiteJudgeCache

DELAY = 0.1
CONCURRENCY = 32
CRITERIA = 10
TARGETS = 200
QUICK_TARGETS = 20

RUBRIC = parse_rubric(
    {
        "id": "bench-judge",
        "name": "Benchmark judge",
        "criteria": [
            {
                "id": f"c{i}",
                "name": f"Criterion {i}",
                "description": f"The reply satisfies requirement number {i}.",
                "scoring": {"method": "llm_verdict"},
            }
            for i in range(CRITERIA)
        ],
    }
)


def _targets(count: int) -> list[dict[str, str]]:
    return [
        {"id": f"t{i}", "content": f"Thanks for asking. This is benchmark reply number {i}."}
        for i in range(count)
    ]


async def _judge_run(judge: RunningJudge, targets: list[dict[str, str]], cache: Any) -> dict:
    """Evaluate every target; the wall time, calls made and cache hits seen."""
    before = judge.requests()
    started = time.perf_counter()
    calls = hits = met = 0
    async for evaluation in evaluate_many(
        RUBRIC,
        targets,
        # enough targets in flight that 32 questions are always waiting for a slot
        target_concurrency=max(8, 2 * CONCURRENCY // CRITERIA + 2),
        concurrency=CRITERIA,
        options={
            "llm": f"openai:bench-judge@{judge.base_url}",
            "llm_settings": {"max_concurrency": CONCURRENCY},
            "llm_cache": cache,
        },
    ):
        usage = evaluation.usage()
        calls += usage["llm_calls"]
        hits += usage["cache_hits"]
        met += sum(1 for result in evaluation.criteria if result.verdict == "MET")
    elapsed = time.perf_counter() - started
    return {
        "seconds": elapsed,
        "calls": calls,
        "hits": hits,
        "met": met,
        "server_requests": judge.requests() - before,
    }


def _sizes(quick: bool) -> tuple[int, int]:
    targets = QUICK_TARGETS if quick else TARGETS
    return targets, targets * CRITERIA


async def run(quick: bool = False) -> dict[str, Any]:
    count, judgments = _sizes(quick)
    ideal = CONCURRENCY / DELAY
    with RunningJudge(DELAY) as judge:
        # a tiny warm-up so connection set-up and imports are not in the figure
        await _judge_run(judge, _targets(1), None)
        first = await _judge_run(judge, _targets(count), None)
    rate = judgments / first["seconds"]
    return {
        "judgments": judgments,
        "judge_delay_s": DELAY,
        "provider_concurrency": CONCURRENCY,
        "seconds": first["seconds"],
        "judge_calls": first["server_requests"],
        "verdicts_met": first["met"],
        "judgments_per_s": rate,
        "ideal_per_s (32 / 0.1 s)": ideal,
        "ratio (bar >= 0.9)": rate / ideal,
    }


async def run_cache(quick: bool = False) -> dict[str, Any]:
    count, judgments = _sizes(quick)
    with tempfile.TemporaryDirectory() as folder, RunningJudge(DELAY) as judge:
        cache = SQLiteJudgeCache(Path(folder) / "judge-cache.sqlite")
        try:
            await _judge_run(judge, _targets(1), None)
            first = await _judge_run(judge, _targets(count), cache)
            second = await _judge_run(judge, _targets(count), cache)
        finally:
            cache.close()
    return {
        "judgments": judgments,
        "first_run_s": first["seconds"],
        "first_run_judge_calls": first["server_requests"],
        "second_run_s": second["seconds"],
        "second_run_judge_calls (bar 0)": second["server_requests"],
        "second_run_cache_hits": second["hits"],
        "second_run_verdicts_met": second["met"],
        "second / first (bar <= 0.10)": second["seconds"] / first["seconds"],
    }
