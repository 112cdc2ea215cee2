"""A conversation through the MCP server's evaluate_text (the SDK's client, in process)."""

from __future__ import annotations

import json

from mcp import Client
from mcp_support import error_text, structured

from rubricflow.application import Application
from rubricflow.mcp import LocalCaller, build_server

RUBRIC = """
id: chat
criteria:
  - id: answered_last
    description: the run ends with an answer after its tools
    scoring: {method: deterministic, function: trajectory.final_answer_follows_tools}
"""
RUN = [
    {"role": "user", "content": "Weather?"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "1", "content": "rain"},
    {"role": "assistant", "content": "It rains."},
]


async def test_evaluate_text_takes_a_conversation_over_mcp(store_db: str) -> None:
    async with await Application.open(store_db) as application:
        server = build_server(lambda: application, caller=LocalCaller("bot"))
        async with Client(server, cache=None) as client:
            arguments = {
                "content": json.dumps(RUN),
                "content_format": "conversation",
                "rubric_document": RUBRIC,
            }
            passed = structured(await client.call_tool("evaluate_text", arguments))
            cut = {**arguments, "content": json.dumps(RUN[:3])}
            failed = structured(await client.call_tool("evaluate_text", cut))
            wrong = {**arguments, "content": "[1, 2]"}
            refused = error_text(await client.call_tool("evaluate_text", wrong))
    assert passed["verdict"] == "pass" and failed["verdict"] == "fail"
    assert "not a conversation" in refused
