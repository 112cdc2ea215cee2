"""Criteria with a scope, run through a real `evaluate()`: `each_turn` combines the
assistant turns exactly (min, mean, all), naming the failing turn; `last_turn` and
`trajectory` score their part only."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections import Counter
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubricflow import parse_rubric
from rubricflow.engine import evaluate
from rubricflow.engine.scopes import START_WAVE, score_scoped
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.results import CriterionResult, Target, exact_number

TERMS = ["alpha", "beta", "gamma"]
PLUGINS = create_plugin_manager()


def _rubric(scope: str, aggregation: str = "min", **scoring: Any) -> Any:
    return parse_rubric(
        {
            "id": "turns",
            "criteria": [
                {
                    "id": "c",
                    "scope": scope,
                    "aggregation": aggregation,
                    "scoring": scoring
                    or {
                        "method": "deterministic",
                        "function": "contains_all",
                        "config": {"terms": TERMS},
                    },
                }
            ],
        }
    )


async def _score(rubric: Any, content: Any, plugins: PluginRegistry = PLUGINS) -> CriterionResult:
    evaluation = await evaluate(rubric, Target(content=content), plugins=plugins)
    return evaluation.criteria[0]


def _conversation(turns: list[int]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for number, found in enumerate(turns):
        messages.append({"role": "user", "content": f"question {number} alpha beta gamma"})
        messages.append({"role": "assistant", "content": " ".join(TERMS[:found]) or "nothing"})
    return messages


turn_lists = st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=turn_lists, aggregation=st.sampled_from(["min", "mean", "all"]))
async def test_each_turn_aggregates_exactly(turns: list[int], aggregation: str) -> None:
    result = await _score(_rubric("each_turn", aggregation), _conversation(turns))
    assert result.status == "scored", result.notes
    # each turn's exact score, as contains_all reports it (found / 3 as a float)
    scores = [exact_number(found / 3) for found in turns]
    expected = {
        "min": min(scores),
        "mean": sum(scores, Fraction(0)) / len(scores),
        "all": Fraction(int(all(s == 1 for s in scores))),
    }[aggregation]
    assert result.exact_score == expected
    failing = [n for n, found in enumerate(turns, start=1) if found < 3]
    for turn in failing:
        index = 2 * turn - 1
        assert any(f"assistant turn {turn} (message {index}) failed" in e for e in result.evidence)
    assert len([e for e in result.evidence if "failed" in e]) == len(failing)


async def test_last_turn_scores_only_the_last_assistant_message() -> None:
    content = _conversation([0, 3])
    assert (await _score(_rubric("last_turn"), content)).score == 1.0
    assert (await _score(_rubric("last_turn"), _conversation([3, 0]))).score == 0.0
    # the whole conversation holds every term in its user messages
    assert (await _score(_rubric("conversation"), _conversation([3, 0]))).score == 1.0


async def test_no_assistant_turn_is_unable_to_evaluate() -> None:
    result = await _score(_rubric("each_turn"), [{"role": "user", "content": "hi"}])
    assert result.status == "unable_to_evaluate"
    assert "no assistant turn" in result.notes


async def test_text_content_ignores_the_scope() -> None:
    assert (await _score(_rubric("each_turn"), "alpha beta gamma")).score == 1.0


async def test_trajectory_scope_sees_the_tool_calls() -> None:
    rubric = _rubric(
        "trajectory",
        method="deterministic",
        function="trajectory.tool_sequence",
        config={"expected": ["search", "book"], "mode": "strict"},
    )
    content = [
        {"role": "user", "content": "book a flight"},
        {"role": "assistant", "tool_calls": [{"id": "1", "name": "search", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "1", "content": "AF1"},
        {"role": "assistant", "tool_calls": [{"id": "2", "name": "book", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "2", "content": "ok"},
        {"role": "assistant", "content": "Booked AF1."},
    ]
    assert (await _score(rubric, content)).score == 1.0


async def test_scope_holds_in_the_check_process_pool(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Under RUBRICFLOW_CHECK_ISOLATION=process a built-in check runs in the pool; its
    scope is applied there too."""
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", "process")
    result = await _score(
        _rubric("each_turn", "mean"), _conversation([3, 0]), create_plugin_manager()
    )
    assert result.status == "scored", result.notes
    assert result.exact_score == exact_number(0.5)
    assert any("assistant turn 2 (message 3) failed" in e for e in result.evidence)


