"""Issue 30, performance: conversations against the 100 ms judge, and OTel spans read back.

`conversations`:
- 20 50-turn conversations (2,000 judgments) with two `each_turn` LLM criteria (every
  assistant turn judged on its own) on one judge at provider concurrency 32, cache off:
  throughput against the ideal 32 / 0.1 s = 320 judgments/s (bar: >= 0.9, as single targets reach);
- 100,000 OpenTelemetry spans (agent runs: chat calls whose inputs repeat the history,
  and execute_tool spans) written as OTLP JSON lines, read into trajectories by a fresh
  `python -c` child whose peak RSS is the figure (bar: < 200 MB).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.judge_server import RunningJudge
from rubricflow import evaluate_many, parse_rubric

DELAY = 0.1
CONCURRENCY = 32
TURNS = 50
#: 2,000 judgments, as the `judge` workload makes: the same run length, so the same
#: start-up and tail around the judge's steady state
CONVERSATIONS = 20
#: conversations judged at once: 2 x 2 criteria x 50 turns = 200 judgments queued for
#: the judge's 32 slots
TARGETS_IN_FLIGHT = 2
QUICK_CONVERSATIONS = 2
SPANS = 100_000
QUICK_SPANS = 10_000
SPANS_PER_TRACE = 10  # 5 chat calls and 5 tool calls

RUBRIC = parse_rubric(
    {
        "id": "bench-turns",
        "criteria": [
            {
                "id": f"turn_{i}",
                "description": f"This reply meets requirement {i}.",
                "scope": "each_turn",
                "scoring": {"method": "llm_verdict"},
            }
            for i in range(2)
        ],
    }
)


def _conversation(number: int) -> list[dict[str, str]]:
    messages = []
    for turn in range(TURNS):
        messages.append({"role": "user", "content": f"Question {turn} of chat {number}?"})
        messages.append({"role": "assistant", "content": f"Answer {turn} of chat {number}."})
    return messages


async def _judge_conversations(count: int) -> dict[str, Any]:
    targets = [{"id": f"c{i}", "content": _conversation(i)} for i in range(count)]
    with RunningJudge(DELAY) as judge:
        options = {
            "llm": f"openai:bench-judge@{judge.base_url}",
            "llm_settings": {"max_concurrency": CONCURRENCY},
            "llm_cache": None,
        }
        async for _ in evaluate_many(RUBRIC, targets[:1], options=options):  # warm-up
            pass
        before = judge.stats()
        started = time.perf_counter()
        passed = 0
        async for evaluation in evaluate_many(
            RUBRIC, targets, target_concurrency=TARGETS_IN_FLIGHT, concurrency=2, options=options
        ):
            passed += evaluation.passed
        seconds = time.perf_counter() - started
        after = judge.stats()
        calls = after["requests"] - before["requests"]
        held = (after["in_flight_seconds"] - before["in_flight_seconds"]) / seconds
    ideal = CONCURRENCY / DELAY
    return {
        "conversations": count,
        "turns_each": TURNS,
        "judgments": calls,
        "seconds": seconds,
        "passed": passed,
        "judgments_per_s": calls / seconds,
        "ideal_per_s (32 / 0.1 s)": ideal,
        "ratio (bar >= 0.9)": calls / seconds / ideal,
        "mean calls in flight at the judge (of 32)": held,
    }


def _part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def _trace_lines(trace: int) -> str:
    """One agent run's spans as one OTLP JSON line (one export batch)."""
    history: list[dict[str, Any]] = [{"role": "user", "parts": [_part(f"Task {trace}")]}]
    spans = []
    clock = 1_000_000
    for step in range(SPANS_PER_TRACE // 2):
        call = {"type": "tool_call", "id": f"{trace}-{step}", "name": f"tool_{step % 3}"}
        call["arguments"] = {"query": f"step {step} of run {trace}"}
        output = [{"role": "assistant", "parts": [call]}]
        attributes = [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(history)}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(output)}},
        ]
        spans.append(
            {
                "traceId": f"{trace:032x}",
                "spanId": f"{trace * 100 + step * 2:016x}",
                "name": "chat model",
                "startTimeUnixNano": str(clock),
                "attributes": attributes,
            }
        )
        clock += 10
        result = {"type": "tool_call_response", "id": call["id"], "response": f"result {step}"}
        spans.append(
            {
                "traceId": f"{trace:032x}",
                "spanId": f"{trace * 100 + step * 2 + 1:016x}",
                "name": f"execute_tool {call['name']}",
                "startTimeUnixNano": str(clock),
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                    {"key": "gen_ai.tool.name", "value": {"stringValue": call["name"]}},
                    {"key": "gen_ai.tool.call.id", "value": {"stringValue": call["id"]}},
                ],
            }
        )
        clock += 10
        history = [*history, *output, {"role": "tool", "parts": [result]}]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


_READER = """
import resource, sys
from rubricflow.traces import read_otel
count = calls = 0
for target in read_otel(sys.argv[1]):
    count += 1
    calls += sum(len(m.get("tool_calls") or ()) for m in target.content)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(count, calls, peak)
"""


def _read_spans(spans: int) -> dict[str, Any]:
    traces = spans // SPANS_PER_TRACE
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spans.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for trace in range(traces):
                out.write(_trace_lines(trace) + "\n")
        size = path.stat().st_size
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _READER, str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        seconds = time.perf_counter() - started
        baseline = subprocess.run(
            [
                sys.executable,
                "-c",
                "import resource, rubricflow.traces; "
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    count, calls, peak_kib = (int(x) for x in done.stdout.split())
    return {
        "spans": spans,
        "file_mb": size / 1e6,
        "trajectories": count,
        "tool_calls_read": calls,
        "read_s": seconds,
        "baseline_rss_mb (import only)": int(baseline.stdout) / 1024,
        "peak_rss_mb (bar < 200)": peak_kib / 1024,
    }


async def run(quick: bool = False) -> dict[str, Any]:
    judged = await _judge_conversations(QUICK_CONVERSATIONS if quick else CONVERSATIONS)
    read = _read_spans(QUICK_SPANS if quick else SPANS)
    return {**judged, "otel": read}
