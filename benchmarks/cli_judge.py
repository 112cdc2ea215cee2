"""Issue 15, first contact item 5: workload 9.2 through the command line.

`cli-judge`: `rubricflow eval RUBRIC TARGETS.jsonl --llm openai:bench-judge@URL
--judge-concurrency 32 --no-cache --json`, every other option at its default, against the
same local OpenAI-compatible server that answers after 100 ms: 200 targets x 10
`llm_verdict` criteria = 2,000 judgments; throughput against the ideal 32 / 0.1 s =
320/s (bar: >= 90%, as `evaluate_many` reaches in workload 9.2).

The command runs in this process (typer's `CliRunner`, in a worker thread, since `eval`
runs its own event loop) after a one-target warm-up, so interpreter start-up and imports
are not in the figure; everything `eval` does per run is: reading the files, the judge
session, the batch run, printing each evaluation as a JSON line.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.judge_concurrency import (
    CONCURRENCY,
    CRITERIA,
    DELAY,
    QUICK_TARGETS,
    RUBRIC,
    TARGETS,
)
from benchmarks.judge_server import RunningJudge


def _write_inputs(folder: Path, count: int) -> tuple[Path, Path]:
    rubric = folder / "bench-judge.json"
    rubric.write_text(json.dumps(RUBRIC.to_dict()), encoding="utf-8")
    targets = folder / f"targets-{count}.jsonl"
    with targets.open("w", encoding="utf-8") as handle:
        for i in range(count):
            line = {"id": f"t{i}", "content": f"Thanks for asking. This is reply number {i}."}
            handle.write(json.dumps(line) + "\n")
    return rubric, targets


def _eval(rubric: Path, targets: Path, base_url: str) -> tuple[float, int, str]:
    """(seconds, exit code, stdout) of one `rubricflow eval` run."""
    from typer.testing import CliRunner

    from rubricflow.cli import app

    command = [
        "eval",
        str(rubric),
        str(targets),
        "--llm",
        f"openai:bench-judge@{base_url}",
        "--judge-concurrency",
        str(CONCURRENCY),
        "--no-cache",
        "--json",
    ]
    started = time.perf_counter()
    result = CliRunner().invoke(app, command)
    elapsed = time.perf_counter() - started
    if result.exit_code not in (0, 1):
        raise RuntimeError(f"rubricflow eval exited {result.exit_code}: {result.output[-2000:]}")
    return elapsed, result.exit_code, result.stdout


async def run(quick: bool = False) -> dict[str, Any]:
    count = QUICK_TARGETS if quick else TARGETS
    judgments = count * CRITERIA
    ideal = CONCURRENCY / DELAY
    with tempfile.TemporaryDirectory() as folder, RunningJudge(DELAY) as judge:
        rubric, targets = _write_inputs(Path(folder), count)
        _rubric, warm = _write_inputs(Path(folder), 1)
        await asyncio.to_thread(_eval, rubric, warm, judge.base_url)
        before = judge.requests()
        seconds, code, stdout = await asyncio.to_thread(_eval, rubric, targets, judge.base_url)
        calls = judge.requests() - before
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    met = sum(1 for line in lines for result in line["criteria"] if result.get("verdict") == "MET")
    rate = judgments / seconds
    return {
        "judgments": judgments,
        "judge_delay_s": DELAY,
        "judge_concurrency (--judge-concurrency)": CONCURRENCY,
        "seconds": seconds,
        "exit_code": code,
        "targets_printed": len(lines),
        "judge_calls": calls,
        "verdicts_met": met,
        "judgments_per_s": rate,
        "ideal_per_s (32 / 0.1 s)": ideal,
        "ratio (bar >= 0.9)": rate / ideal,
    }
