"""Whatever a model writes in a tool call, the dispatcher answers with a tool result in
the provider's shape: it never raises into the bot loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubricflow.application import Application
from rubricflow.tools import TOOL_NAMES, TOOLS, ToolDispatcher

from .conftest import seed

FIELDS = sorted({name for spec in TOOLS for name in spec.params.model_fields})
WORDS = ["post", "post@1.0.0", "post@", "tone", "queued-post", "text", "json", "id: r"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(WORDS),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
argument_objects = st.dictionaries(
    st.sampled_from(FIELDS) | st.text(max_size=10),
    json_values,
    max_size=6,
)
#: valid arguments per tool, which the fuzzer changes one field of
VALID: dict[str, dict[str, Any]] = {
    "evaluate_text": {"content": "Hello, please", "rubric": "post"},
    "submit_for_review": {"artifact_type": "post", "content": "Hello, please"},
    "get_review": {"artifact_id": "a1"},
    "revise_artifact": {"artifact_id": "a1", "content": "Hello again, please"},
    "list_rubrics": {},
    "explain_rubric": {"rubric": "post"},
}


@st.composite
def nearly_valid(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A tool and valid arguments with one field set to anything."""
    name = draw(st.sampled_from(TOOL_NAMES))
    arguments = dict(VALID[name])
    arguments[draw(st.sampled_from(FIELDS))] = draw(json_values)
    return name, arguments


names = st.sampled_from(TOOL_NAMES) | st.text(max_size=20) | st.none() | st.integers()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, ToolDispatcher]]:
    """A dispatcher over a seeded SQLite store, on an event loop of its own (hypothesis
    runs each example synchronously)."""
    loop = asyncio.new_event_loop()
    path = tmp_path_factory.mktemp("fuzz") / "tools.db"
    application = loop.run_until_complete(Application.open(f"sqlite+aiosqlite:///{path}"))
    loop.run_until_complete(seed(application))
    try:
        yield loop, ToolDispatcher(application)
    finally:
        loop.run_until_complete(application.close())
        loop.close()


def check_content(text: Any) -> None:
    assert isinstance(text, str)
    payload = json.loads(text)
    assert isinstance(payload, dict)
    if "error" in payload:
        assert isinstance(payload["error"]["message"], str) and payload["error"]["message"]
        assert payload["error"]["type"] != "internal_error", payload


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=names,
    arguments=argument_objects.map(json.dumps) | st.text(max_size=40) | json_values.map(json.dumps),
)
def test_openai_calls_never_raise(
    running: tuple[Any, ToolDispatcher], name: Any, arguments: str
) -> None:
    loop, tools = running
    call = {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}
    message = loop.run_until_complete(tools.dispatch(call))
    assert message["role"] == "tool" and message["tool_call_id"] == "c"
    check_content(message["content"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names, arguments=argument_objects | json_values)
def test_anthropic_calls_never_raise(
    running: tuple[Any, ToolDispatcher], name: Any, arguments: Any
) -> None:
    loop, tools = running
    block = loop.run_until_complete(
        tools.dispatch({"type": "tool_use", "id": "t", "name": name, "input": arguments})
    )
    assert block["type"] == "tool_result" and block["tool_use_id"] == "t"
    assert isinstance(block["is_error"], bool)
    check_content(block["content"])
    assert ("error" in json.loads(block["content"])) == block["is_error"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=nearly_valid())
def test_nearly_valid_calls_never_raise(
    running: tuple[Any, ToolDispatcher], call: tuple[str, dict[str, Any]]
) -> None:
    loop, tools = running
    name, arguments = call
    block = loop.run_until_complete(
        tools.dispatch({"type": "tool_use", "id": "t", "name": name, "input": arguments})
    )
    check_content(block["content"])
