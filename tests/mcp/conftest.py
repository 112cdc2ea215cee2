"""Fixtures for the MCP tests: prepared stores (SQLite, PostgreSQL) and one `rubricflow
serve` per module (`mcp_support.py` has the helpers)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_support import McpServer, prepare_store
from review.conftest import PG_DEFAULT, PG_ENV, PostgresServer, pg_session_url
from server.conftest import spawn_server

__all__ = ["pg_session_url"]  # the review suite's PostgreSQL database, as a fixture here


@pytest.fixture
def store_db(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'mcp.db'}"
    prepare_store(url)
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A prepared store on SQLite or on the test PostgreSQL server (emptied first)."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'mcp.db'}"
    else:
        url = str(request.getfixturevalue("pg_session_url"))
        PostgresServer(os.environ.get(PG_ENV, PG_DEFAULT)).empty(url)
    prepare_store(url)
    return url


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpServer]:
    """One `rubricflow serve` for the module, on a prepared SQLite store."""
    folder = tmp_path_factory.mktemp("mcp-server")
    url = f"sqlite+aiosqlite:///{folder / 'server.db'}"
    tokens = prepare_store(url)
    running = spawn_server(url, log=folder / "server.log", mcp=True)
    try:
        yield McpServer(running, tokens)
    finally:
        running.kill_group()
