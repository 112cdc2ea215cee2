"""A fresh `rubricflow serve` answers its first MCP request at once: the SDK is imported
and its session manager started before the server listens, so the SDK's client, with its
default 5 s timeout, is not kept waiting by that import (14.5 s on a loaded machine,
where docs/mcp.md's example died of a ReadTimeout). A client that hangs up mid-request
leaves one log line, never a traceback or a 500."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import PASS, McpServer, prepare_store, structured
from server.conftest import RunningServer, spawn_server, wait_until

SLOW_SDK_SERVE = (str(Path(__file__).with_name("slow_sdk_serve.py")),)
#: longer than the SDK client's default timeout (5 s): a first request that waited for
#: the import would time out
SDK_DELAY = "8"


def _access_lines(server: RunningServer) -> list[dict[str, object]]:
    lines = []
    for line in server.output().splitlines():
        if line.startswith("{") and '"status"' in line:
            lines.append(json.loads(line))
    return lines


async def test_the_first_request_after_start_is_answered_within_the_clients_default_timeout(
    tmp_path: Path,
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'first.db'}"
    tokens = prepare_store(url)
    # the SDK's import takes 8 s here, as on a loaded machine; the server is ready when
    # /healthz answers (spawn_server waits for that)
    server = spawn_server(
        url,
        log=tmp_path / "server.log",
        launcher=SLOW_SDK_SERVE,
        env={"RUBRICFLOW_TEST_SDK_DELAY": SDK_DELAY},
        mcp=True,
    )
    try:
        mcp = McpServer(server, tokens)
        # docs/mcp.md's client as written: the SDK's defaults, no timeout of ours
        headers = {"Authorization": f"Bearer {tokens.sub}"}
        async with httpx2.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(mcp.url, http_client=http)
            async with Client(transport) as client:
                result = await client.call_tool(
                    "submit_for_review", {"artifact_type": "note", "content": PASS}
                )
        assert structured(result)["status"] == "approved"
    finally:
        server.stop()
    log = server.output()
    assert "Traceback" not in log, log
    assert not [line for line in _access_lines(server) if line["status"] == 500], log


def test_a_client_that_hangs_up_mid_request_leaves_no_traceback_and_no_500(
    tmp_path: Path,
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'hangup.db'}"
    tokens = prepare_store(url)
    server = spawn_server(url, log=tmp_path / "server.log", mcp=True)
    try:
        address = urlsplit(server.url)
        # a POST that promises 1,000 bytes of JSON, sends 20, and hangs up
        head = (
            "POST /mcp HTTP/1.1\r\n"
            f"Host: {address.netloc}\r\n"
            f"Authorization: Bearer {tokens.sub}\r\n"
            "Accept: application/json, text/event-stream\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n"
        )
        with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
            sock.sendall(head.encode() + b'{"jsonrpc": "2.0", ')
        # the server logs the request once it gives up on it
        assert wait_until(lambda: any(line["path"] == "/mcp" for line in _access_lines(server)))
        # and it still answers the next client
        mcp = McpServer(server, tokens)
        answered = httpx2.post(
            mcp.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            },
            headers={"Authorization": f"Bearer {tokens.sub}", "Accept": "application/json"},
            timeout=30,
        )
        assert answered.status_code == 200, answered.text
    finally:
        server.stop()
    log = server.output()
    assert "Traceback" not in log, log
    statuses = [line["status"] for line in _access_lines(server) if line["path"] == "/mcp"]
    assert statuses == [499, 200], log
    assert "hung up" in log
