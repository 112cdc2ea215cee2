"""The server remembers a verified token for about a second, so a busy client costs no
store read per request; revocation still takes effect promptly: at once through the
server's own API (tests/server/test_foundation.py), within the cache's bound when the
token is revoked elsewhere (the CLI, on the same store), and a token never outlives its
expiry."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from review.conftest import run_blocking

from rubricflow.server.auth import TOKEN_CACHE_SECONDS, TokenCache
from rubricflow.store import Store

from .conftest import issue_token


def test_a_token_revoked_by_the_cli_stops_working_within_the_cache_bound(
    start_server, server_db
) -> None:
    token = issue_token(server_db, "submitter", name="bot")
    server = start_server(server_db)
    with server.client(token) as bot:
        for _ in range(5):  # remembered now
            assert bot.get("/v1/me").status_code == 200
        revoked = subprocess.run(
            [sys.executable, "-m", "rubricflow", "tokens", "revoke", "bot", "--db", server_db],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert revoked.returncode == 0, revoked.stderr
        started = time.monotonic()
        while bot.get("/v1/me").status_code == 200:
            assert time.monotonic() - started < TOKEN_CACHE_SECONDS + 1.0
            time.sleep(0.05)
        assert bot.get("/v1/me").status_code == 401


def test_the_cache_never_keeps_a_token_past_its_expiry_or_an_unknown_one(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'tokens.db'}") as store:
            soon = datetime.now(timezone.utc) + timedelta(seconds=0.4)
            issued = await store.tokens.create(
                "brief", role="reviewer", expires_at=soon, created_by="tests"
            )
            cache = TokenCache(seconds=60.0)
            principal = await cache.principal(store.tokens, issued.secret)
            assert principal is not None and (principal.name, principal.role) == (
                "brief",
                "reviewer",
            )
            assert await cache.principal(store.tokens, issued.secret) == principal
            await asyncio.sleep(0.5)
            assert await cache.principal(store.tokens, issued.secret) is None
            assert await cache.principal(store.tokens, issued.secret + "x") is None
            lasting = await store.tokens.create("long", role="submitter", created_by="tests")
            assert await cache.principal(store.tokens, lasting.secret) is not None
            await store.tokens.revoke("long")
            assert await cache.principal(store.tokens, lasting.secret) is not None  # remembered
            cache.forget()
            assert await cache.principal(store.tokens, lasting.secret) is None

    run_blocking(scenario())
