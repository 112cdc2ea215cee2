"""Multi-turn rewards: a completion that is a list of messages (verifiers' multi-turn
environments, TRL's conversational datasets with tool calls) is judged as the
conversation it is, turn by turn and call by call; one assistant message of text is still
judged as its text."""

from __future__ import annotations

from typing import Any

from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from rubricflow.rewards import trl_reward, verifiers_reward
from rubricflow.rewards.columns import completion_content

from .judge import FAST, spec
from .test_trl import trl_call

CHECKS = {
    "id": "agent",
    "criteria": [
        {
            "id": "searched",
            "description": "searched first",
            "scoring": {
                "method": "deterministic",
                "function": "trajectory.tool_sequence",
                "config": {"expected": ["search", "book"], "mode": "in_order"},
            },
        },
        {
            "id": "polite_every_turn",
            "description": "no turn is rude",
            "scope": "each_turn",
            "aggregation": "all",
            "scoring": {
                "method": "deterministic",
                "function": "contains_none",
                "config": {"terms": ["stupid"]},
            },
        },
    ],
}
PROMPT = [{"role": "user", "content": "Book the morning flight to Lisbon."}]


def run(answer: str, *tools: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for number, name in enumerate(tools):
        call = {
            "id": str(number),
            "type": "function",
            "function": {"name": name, "arguments": "{}"},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": str(number), "content": "ok"})
    messages.append({"role": "assistant", "content": answer})
    return messages


async def test_a_verifiers_multi_turn_completion_is_judged_as_a_conversation() -> None:
    reward = verifiers_reward(CHECKS, cache=None)
    good = await reward(prompt=PROMPT, completion=run("Booked.", "search", "book"))
    skipped = await reward(prompt=PROMPT, completion=run("Booked.", "book"))
    rude = await reward(prompt=PROMPT, completion=run("Booked, stupid.", "search", "book"))
    assert (good, skipped, rude) == (1.0, 0.5, 0.5)


def test_trl_conversational_completions_with_tool_calls() -> None:
    reward = trl_reward(CHECKS, cache=None)
    rewards, _ = trl_call(
        reward,
        [PROMPT, PROMPT],
        [run("Booked.", "search", "book"), run("Booked.", "book", "search")],
    )
    assert rewards == [1.0, 0.5]


def judged_turns(request: Recorded) -> Reply:
    return openai_reply(verdict("UNMET" if "stupid" in request.text else "MET"))


def test_each_turn_of_a_multi_turn_completion_reaches_the_judge() -> None:
    rubric = {
        "id": "kind",
        "criteria": [{"id": "kind", "description": "kind", "scope": "each_turn"}],
    }
    completion = [
        {"role": "assistant", "content": "Which day?"},
        {"role": "user", "content": "Monday."},
        {"role": "assistant", "content": "Done, stupid."},
    ]
    with ScriptedServer(judged_turns) as server:
        reward = trl_reward(rubric, judge=spec(server), judge_settings=FAST, cache=None)
        rewards, _ = trl_call(reward, [PROMPT], [completion])
        asked = [request.text for request in server.requests]
    assert rewards == [0.0]  # min over the turns: turn 2 fails
    assert len(asked) == 2 and any("Which day?" in text for text in asked)


def test_one_assistant_message_of_text_is_still_its_text() -> None:
    assert completion_content([{"role": "assistant", "content": "Paris."}], PROMPT) == "Paris."
    content = completion_content(run("Booked.", "search"), "Book it")
    assert content[0] == {"role": "user", "content": "Book it"}
    assert content[1]["tool_calls"][0]["function"]["name"] == "search"