async def test_a_turn_scope_judges_the_reply_not_a_tool_calling_step() -> None:
    """`scope: turn` answers with the assistant's reply to that user message: a last
    message that only calls tools is a step, and the reply before it is judged."""
    rubric = parse_rubric(
        {
            "id": "turns",
            "criteria": [
                {
                    "id": "c",
                    "scope": "turn",
                    "turn": 1,
                    "scoring": {
                        "method": "deterministic",
                        "function": "contains_all",
                        "config": {"terms": TERMS},
                    },
                }
            ],
        }
    )
    content = [
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": "alpha beta gamma"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "1", "name": "search", "arguments": {"q": "x"}}],
        },
        {"role": "tool", "tool_call_id": "1", "content": "found"},
        {"role": "user", "content": "thanks"},
    ]
    result = await _score(rubric, content)
    assert result.status == "scored" and result.score == 1.0
    assert "message 1" in result.evidence[0]


def _turn_result(criterion: Any, score: float) -> CriterionResult:
    return CriterionResult(
        criterion_id=criterion.id,
        status="scored",
        score=score,
        weight=criterion.weight,
        required=criterion.required,
        scorer="test",
    )


async def _with_loop_ticks(work: Any) -> Any:
    """`work(tick)`'s result, while a task counts the event loop's turns: `tick()` says
    which turn it is now."""
    ticks = [0]

    async def count() -> None:
        while True:
            await asyncio.sleep(0)
            ticks[0] += 1

    counter = asyncio.ensure_future(count())
    try:
        return await work(lambda: ticks[0])
    finally:
        counter.cancel()


async def test_a_long_conversations_turns_start_a_few_per_loop_turn() -> None:
    """Fifty judgments starting in one loop turn held the loop while the judge's answers
    waited unread; the turns start START_WAVE at a time, every one still scored."""
    (criterion,) = _rubric("each_turn", "mean").criteria
    conversation = _conversation([3] * 50)
    started: list[int] = []

    async def work(tick: Any) -> Any:
        async def score(criterion: Any, target: Target) -> CriterionResult:
            started.append(tick())
            await asyncio.sleep(0)
            return _turn_result(criterion, 1.0 if target.metadata["turn"] % 2 else 0.5)

        return await score_scoped(criterion, Target(content=conversation), score, 0.5)

    result = await _with_loop_ticks(work)
    assert len(started) == 50
    assert max(Counter(started).values()) <= START_WAVE
    assert len(set(started)) >= 50 // START_WAVE
    assert result.exact_score == Fraction(3, 4)  # 25 turns at 1, 25 at 1/2


async def test_a_turn_that_fails_early_stops_the_rest_and_starts_no_more() -> None:
    """The first wave's error goes on; its wave is cancelled, and the turns not yet
    started are closed, never run (no 'never awaited' warning) and never left pending."""
    (criterion,) = _rubric("each_turn").criteria
    conversation = _conversation([3] * 20)
    started: list[int] = []
    cancelled: list[int] = []

    async def score(criterion: Any, target: Target) -> CriterionResult:
        turn = target.metadata["turn"]
        started.append(turn)
        if turn == 1:
            raise RuntimeError("turn 1 broke")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(turn)
            raise
        raise AssertionError("unreachable")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="turn 1 broke"):
            await score_scoped(criterion, Target(content=conversation), score, 0.5)
        gc.collect()
    assert len(started) < 20
    assert sorted(cancelled) == [t for t in started if t != 1]
