"""Conversations through the review gate over HTTP (a real `rubricflow serve`): `POST
/v1/submissions` takes a conversation as content and reviews it turn by turn and call by
call; a conversation that breaks its shape (a remote image URL) is refused at the door;
`POST /v1/evaluate` reads `traces` (OTel spans, chat-completion logs) with the readers of
`rubricflow eval --from`."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from review.conftest import run_blocking

from rubricflow.application import Application
from rubricflow.model import parse_rubric
from rubricflow.review import ArtifactType, RubricBinding

from .conftest import RunningServer

RUBRIC = {
    "id": "support-turns",
    "version": "1.0.0",
    "criteria": [
        {
            "id": "no_refunds_promised",
            "description": "No assistant turn promises a refund.",
            "scope": "each_turn",
            "aggregation": "all",
            "required": True,
            "scoring": {
                "method": "deterministic",
                "function": "contains_none",
                "config": {"terms": ["refund"]},
            },
        },
        {
            "id": "looked_up",
            "description": "The order was looked up.",
            "scoring": {
                "method": "deterministic",
                "function": "trajectory.tool_used",
                "config": {"name": "lookup_order"},
            },
        },
    ],
}


def talk(last: str) -> list[dict[str, object]]:
    return [
        {"role": "user", "content": "Where is order 42?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"id": 42}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": "shipped"},
        {"role": "assistant", "content": "It has shipped."},
        {"role": "user", "content": "It is late!"},
        {"role": "assistant", "content": last},
    ]


@pytest.fixture(scope="module")
def token(module_sqlite_server: RunningServer) -> str:
    async def work() -> str:
        async with await Application.open(module_sqlite_server.db_url) as app:
            await app.store.rubrics.register(parse_rubric(RUBRIC))
            binding = (RubricBinding(rubric_id=RUBRIC["id"]),)
            await app.artifacts.set_type(ArtifactType(name="support-chat", rubrics=binding))
            issued = await app.store.tokens.create(
                "chat-bot", role="submitter", types=("support-chat",), created_by="tests"
            )
            return issued.secret

    secret: str = run_blocking(work())
    return secret


@pytest.fixture
def bot(module_sqlite_server: RunningServer, token: str) -> Iterator[httpx.Client]:
    with module_sqlite_server.client(token) as client:
        yield client


def test_a_conversation_is_reviewed_turn_by_turn(bot: httpx.Client) -> None:
    good = bot.post(
        "/v1/submissions",
        json={"type": "support-chat", "content": talk("Sorry for the wait; it arrives today.")},
    )
    assert good.status_code == 201, good.text
    assert good.json()["status"] == "approved"

    bad = bot.post(
        "/v1/submissions",
        json={"type": "support-chat", "content": talk("You will get a full refund.")},
    )
    assert bad.status_code == 201, bad.text
    outcome = bad.json()
    assert outcome["approved"] is False
    artifact_id = outcome["artifact"]["id"]
    (evaluation,) = bot.get(f"/v1/artifacts/{artifact_id}/evaluations").json()
    criterion = next(
        c for c in evaluation["criteria"] if c["criterion_id"] == "no_refunds_promised"
    )
    said = " ".join(criterion["evidence"])
    assert "assistant turn 2 (message 5) failed" in said, said
    # the content is stored as it was sent (OpenAI's shape), not rewritten
    shown = bot.get(f"/v1/artifacts/{artifact_id}").json()
    assert shown["content"][1]["tool_calls"][0]["function"]["name"] == "lookup_order"


def test_a_conversation_that_breaks_its_shape_is_refused_at_the_door(bot: httpx.Client) -> None:
    remote = [
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x.invalid/a.png"}}],
        }
    ]
    answer = bot.post("/v1/submissions", json={"type": "support-chat", "content": remote})
    assert answer.status_code == 422, answer.text
    assert "not fetched" in answer.text and "$.messages[0].content[0]" in answer.text


def test_evaluate_reads_traces(bot: httpx.Client) -> None:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "startTimeUnixNano": "1",
        "attributes": [
            {
                "key": "gen_ai.input.messages",
                "value": {
                    "stringValue": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": "Order 42?"}]}]
                    )
                },
            },
            {
                "key": "gen_ai.output.messages",
                "value": {
                    "stringValue": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [
                                    {
                                        "type": "tool_call",
                                        "id": "c1",
                                        "name": "lookup_order",
                                        "arguments": {"id": 42},
                                    }
                                ],
                            }
                        ]
                    )
                },
            },
        ],
    }
    otel = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    answer = bot.post(
        "/v1/evaluate",
        json={"rubric": RUBRIC["id"], "traces": {"format": "otel", "data": otel}},
    )
    assert answer.status_code == 200, answer.text
    (evaluation,) = answer.json()["evaluations"]
    assert evaluation["target_id"] == span["traceId"]
    looked = next(c for c in evaluation["criteria"] if c["criterion_id"] == "looked_up")
    assert looked["verdict"] == "MET"

    logs = [{"id": "call-1", "messages": talk("Sorry, a refund is on its way.")}]
    answer = bot.post(
        "/v1/evaluate",
        json={"rubric": RUBRIC["id"], "traces": {"format": "openai-chat", "data": logs}},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["evaluations"][0]["verdict"] == "fail"

    broken = bot.post(
        "/v1/evaluate",
        json={"rubric": RUBRIC["id"], "traces": {"format": "openai-chat", "data": [{"x": 1}]}},
    )
    assert broken.status_code == 422
    assert "traces.data line 1: no `messages`" in broken.text
