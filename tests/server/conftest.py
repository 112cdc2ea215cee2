"""Fixtures for the HTTP API tests: real `rubricflow serve` processes (uvicorn) on a free
port, driven over HTTP with httpx, on a SQLite file or the test PostgreSQL server.

`start_server(db_url, *args)` starts one and waits until /healthz answers; it is stopped
(SIGTERM) after the test. `issue_token(db_url, role, ...)` creates a token in the store
the way `rubricflow tokens create` does and returns its secret.

A server costs a second or two to start, so tests that only read, or work on rows of their
own (their own token names, artifacts, rubric ids), share one per module and backend:
`module_server` (SQLite and PostgreSQL) and `module_sqlite_server`, on stores of their own
(`module_db`, `module_sqlite_db`) that no other test empties.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from review.conftest import (  # the review suite's PostgreSQL scratch databases
    PG_DEFAULT,
    PG_ENV,
    PostgresServer,
    pg_session_url,
    run_blocking,
)
from sqlalchemy.engine import make_url

from rubricflow.store import Store

__all__ = ["pg_session_url"]

STARTUP_SECONDS = 60.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class RunningServer:
    """A `rubricflow serve` process and how to reach it."""

    process: subprocess.Popen[bytes]
    url: str
    db_url: str
    log: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, token: str | None = None, **options: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **options)  # type: ignore[arg-type]

    def async_client(self, token: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError(
                    f"the server did not stop within {timeout} s of signal {sig}:\n"
                    + self.output()[-4000:]
                ) from None
        return int(self.process.returncode)

    def kill_group(self) -> None:
        """SIGKILL whatever is left of the server's process group: `--workers N` spawns
        processes that outlive a supervisor killed with SIGKILL."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.wait()


def spawn_server(
    db_url: str,
    *args: str,
    log: Path,
    env: dict[str, str] | None = None,
    launcher: Sequence[str] = ("-m", "rubricflow"),
    mcp: bool = False,
) -> RunningServer:
    """Start `rubricflow serve` on a free port and wait for /healthz. `launcher` is what
    runs the CLI (a test's script that registers a plugin first, then calls it). Only
    the MCP tests serve `/mcp` (`mcp=True`); the rest start with `--no-mcp`, which
    spares each start the SDK's import (about a second of CPU, a hundred-odd times)."""
    port = free_port()
    command = [sys.executable, *launcher, "serve", "--db", db_url, "--port", str(port)]
    if not mcp:
        command.append("--no-mcp")
    environment = {**os.environ, **(env or {})}
    handle = log.open("wb")
    process = subprocess.Popen(
        [*command, *args],
        stdout=handle,
        stderr=subprocess.STDOUT,
        env=environment,
        start_new_session=True,  # its own process group: teardown ends uvicorn's workers too
    )
    server = RunningServer(process, f"http://127.0.0.1:{port}", db_url, log)
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}:\n{server.output()}")
        try:
            if httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    server.stop(signal.SIGKILL)
    raise AssertionError(
        f"the server did not answer within {STARTUP_SECONDS} s:\n{server.output()}"
    )


def issue_token(
    db_url: str, role: str, *, name: str | None = None, types: Sequence[str] = ()
) -> str:
    """A new token's secret, created in the store at `db_url`."""

    async def create() -> str:
        async with await Store.open(db_url) as store:
            issued = await store.tokens.create(
                name or f"{role}-{os.urandom(3).hex()}", role=role, types=types, created_by="tests"
            )
            return issued.secret

    return str(run_blocking(create()))


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., RunningServer]]:
    """Start servers for this test; each is stopped at its end."""
    servers: list[RunningServer] = []

    def start(
        db_url: str,
        *args: str,
        env: dict[str, str] | None = None,
        launcher: Sequence[str] = ("-m", "rubricflow"),
    ) -> RunningServer:
        server = spawn_server(
            db_url,
            *args,
            log=tmp_path / f"server-{len(servers)}.log",
            env=env,
            launcher=launcher,
        )
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill_group()


@pytest.fixture(params=["sqlite", "postgresql"])
def server_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store for a server: a SQLite file, or the session's PostgreSQL database."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'server.db'}"
        run_blocking(_migrate(url))
        return url
    url = str(request.getfixturevalue("pg_session_url"))
    PostgresServer(os.environ.get(PG_ENV, PG_DEFAULT)).empty(url)
    return url


@pytest.fixture
def sqlite_db(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'server.db'}"
    run_blocking(_migrate(url))
    return url


async def _migrate(url: str) -> None:
    store = await Store.open(url)
    await store.close()


@pytest.fixture(scope="module")
def module_sqlite_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A migrated SQLite store of this module's own, for the servers its tests share."""
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('shared') / 'server.db'}"
    run_blocking(_migrate(url))
    return url


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """A migrated store of this module's own on each backend: `module_sqlite_db`, or a
    PostgreSQL database made for the module and dropped after it (the session's database
    is emptied by other tests' `server_db`, so a shared server cannot live there)."""
    if request.param == "sqlite":
        yield str(request.getfixturevalue("module_sqlite_db"))
        return
    request.getfixturevalue("pg_session_url")  # probes the server: skip or fail as it does
    postgres = PostgresServer(os.environ.get(PG_ENV, PG_DEFAULT))
    name, url = postgres.create()
    try:
        run_blocking(_migrate(url))
        yield url
    finally:
        postgres.drop(name)


@pytest.fixture(scope="module")
def module_sqlite_server(
    module_sqlite_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """One `rubricflow serve` (default options, but `--no-mcp`) on `module_sqlite_db`, shared by the
    module's tests: each uses tokens, types and rows of its own."""
    server = spawn_server(module_sqlite_db, log=tmp_path_factory.mktemp("shared") / "server.log")
    yield server
    server.kill_group()


@pytest.fixture(scope="module")
def module_server(
    module_db: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """One `rubricflow serve` (default options) per backend, shared by the module's tests;
    on SQLite it is `module_sqlite_server`."""
    if make_url(module_db).get_backend_name() == "sqlite":
        yield request.getfixturevalue("module_sqlite_server")
        return
    server = spawn_server(module_db, log=tmp_path_factory.mktemp("shared") / "server.log")
    yield server
    server.kill_group()


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll until `predicate()` holds or `timeout` passes; the pause between looks grows
    from 20 ms to 250 ms, so a costly predicate (one opening a store) does not take the
    CPU from the server it waits for on a two-core machine."""
    deadline = time.monotonic() + timeout
    pause = 0.02
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
        pause = min(pause * 1.5, 0.25)
    return predicate()
