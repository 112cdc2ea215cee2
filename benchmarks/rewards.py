"""Issue 19, performance: rewards through the TRL-shaped callable, from synchronous code.

`rewards`: a batch of 256 completions x 10 criteria against the 100 ms judge at provider
concurrency 32, through `trl_reward(...)` called as TRL calls it (from a thread with no
event loop): judgments per second against the ideal 32 / 0.1 s = 320/s (bar >= 0.9). The
same batch again is served from the judge cache: 0 judge calls, at most 10% of the time.

Per-prompt rubrics: the same number of completions, each with its own 10-item rubric in
the `rubric` column (RaR items, parsed once per content), against all of them sharing one
rubric, cache off; bar: per-prompt time <= 1.1x shared.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.judge_server import RunningJudge
from rubricflow.llm.cache import SQLiteJudgeCache
from rubricflow.rewards import trl_reward

DELAY = 0.1
CONCURRENCY = 32
CRITERIA = 10
COMPLETIONS = 256
QUICK_COMPLETIONS = 32
PER_PROMPT = 1000
QUICK_PER_PROMPT = 64


def _items(prompt: int) -> list[dict[str, Any]]:
    return [
        {
            "title": f"Item {i}",
            "description": f"Prompt {prompt}: the reply satisfies requirement number {i}.",
            "weight": 5 if i < 3 else 2,
        }
        for i in range(CRITERIA)
    ]


SHARED = {
    "id": "bench-reward",
    "criteria": [
        {"id": f"c{i}", "description": f"The reply satisfies requirement number {i}."}
        for i in range(CRITERIA)
    ],
}


def _batch(count: int) -> tuple[list[str], list[str]]:
    prompts = [f"Question {i // 8}?" for i in range(count)]
    completions = [f"Thanks for asking. This is benchmark reply number {i}." for i in range(count)]
    return prompts, completions


def _timed(reward: Any, prompts: list[str], completions: list[str], **columns: Any) -> tuple:
    started = time.perf_counter()
    rewards = reward(
        prompts=prompts,
        completions=completions,
        completion_ids=[[0]] * len(completions),
        **columns,
    )
    return time.perf_counter() - started, rewards


async def run(quick: bool = False) -> dict[str, Any]:
    count = QUICK_COMPLETIONS if quick else COMPLETIONS
    judgments = count * CRITERIA
    prompts, completions = _batch(count)
    settings = {"max_concurrency": CONCURRENCY}
    with tempfile.TemporaryDirectory() as folder, RunningJudge(DELAY) as judge:
        spec = f"openai:bench-judge@{judge.base_url}"
        cache = SQLiteJudgeCache(Path(folder) / "judge-cache.sqlite")
        try:
            reward = trl_reward(SHARED, judge=spec, judge_settings=settings, cache=cache)
            # warm-up (imports, connections) on another text, so the batch is not cached
            await asyncio.to_thread(_timed, reward, ["warm"], ["warm-up reply"])
            before = judge.requests()
            first_s, first = await asyncio.to_thread(_timed, reward, prompts, completions)
            first_calls = judge.requests() - before
            second_s, second = await asyncio.to_thread(_timed, reward, prompts, completions)
            second_calls = judge.requests() - before - first_calls
        finally:
            cache.close()
    rate = judgments / first_s
    return {
        "completions": count,
        "judgments": judgments,
        "first_pass_s": first_s,
        "first_pass_judge_calls": first_calls,
        "judgments_per_s": rate,
        "ratio (bar >= 0.9)": rate / (CONCURRENCY / DELAY),
        "second_pass_s": second_s,
        "second_pass_judge_calls (bar 0)": second_calls,
        "second / first (bar <= 0.10)": second_s / first_s,
        "same_rewards": first == second and None not in first,
    }


async def run_per_prompt(quick: bool = False) -> dict[str, Any]:
    count = QUICK_PER_PROMPT if quick else PER_PROMPT
    prompts, completions = _batch(count)
    settings = {"max_concurrency": CONCURRENCY}
    with RunningJudge(DELAY) as judge:
        spec = f"openai:bench-judge@{judge.base_url}"
        shared = trl_reward(SHARED, judge=spec, judge_settings=settings, cache=None)
        own = trl_reward(judge=spec, judge_settings=settings, cache=None)
        await asyncio.to_thread(_timed, shared, ["warm"], ["warm-up reply"])
        columns = [_items(i) for i in range(count)]
        shared_s, shared_rewards = await asyncio.to_thread(_timed, shared, prompts, completions)
        own_s, own_rewards = await asyncio.to_thread(
            _timed, own, prompts, completions, rubric=columns
        )
    return {
        "completions": count,
        "criteria_each": CRITERIA,
        "shared_rubric_s": shared_s,
        "per_prompt_rubrics_s": own_s,
        "rubrics_parsed": own.scorer.rubrics.parses,
        "per-prompt / shared (bar <= 1.1)": own_s / shared_s,
        "all_rewarded": None not in shared_rewards and None not in own_rewards,
    }
