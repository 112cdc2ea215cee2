"""A rubric's JSON Schema is a stranger's (an inline rubric on `POST /v1/evaluate`): a
`$ref` outside the schema is never fetched nor read when the `schema` scorer runs; the
criterion is an `error` naming the reference. References within the schema still work."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rubricflow import parse_rubric
from rubricflow.engine import evaluate
from rubricflow.plugins import PluginRegistry
from rubricflow.results import Target


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 that serves a schema and counts who asks for it."""
    hits: list[str] = []

    class Counting(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def _rubric(schema: dict[str, Any]) -> Any:
    criterion = {"id": "shape", "scoring": {"method": "schema", "schema": schema}}
    return parse_rubric({"id": "refs", "criteria": [criterion]})


async def test_remote_and_file_references_are_never_resolved(
    plugins: PluginRegistry, schema_host: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, hits = schema_host
    local = tmp_path / "schema.json"
    local.write_text('{"type": "integer"}')
    for ref in (f"{url}/s.json", local.as_uri()):
        schema = {"properties": {"n": {"$ref": ref}}}
        evaluation = await evaluate(_rubric(schema), Target(content={"n": "x"}), plugins=plugins)
        result = evaluation.criteria[0]
        assert result.status == "error", result
        assert ref in (result.notes or "")
        assert "never read nor fetched" in (result.notes or "")
    assert hits == []


async def test_references_within_the_schema_still_resolve(plugins: PluginRegistry) -> None:
    schema = {"$defs": {"n": {"type": "integer"}}, "properties": {"n": {"$ref": "#/$defs/n"}}}
    evaluation = await evaluate(_rubric(schema), Target(content={"n": "x"}), plugins=plugins)
    assert evaluation.criteria[0].verdict == "UNMET"
    assert evaluation.criteria[0].evidence == ("$.n: 'x' is not of type 'integer'",)
