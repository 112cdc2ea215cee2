"""Building the app routes `/mcp` (the extra is installed) without importing the MCP
SDK: a program that builds the app without running it (to read its OpenAPI document, to
mount it in its own ASGI stack) does not pay for the SDK. The server imports it while it
starts (tests/mcp/test_mcp_first_contact.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from .conftest import issue_token, spawn_server

PROGRAM = """
import json, sys
from rubricflow.server.app import create_app
from rubricflow.server.settings import ServerSettings
app = create_app(ServerSettings(db=sys.argv[1], auth=False, mcp=sys.argv[2] == "on"))
print(json.dumps({
    "routed": any(getattr(route, "path", None) == "/mcp" for route in app.routes),
    "imported": sorted(n for n in sys.modules if n == "mcp" or n.startswith("mcp.")),
}))
"""


def _built(tmp_path: Path, mcp: str) -> dict[str, object]:
    """What a fresh process that builds the app (MCP `on` or `off`) routes and imports."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, f"sqlite+aiosqlite:///{tmp_path / 'app.db'}", mcp],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_building_the_app_routes_mcp_without_importing_the_sdk(tmp_path: Path) -> None:
    assert _built(tmp_path, "on") == {"routed": True, "imported": []}


def test_an_app_without_mcp_routes_nothing_there(tmp_path: Path) -> None:
    assert _built(tmp_path, "off") == {"routed": False, "imported": []}


@pytest.mark.parametrize("option", ["--no-mcp", "RUBRICFLOW_SERVER_MCP=0"])
def test_a_server_started_without_mcp_answers_404_there_and_the_api_still_works(
    tmp_path: Path, sqlite_db: str, option: str
) -> None:
    """`rubricflow serve --no-mcp` (or the variable, with no option given): /mcp is the
    API's 404 for a valid token, where a server with MCP hands the request to the SDK."""
    token = issue_token(sqlite_db, "admin")
    with_mcp = spawn_server(sqlite_db, log=tmp_path / "with.log", mcp=True)
    if option.startswith("--"):
        without = spawn_server(sqlite_db, log=tmp_path / "without.log")
    else:
        name, _, value = option.partition("=")
        without = spawn_server(sqlite_db, log=tmp_path / "without.log", env={name: value}, mcp=True)
    try:
        headers = {"Authorization": f"Bearer {token}"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        served = httpx.post(f"{with_mcp.url}/mcp", json=body, headers=headers, timeout=30)
        refused = httpx.post(f"{without.url}/mcp", json=body, headers=headers, timeout=30)
        assert served.status_code != 404, served.text
        assert refused.status_code == 404, refused.text
        rubrics = httpx.get(f"{without.url}/v1/rubrics", headers=headers, timeout=30)
        assert rubrics.status_code == 200, rubrics.text
    finally:
        with_mcp.kill_group()
        without.kill_group()
