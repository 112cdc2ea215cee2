"""Typed content through the agent tools: `content_format: "conversation"` carries a
conversation (OpenAI's or Anthropic's messages) into evaluate_text, submit_for_review and
revise_artifact; one out of shape is refused naming its path, before anything is stored."""

from __future__ import annotations

import json

from rubricflow.application import Application
from rubricflow.tools import ToolDispatcher

from .test_dispatch import call_openai, error_of

RUBRIC = """
id: chat
criteria:
  - id: looked_up
    description: the order was looked up
    scoring:
      method: deterministic
      function: trajectory.tool_used
      config: {name: lookup}
  - id: polite_turns
    description: every turn says please
    scope: each_turn
    aggregation: all
    scoring: {method: deterministic, function: contains_all, config: {terms: [please]}}
"""
TALK = [
    {"role": "user", "content": "Where is my order?"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "shipped"}],
    },
    {"role": "assistant", "content": "It has shipped; please allow two days."},
]


async def test_evaluate_text_takes_a_conversation(app: Application) -> None:
    tools = ToolDispatcher(app)
    arguments = {
        "content": json.dumps(TALK),
        "content_format": "conversation",
        "rubric_document": RUBRIC,
    }
    result = await call_openai(tools, "evaluate_text", arguments)
    assert result["verdict"] == "pass", result
    rude = [*TALK[:3], {"role": "assistant", "content": "Shipped."}]
    failed = await call_openai(tools, "evaluate_text", {**arguments, "content": json.dumps(rude)})
    assert failed["verdict"] == "fail"
    assert [f["criterion_id"] for f in failed["fixes"]] == ["polite_turns"]


async def test_a_conversation_out_of_shape_is_refused_with_its_path(app: Application) -> None:
    tools = ToolDispatcher(app)
    remote = [
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x.invalid/a.png"}}],
        }
    ]
    error = await error_of(
        tools,
        "submit_for_review",
        {"artifact_type": "post", "content": json.dumps(remote), "content_format": "conversation"},
    )
    assert "$.messages[0].content[0]" in json.dumps(error) and "not fetched" in json.dumps(error)
    plain = await error_of(
        tools,
        "evaluate_text",
        {"content": '{"a": 1}', "content_format": "conversation", "rubric_document": RUBRIC},
    )
    assert "not a conversation" in json.dumps(plain)
    assert await app.artifacts.list_artifacts() == []


async def test_submit_for_review_stores_the_conversation_as_sent(app: Application) -> None:
    tools = ToolDispatcher(app)
    submitted = await call_openai(
        tools,
        "submit_for_review",
        {"artifact_type": "post", "content": json.dumps(TALK), "content_format": "conversation"},
    )
    stored = await app.artifacts.get(submitted["artifact_id"])
    assert stored.content == TALK
