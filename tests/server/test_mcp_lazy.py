"""Building the app routes `/mcp` (the extra is installed) without importing the MCP
SDK: a program that builds the app without running it (to read its OpenAPI document, to
mount it in its own ASGI stack) does not pay for the SDK. The server imports it while it
starts (tests/mcp/test_mcp_first_contact.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROGRAM = """
import json, sys
from rubricflow.server.app import create_app
from rubricflow.server.settings import ServerSettings
app = create_app(ServerSettings(db=sys.argv[1], auth=False))
print(json.dumps({
    "routed": any(getattr(route, "path", None) == "/mcp" for route in app.routes),
    "imported": sorted(n for n in sys.modules if n == "mcp" or n.startswith("mcp.")),
}))
"""


def test_building_the_app_routes_mcp_without_importing_the_sdk(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, f"sqlite+aiosqlite:///{tmp_path / 'lazy.db'}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"routed": True, "imported": []}
