"""Whatever arguments a model writes, a tool answers: a result that matches the tool's
`outputSchema`, or a tool error naming what to fix; never a crash or an internal error,
and the server keeps serving. The SDK's client talks to the server in process (the
transports are tested in test_mcp_stdio.py and test_mcp_http.py), over a real SQLite
store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp_support import FAIL, PASS, prepare_store

from rubricflow.application import Application
from rubricflow.mcp import LocalCaller, build_server
from rubricflow.results import Target

T = TypeVar("T")

FIELDS = [
    "content",
    "rubric",
    "rubric_document",
    "rubric_id",
    "query",
    "artifact_type",
    "content_format",
    "title",
    "submitter",
    "metadata",
    "artifact_id",
    "reason",
    "expected_version",
    "resubmit",
    "target_type",
]
TEXTS = [PASS, FAIL, "gate", "gate@1.0.0", "gate@", "tone", "note", "secret", "json", "text"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(TEXTS)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=12), json_values, max_size=6)
tool_names = st.sampled_from(
    [
        "evaluate_text",
        "submit_for_review",
        "get_review",
        "revise_artifact",
        "list_rubrics",
        "explain_rubric",
    ]
)


class Session:
    """An in-process client on an event loop of its own thread, for synchronous tests.
    One task owns the client (and its task group) from open to close."""

    def __init__(self, db_url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready: asyncio.Future[Client] = self.loop.create_future()
        self.stop = asyncio.Event()
        self.owner = asyncio.run_coroutine_threadsafe(self._own(db_url), self.loop)
        self.client = self.run(self._ready())
        self.schemas = {t.name: t.output_schema for t in self.run(self.client.list_tools()).tools}

    async def _ready(self) -> Client:
        return await self.ready

    async def _own(self, db_url: str) -> None:
        async with await Application.open(db_url) as application:
            self.application = application
            server = build_server(lambda: application, caller=LocalCaller("fuzz"))
            async with Client(server, cache=None) as client:
                self.ready.set_result(client)
                await self.stop.wait()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.owner.result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    folder: Path = tmp_path_factory.mktemp("mcp-fuzz")
    url = f"sqlite+aiosqlite:///{folder / 'fuzz.db'}"
    prepare_store(url)
    opened = Session(url)
    yield opened
    opened.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=tool_names, args=arguments)
def test_any_arguments_get_a_result_or_a_tool_error(
    session: Session, name: str, args: dict[str, Any]
) -> None:
    result = session.run(session.client.call_tool(name, args))
    if result.is_error:
        text = result.content[0].text  # type: ignore[union-attr]
        assert text and "internal error" not in text, text
    else:
        jsonschema.validate(result.structured_content, session.schemas[name])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=st.text(max_size=300), version=st.sampled_from(["1.0.0", "1.1.0"]))
def test_evaluate_text_agrees_with_the_python_api(
    session: Session, content: str, version: str
) -> None:
    """Any text: the tool's verdict, score and criteria are those of `Application.evaluate`
    on the same content; text with NUL is refused with the field named."""
    result = session.run(
        session.client.call_tool("evaluate_text", {"rubric": f"gate@{version}", "content": content})
    )
    if "\x00" in content:
        assert result.is_error and "content" in result.content[0].text  # type: ignore[union-attr]
        return
    tool = result.structured_content
    assert not result.is_error and tool is not None

    async def direct() -> Any:
        rubric = await session.application.rubrics.get("gate", version)
        (evaluation,) = await session.application.evaluate(
            rubric, [Target(content=content)], options={"llm_cache": None}
        )
        return evaluation

    expected = session.run(direct())
    assert (tool["verdict"], tool["score"], tool["rubric_version"]) == (
        expected.verdict,
        expected.score,
        version,
    )
    assert [(c["criterion_id"], c["status"], c["passed"]) for c in tool["criteria"]] == [
        (c.criterion_id, c.status, c.passed) for c in expected.criteria
    ]
    assert [f["criterion_id"] for f in tool["fixes"]] == (["clean"] if not expected.passed else [])
