"""A type's `content_schema` is strangers' data (issue 27, finding 3), over HTTP on SQLite
and PostgreSQL: its `pattern`s run on the bounded regex engine, off the event loop (a
submission of 40 `a`s and a `!` against `^(a+)+$` used to hold the whole server for 90 s
and more); a `$ref` outside the schema is refused when the type is set, and one stored
before that refusal existed is never fetched nor read at submission."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from review.conftest import run_blocking

from rubricflow.review import ArtifactType, RubricBinding
from rubricflow.store import Store
from rubricflow.store.artifacts import ArtifactRepository

from .artifact_setup import Tokens, prepare
from .conftest import RunningServer

EVIL = "a" * 40 + "!"


@pytest.fixture(scope="module")
def tokens(module_server: RunningServer) -> Tokens:
    return prepare(module_server.db_url)


@pytest.fixture
def admin(module_server: RunningServer, tokens: Tokens) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {tokens.admin}"}
    with httpx.Client(base_url=module_server.url, headers=headers, timeout=120) as client:
        yield client


def _set_type(admin: httpx.Client, name: str, schema: dict[str, Any]) -> httpx.Response:
    body = {"rubrics": [{"rubric_id": "gate"}], "content_schema": schema}
    return admin.put(f"/v1/types/{name}", json=body)


def _submit_while_health_answers(
    server: RunningServer, admin: httpx.Client, body: dict[str, Any]
) -> httpx.Response:
    """Send the submission; while it is in flight (or once it is answered), /healthz must
    answer within 5 s, every time it is asked."""
    with ThreadPoolExecutor(1) as pool:
        sent = pool.submit(admin.post, "/v1/submissions", json=body)
        with httpx.Client(base_url=server.url, timeout=5) as health:
            for _ in range(3):
                assert health.get("/healthz").status_code == 200
        return sent.result(timeout=120)


@pytest.mark.parametrize(
    ("schema", "content", "message"),
    [
        (
            {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}},
            {"s": EVIL},
            f"$/s: '{EVIL}' does not match '^(a+)+$'",
        ),
        (
            {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}}},
            {EVIL: "x", "aaa": "not a number"},
            "$/aaa: 'not a number' is not of type 'integer'",
        ),
        (
            {"type": "object", "additionalProperties": False, "patternProperties": {"^(a+)+$": {}}},
            {EVIL: 1},
            "does not match any of the regexes",
        ),
    ],
    ids=["pattern", "patternProperties", "additionalProperties"],
)
def test_backtracking_patterns_answer_promptly_with_the_outcome(
    module_server: RunningServer,
    admin: httpx.Client,
    schema: dict[str, Any],
    content: dict[str, Any],
    message: str,
    request: pytest.FixtureRequest,
) -> None:
    name = f"redos-{request.node.callspec.id.split('-')[-1]}"
    assert _set_type(admin, name, schema).status_code == 200
    answer = _submit_while_health_answers(
        module_server, admin, {"type": name, "content": content, "id": f"{name}-1"}
    )
    assert answer.status_code == 422, answer.text
    assert message in answer.json()["detail"]
    assert admin.get(f"/v1/artifacts/{name}-1").status_code == 404  # nothing was created
    good = {"type": name, "content": {"s": "aaaa"} if "properties" in schema else {}}
    assert admin.post("/v1/submissions", json=good).status_code == 201


@pytest.mark.parametrize(
    ("name", "ref"),
    [
        ("file", "file:///etc/passwd"),
        ("http", "http://127.0.0.1:9/schema.json"),
        ("relative", "other.json"),
        ("relative-pointer", "defs.json#/$defs/title"),
    ],
)
def test_a_reference_outside_the_schema_is_refused_when_the_type_is_set(
    admin: httpx.Client, name: str, ref: str
) -> None:
    schema = {"type": "object", "properties": {"title": {"$ref": ref}}}
    answer = _set_type(admin, name, schema)
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert "refers outside itself at $/properties/title/$ref" in detail
    assert repr(ref) in detail
    assert admin.get(f"/v1/types/{name}").status_code == 404
    # references within the schema are fine
    inner = {"$defs": {"t": {"type": "string"}}, "properties": {"title": {"$ref": "#/$defs/t"}}}
    assert _set_type(admin, name, inner).status_code == 200
    wrong = admin.post("/v1/submissions", json={"type": name, "content": {"title": 5}})
    assert wrong.status_code == 422
    assert "$/title: 5 is not of type 'string'" in wrong.json()["detail"]


class _Counting(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 that serves a schema and counts who asks for it."""
    hits: list[str] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def _store_type(db_url: str, artifact_type: ArtifactType) -> None:
    """Write a type straight through the store, as the code before the refusal allowed."""

    async def write() -> None:
        async with await Store.open(db_url) as store:
            await ArtifactRepository(store.database).put_type(artifact_type)

    run_blocking(write())


def test_a_stored_type_with_remote_references_fetches_and_reads_nothing(
    module_server: RunningServer,
    admin: httpx.Client,
    schema_host: tuple[str, list[str]],
    tmp_path: Path,
) -> None:
    url, hits = schema_host
    local = tmp_path / "secret-schema.json"
    local.write_text('{"type": "integer"}')
    schema = {
        "type": "object",
        "properties": {"remote": {"$ref": f"{url}/s.json"}, "local": {"$ref": local.as_uri()}},
    }
    binding = (RubricBinding(rubric_id="gate"),)
    _store_type(
        module_server.db_url, ArtifactType(name="old-refs", rubrics=binding, content_schema=schema)
    )
    for content in ({"remote": "text"}, {"local": "text"}):
        answer = admin.post("/v1/submissions", json={"type": "old-refs", "content": content})
        assert answer.status_code == 422, answer.text
        detail = answer.json()["detail"]
        assert "outside itself" in detail
        assert "never read nor fetched" in detail
        assert "is not of type 'integer'" not in detail  # what the referred schema says
    made = admin.post("/v1/artifacts", json={"type": "old-refs", "content": {"remote": "x"}})
    assert made.status_code == 201
    submitted = admin.post(f"/v1/artifacts/{made.json()['id']}/submit")
    assert submitted.status_code == 422, submitted.text
    assert "never read nor fetched" in submitted.json()["detail"]
    assert hits == []
