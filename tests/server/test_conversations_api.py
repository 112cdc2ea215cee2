"""A conversation is a target over HTTP as it is: `POST /v1/evaluate` takes the messages
as content, and a conversation that breaks its shape or bounds (a remote image URL) is
refused at the door with the path, not scored."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .artifact_setup import Tokens, prepare
from .conftest import RunningServer

TALK = [
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hello! How can I help you today with your order?"},
]


@pytest.fixture(scope="module")
def tokens(module_server: RunningServer) -> Tokens:
    return prepare(module_server.db_url)


@pytest.fixture
def sub(module_server: RunningServer, tokens: Tokens) -> Iterator[httpx.Client]:
    with module_server.client(tokens.sub) as client:
        yield client


def test_evaluate_takes_a_conversation(sub: httpx.Client) -> None:
    answer = sub.post("/v1/evaluate", json={"rubric": "gate", "target": {"content": TALK}})
    assert answer.status_code == 200, answer.text


def test_a_remote_image_is_refused_at_the_door(sub: httpx.Client) -> None:
    remote = [
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x.invalid/a.png"}}],
        }
    ]
    answer = sub.post("/v1/evaluate", json={"rubric": "gate", "target": {"content": remote}})
    assert answer.status_code in (400, 422), answer.text
    assert "not fetched" in answer.text
