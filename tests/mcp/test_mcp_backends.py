"""The tools and resources on SQLite and on PostgreSQL: the SDK's client talks to the
server in process (the transports are tested in test_mcp_stdio.py and test_mcp_http.py)."""

from __future__ import annotations

import json

from mcp import Client
from mcp_support import FAIL, PASS, error_text, structured

from rubricflow.application import Application
from rubricflow.mcp import LocalCaller, build_server


async def test_a_review_round_trip_on_each_store(any_store: str) -> None:
    async with await Application.open(any_store) as application:
        server = build_server(lambda: application, caller=LocalCaller("bot"))
        async with Client(server, cache=None) as client:
            submitted = structured(
                await client.call_tool(
                    "submit_for_review", {"artifact_type": "note", "content": FAIL}
                )
            )
            artifact = submitted["artifact_id"]
            assert submitted["status"] == "needs_revision"
            revised = structured(
                await client.call_tool(
                    "revise_artifact",
                    {
                        "artifact_id": artifact,
                        "content": PASS,
                        "expected_version": submitted["version"],
                    },
                )
            )
            assert (revised["status"], revised["revision"]) == ("approved", 2)
            review = structured(await client.call_tool("get_review", {"artifact_id": artifact}))
            steps = [(s["revision"], s["action"]) for s in review["history"]]
            assert steps[0] == (1, "create") and steps[-1][0] == 2
            stale = {"artifact_id": artifact, "content": "x", "expected_version": 1}
            assert "version" in error_text(await client.call_tool("revise_artifact", stale))
            listed = structured(await client.call_tool("list_rubrics", {"target_type": "none"}))
            assert listed["rubrics"] == []
            resource = await client.read_resource("rubric://gate")
    assert json.loads(resource.contents[0].text)["version"] == "1.1.0"  # type: ignore[union-attr]
    # the store holds what the tools did, with the actor they were given
    async with await Application.open(any_store) as application:
        stored = await application.artifacts.get(artifact)
        assert (stored.status, stored.created_by) == ("approved", "bot")
