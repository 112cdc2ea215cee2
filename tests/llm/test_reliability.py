"""Limits (concurrency, requests per minute), back-off, and the rule that a failed judge
never changes anything about the criteria that were scored."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest

from rubricflow import evaluate
from rubricflow.llm import ProviderSettings
from rubricflow.llm.session import backoff_delay

from .fixtures import rubric, session_for
from .scripted import Reply, ScriptedServer, openai_reply, verdict


def many(n: int) -> Any:
    return rubric(*({"id": f"c{i}", "description": f"requirement {i}"} for i in range(n)))


async def test_the_provider_concurrency_limit_holds() -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def slow(request: Any) -> Reply:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return openai_reply(verdict())

    with ScriptedServer(slow) as server:
        async with session_for(server, max_concurrency=2) as session:
            evaluation = await evaluate(many(6), "x", concurrency=6, options={"llm": session})
    assert {r.status for r in evaluation.criteria} == {"scored"}
    assert state["peak"] == 2


async def test_requests_per_minute_spaces_request_starts() -> None:
    starts: list[float] = []

    def stamp(request: Any) -> Reply:
        starts.append(time.monotonic())
        return openai_reply(verdict())

    with ScriptedServer(stamp) as server:
        async with session_for(server, rpm=600) as session:  # one every 0.1 s
            await evaluate(many(1), "warm up the client", options={"llm": session})
            starts.clear()
            await evaluate(many(4), "x", concurrency=4, options={"llm": session})
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(starts) == 4 and min(gaps) >= 0.07, gaps


def test_backoff_is_exponential_jittered_capped_and_honours_retry_after() -> None:
    settings = ProviderSettings(backoff_base=1.0, backoff_max=8.0)
    for failures, (low, high) in {
        1: (0.5, 1.0),
        2: (1.0, 2.0),
        3: (2.0, 4.0),
        6: (4.0, 8.0),
    }.items():
        delays = {backoff_delay(failures, settings) for _ in range(50)}
        assert all(low <= d <= high for d in delays)
        assert len(delays) > 1  # jittered
    assert backoff_delay(1, settings, retry_after=5.0) == 5.0


@pytest.mark.parametrize(
    "failure",
    [
        [Reply(500, "down")] * 4,
        [openai_reply("garbage"), openai_reply('{"verdict": "MAYBE"}')],
        [Reply(drop=True)] * 4,
        [Reply(400, {"error": {"message": "context length exceeded"}})],
    ],
    ids=["server-errors", "invalid-answers", "dropped", "client-error"],
)
async def test_a_failed_judge_never_changes_the_scored_criteria(failure: list[Reply]) -> None:
    mixed = rubric(
        {
            "id": "length",
            "weight": 2,
            "scoring": {
                "method": "deterministic",
                "function": "word_count_between",
                "config": {"min": 1, "max": 50},
            },
        },
        {"id": "polite", "weight": 3, "description": "The reply is polite."},
        {"id": "rude", "weight": -1, "description": "The reply insults the reader."},
        {"id": "fails", "weight": 5, "description": "FAIL-THIS-ONE"},
        unscored_policy="exclude",
    )
    without = rubric(
        *[
            c.model_dump(mode="json", by_alias=True, exclude_defaults=True)
            for c in mixed.criteria
            if c.id != "fails"
        ]
    )

    def respond(request: Any) -> Reply:
        if "FAIL-THIS-ONE" in request.text:
            return failure[
                min(len(failure) - 1, sum("FAIL-THIS-ONE" in r.text for r in server.requests) - 1)
            ]
        return openai_reply(
            verdict("UNMET" if "insults" in request.messages[-1]["content"] else "MET")
        )

    with ScriptedServer(respond) as server:
        async with session_for(server) as session:
            broken = await evaluate(mixed, "Thank you kindly.", options={"llm": session})
            clean = await evaluate(without, "Thank you kindly.", options={"llm": session})
    by_id = {r.criterion_id: r for r in broken.criteria}
    assert by_id["fails"].status in ("unable_to_evaluate", "error")
    assert by_id["fails"].score is None and by_id["fails"].verdict is None
    for result in clean.criteria:
        twin = by_id[result.criterion_id]
        assert (twin.status, twin.score, twin.verdict, twin.passed) == (
            result.status,
            result.score,
            result.verdict,
            result.passed,
        )
    assert broken.score == clean.score and broken.raw_score == clean.raw_score
    assert broken.coverage == pytest.approx(6 / 11)
    assert broken.verdict == "pass" and clean.verdict == "pass"

    # under the default policy the same failure makes the evaluation incomplete, never a pass
    async def judge(system: str, user: str) -> str:
        if "FAIL-THIS-ONE" in user:
            return "no usable answer"
        return '{"reasoning": "r", "verdict": "%s"}' % ("UNMET" if "insults" in user else "MET")

    strict = rubric(*(c.model_dump(mode="json", by_alias=True) for c in mixed.criteria))
    fail_closed = await evaluate(
        strict, "Thank you kindly.", options={"llm_cache": None, "llm": judge}
    )
    assert fail_closed.unscored_policy == "fail_closed"
    assert fail_closed.verdict == "incomplete" and not fail_closed.passed
    assert fail_closed.score == clean.score
