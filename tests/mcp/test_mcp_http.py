"""MCP over streamable HTTP at `/mcp` of a real `rubricflow serve` (one uvicorn process for
the module), driven by the SDK's own client, behind the API's tokens and roles."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_support import FAIL, PASS, McpServer, error_text, prepare_store, structured

from rubricflow.application import Application
from rubricflow.server import ServerSettings, create_app
from rubricflow.tools.models import GetReviewParams, ReviseArtifactParams

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("token", [None, "rf_not-a-token"])
def test_no_valid_token_is_401_problem(mcp_server: McpServer, token: str | None) -> None:
    headers = dict(MCP_HEADERS)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    response = httpx.post(mcp_server.url, json=INITIALIZE, headers=headers, timeout=30)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["www-authenticate"].startswith("Bearer")
    problem = response.json()
    assert problem["status"] == 401 and "token" in problem["detail"]
    assert problem["instance"] == "/mcp"


async def test_tools_and_resources_over_http(mcp_server: McpServer) -> None:
    async with mcp_server.client(mcp_server.tokens.sub) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        resources = (await client.list_resources()).resources
        rubric = await client.read_resource("rubric://gate@1.0.0")
        explained = structured(await client.call_tool("explain_rubric", {"rubric": "gate"}))
        evaluated = structured(
            await client.call_tool("evaluate_text", {"rubric": "gate", "content": FAIL})
        )
        unjudged = error_text(
            await client.call_tool("evaluate_text", {"rubric": "tone", "content": PASS})
        )
    assert tools["get_review"].input_schema == GetReviewParams.model_json_schema()
    assert tools["revise_artifact"].input_schema == ReviseArtifactParams.model_json_schema()
    assert {r.uri for r in resources} == {"rubric://gate", "rubric://tone"}
    assert json.loads(rubric.contents[0].text)["version"] == "1.0.0"  # type: ignore[union-attr]
    assert explained["version"] == "1.1.0"
    assert evaluated["verdict"] == "fail" and evaluated["fixes"][0]["criterion_id"] == "clean"
    # the fix names this host's setting: the server's, not the stdio command's
    assert "'rubricflow serve --llm SPEC'" in unjudged and "polite" in unjudged


async def test_roles_and_owners_hold_for_tools(mcp_server: McpServer) -> None:
    tokens = mcp_server.tokens
    async with mcp_server.client(tokens.sub) as sub:
        submitted = structured(
            await sub.call_tool("submit_for_review", {"artifact_type": "note", "content": FAIL})
        )
        artifact = submitted["artifact_id"]
        assert submitted["status"] == "needs_revision"
        # the token's types bound what it may submit
        refused = error_text(
            await sub.call_tool("submit_for_review", {"artifact_type": "secret", "content": PASS})
        )
        assert "'secret'" in refused and "token" in refused
    # another submitter neither sees nor revises it: as if it did not exist
    async with mcp_server.client(tokens.other) as other:
        hidden = error_text(await other.call_tool("get_review", {"artifact_id": artifact}))
        assert f"no artifact {artifact!r}" in hidden
        refused = error_text(
            await other.call_tool("revise_artifact", {"artifact_id": artifact, "content": PASS})
        )
        assert f"no artifact {artifact!r}" in refused
    # a reviewer reads every artifact; the audit trail names the token, not a claim
    async with mcp_server.client(tokens.rev) as reviewer:
        review = structured(await reviewer.call_tool("get_review", {"artifact_id": artifact}))
        assert review["status"] == "needs_revision"
        actors = {step["action"]: step["actor"] for step in review["history"]}
        assert actors["create"] == actors["submit"] == "sub"
    async with mcp_server.client(tokens.sub) as sub:
        revised = structured(
            await sub.call_tool("revise_artifact", {"artifact_id": artifact, "content": PASS})
        )
        assert revised["status"] == "approved"
        metadata = {"key": "submitter", "value": "bot-7"}
        claimed = structured(
            await sub.call_tool(
                "submit_for_review",
                {"artifact_type": "note", "content": PASS, "metadata": [metadata]},
            )
        )
    # the artifact is the API's too: the same token reads it over REST
    with mcp_server.server.client(tokens.sub) as http:
        shown = http.get(f"/v1/artifacts/{claimed['artifact_id']}")
        assert shown.status_code == 200
        assert shown.json()["created_by"] == "sub"


def test_without_the_extra_serve_mounts_nothing() -> None:
    """Where the SDK cannot be imported, the API is served as before and /mcp is not a
    route (a request gets the API's 404)."""
    script = (
        "import sys; sys.modules['mcp'] = None\n"
        "from fastapi import FastAPI\n"
        "from rubricflow.server.mcp_mount import mount_mcp\n"
        "from rubricflow.server.settings import ServerSettings\n"
        "app = FastAPI()\n"
        "run = mount_mcp(app, ServerSettings())\n"
        "with run():\n"
        "    print(sorted(getattr(r, 'path', '') for r in app.router.routes))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "/mcp" not in done.stdout and "/docs" in done.stdout


def test_a_rebound_host_name_is_refused(mcp_server: McpServer) -> None:
    """The server is on a loopback address: a page whose DNS name was rebound to it
    (another Host or Origin) is refused, even with a token."""
    auth = {"Authorization": f"Bearer {mcp_server.tokens.admin}", **MCP_HEADERS}
    for extra in ({"Host": "evil.example"}, {"Origin": "http://evil.example"}):
        response = httpx.post(
            mcp_server.url, json=INITIALIZE, headers={**auth, **extra}, timeout=30
        )
        assert response.status_code in (400, 403, 421), (extra, response.status_code)
    fine = httpx.post(mcp_server.url, json=INITIALIZE, headers=auth, timeout=30)
    assert fine.status_code == 200, fine.text
    assert fine.json()["result"]["serverInfo"]["name"] == "rubricflow"


async def test_the_documented_python_client_works(mcp_server: McpServer) -> None:
    """docs/mcp.md's Python snippet, run as written against this server."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
    (snippet,) = [b for b in re.findall(r"```python\n(.*?)```", docs, re.S) if "httpx2" in b]
    snippet = snippet.replace("http://127.0.0.1:8000/mcp", mcp_server.url)
    snippet = snippet.replace('"blog_post"', '"note"')
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "docs/mcp.md", "exec"), namespace)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        await namespace["main"](mcp_server.tokens.sub)
    assert printed.getvalue().strip() == "approved"


async def test_under_no_auth_every_request_is_the_local_admin(tmp_path: Path) -> None:
    """`rubricflow serve --no-auth` (loopback only): /mcp needs no token, as the API does.
    The app runs in process (its lifespan entered by hand) to spare a server start."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'open.db'}"
    prepare_store(url)
    settings = ServerSettings(db=url, auth=False, review_workers=0, webhooks=False)
    app = create_app(settings)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "submit_for_review",
            "arguments": {"artifact_type": "secret", "content": PASS},
        },
    }
    headers = {**MCP_HEADERS, "MCP-Protocol-Version": "2025-11-25"}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
            opened = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            done = await http.post("/mcp", json=call, headers=headers)
    assert opened.status_code == 200, opened.text
    assert done.status_code == 200, done.text
    result = done.json()["result"]
    assert result["isError"] is False and result["structuredContent"]["status"] == "approved"
    async with await Application.open(url) as application:
        artifact = await application.artifacts.get(result["structuredContent"]["artifact_id"])
    assert artifact.created_by == "local"
