"""The trajectory checks, each run through a real `evaluate()` of a rubric naming it:
every mode of the sequence check, and where each check says it failed."""

from __future__ import annotations

from typing import Any

import pytest

from rubricflow import parse_rubric
from rubricflow.engine import evaluate
from rubricflow.plugins import create_plugin_manager
from rubricflow.results import CriterionResult, Target

PLUGINS = create_plugin_manager()


def run(*calls: tuple[str, dict[str, Any]], answer: str | None = "Done.") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "please"}]
    for number, (name, arguments) in enumerate(calls, start=1):
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [{"id": f"c{number}", "name": name, "arguments": arguments}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{number}", "content": "result"})
    if answer is not None:
        messages.append({"role": "assistant", "content": answer})
    return messages


async def check(function: str, content: Any, **config: Any) -> CriterionResult:
    rubric = parse_rubric(
        {
            "id": "agent",
            "criteria": [
                {
                    "id": "c",
                    "scoring": {
                        "method": "deterministic",
                        "function": f"trajectory.{function}",
                        "config": config,
                    },
                }
            ],
        }
    )
    evaluation = await evaluate(rubric, Target(content=content), plugins=PLUGINS)
    result = evaluation.criteria[0]
    assert result.status == "scored", result.notes
    return result


AGENT = run(("search", {"q": "flights", "limit": 5}), ("book", {"flight": "AF1"}), ("email", {}))


@pytest.mark.parametrize(
    ("mode", "expected", "met", "said"),
    [
        ("strict", ["search", "book", "email"], True, "3 calls match"),
        ("strict", ["search", "email", "book"], False, "call 2 (message 3) book: expected email"),
        ("strict", ["search", "book"], False, "call 3 (message 5) email was not expected"),
        ("strict", ["search", "book", "email", "log"], False, "expected log (item 4)"),
        ("unordered", ["email", "search", "book"], True, "3 calls match"),
        ("unordered", ["email", "search"], False, "call 2 (message 3) book was not expected"),
        ("unordered", ["email", "search", "book", "book"], False, "expected book (item 4)"),
        ("subset", ["search", "book", "email", "log"], True, "3 calls match"),
        ("subset", ["search", "book"], False, "call 3 (message 5) email was not expected"),
        ("superset", ["book", "search"], True, "3 calls match"),
        ("superset", ["book", "log"], False, "expected log (item 2) was not called"),
    ],
)
async def test_sequence_modes(mode: str, expected: list[str], met: bool, said: str) -> None:
    result = await check("tool_sequence", AGENT, expected=expected, mode=mode)
    assert (result.score == 1.0) is met
    assert any(said in e for e in result.evidence), result.evidence


async def test_sequence_items_may_hold_partial_arguments() -> None:
    # the first expected item could take either call; the matching still finds both
    expected = [{"name": "search"}, {"name": "search", "arguments": {"q": "a"}}]
    content = run(("search", {"q": "a"}), ("search", {"q": "b"}))
    assert (await check("tool_sequence", content, expected=expected, mode="unordered")).score == 1
    wrong = [{"name": "book", "arguments": {"flight": "BA2"}}]
    result = await check("tool_sequence", AGENT, expected=wrong, mode="superset")
    assert result.score == 0.0


async def test_tool_used_and_not_used() -> None:
    assert (await check("tool_used", AGENT, name="book")).score == 1.0
    result = await check("tool_used", AGENT, name="cancel")
    assert result.score == 0.0 and "cancel called 0 times" in result.evidence[0]
    assert (await check("tool_used", AGENT, name="book", max=0)).score == 0.0
    result = await check("tool_not_used", AGENT, names=["email", "delete"])
    assert result.score == 0.0
    assert result.evidence == ("call 3 (message 5) email is not allowed",)


async def test_tool_args_schema_and_partial() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "maximum": 3}},
        "required": ["q"],
    }
    result = await check("tool_args", AGENT, name="search", schema=schema)
    assert result.score == 0.0
    assert result.evidence[0].startswith("call 1 (message 1) search: arguments['limit']")
    assert (await check("tool_args", AGENT, name="book", partial={"flight": "AF1"})).score == 1
    result = await check("tool_args", AGENT, name="book", partial={"flight": "BA2"})
    assert result.score == 0.0 and "call 2 (message 3) book" in result.evidence[0]
    assert (await check("tool_args", AGENT, name="fly", partial={})).evidence == (
        "fly was never called",
    )


async def test_step_count() -> None:
    assert (await check("step_count", AGENT, max=3)).score == 1.0
    result = await check("step_count", AGENT, max=2)
    assert result.score == 0.0
    assert result.evidence == (
        "3 tool calls (allowed 0..2)",
        "call 3 (message 5) email is over the limit",
    )


async def test_final_answer_follows_the_last_tool_result() -> None:
    assert (await check("final_answer_follows_tools", AGENT)).score == 1.0
    result = await check("final_answer_follows_tools", run(("search", {}), answer=None))
    assert result.score == 0.0
    assert "message 2 is not a final assistant answer" in result.evidence
    dangling = [*run(("search", {}))[:2], {"role": "assistant", "content": "Done."}]
    result = await check("final_answer_follows_tools", dangling)
    assert result.evidence == ("call 1 (message 1) search has no result",)


async def test_openai_wire_arguments_are_parsed() -> None:
    content = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "x",
                    "type": "function",
                    "function": {"name": "book", "arguments": '{"flight": "AF1"}'},
                }
            ],
        },
    ]
    assert (await check("tool_args", content, name="book", partial={"flight": "AF1"})).score == 1


def test_configs_are_checked_by_validate() -> None:
    bad = {
        "id": "agent",
        "criteria": [
            {
                "id": "c",
                "scoring": {
                    "method": "deterministic",
                    "function": "trajectory.tool_sequence",
                    "config": {"expected": ["a"], "mode": "sideways"},
                },
            }
        ],
    }
    from rubricflow.validation import config_problems

    problems = config_problems(parse_rubric(bad), PLUGINS)
    assert any("mode" in str(problem) for problem in problems), problems


def test_text_is_refused_with_a_reason() -> None:
    from rubricflow.trajectory import trajectory_calls

    with pytest.raises(ValueError, match="needs a conversation"):
        trajectory_calls(Target(content="just text"))
