"""Idempotency keys in the store: a state-changing request made under an
`Idempotency-Key` is recorded per principal and key with its fingerprint (a hash of its
method, path and body) before it runs, and its response once it finished; a retry with
the same key gets that response back instead of a second change.

`begin` decides what a request with a key may do, in one transaction: run (`started`, the
key is now held), replay a finished response (`replay`), wait for the request holding the
key (`in_progress`), or be refused because the key was used for another request
(`mismatch`). The primary key (principal, key) makes two racing requests agree: one
inserts, the other sees its row. A key whose first request died without finishing is
taken over once its lock lapses (`locked_until`); every key is forgotten at `expires_at`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from rubricflow.store._sql import as_utc, insert_ignoring_duplicates, utcnow
from rubricflow.store.database import Database
from rubricflow.store.tables import IdempotencyKeyRow

__all__ = ["FinishedKey", "IdempotencyStore", "KeyClaim", "KeyRequest", "StoredResponse"]

_keys = IdempotencyKeyRow.__table__  # type: ignore[attr-defined]
#: how often (seconds) a process deletes expired keys, as it records a new one
PURGE_EVERY_SECONDS = 600.0
# one statement object, built once: SQLite runs it on its direct path (store/_sqlite_direct.py)
# instead of compiling it for every request
_FINISH = (
    _keys.update()
    .where(
        _keys.c.principal == sa.bindparam("w_principal"),
        _keys.c.key == sa.bindparam("w_key"),
        _keys.c.fingerprint == sa.bindparam("w_fingerprint"),
        _keys.c.status.is_(None),
    )
    .values(
        status=sa.bindparam("v_status"),
        headers=sa.bindparam("v_headers"),
        body=sa.bindparam("v_body"),
        locked_until=None,
    )
)


@dataclass(frozen=True)
class StoredResponse:
    """A finished request's response, as replayed: status, the headers worth replaying
    and the body bytes."""

    status: int
    headers: Sequence[tuple[str, str]] = ()
    body: bytes = b""


@dataclass(frozen=True)
class KeyClaim:
    """What a request under an idempotency key may do: `started` (run it, then `finish`
    or `release`), `replay` (send `response`), `in_progress` (another request holds the
    key: wait and ask again), `mismatch` (the key belongs to a different request)."""

    outcome: Literal["started", "replay", "in_progress", "mismatch"]
    response: StoredResponse | None = field(default=None)


@dataclass(frozen=True)
class KeyRequest:
    """A request under an idempotency key: its principal, the key and its fingerprint."""

    principal: str
    key: str
    fingerprint: str


@dataclass(frozen=True)
class FinishedKey:
    """A request's response, to store under its key."""

    request: KeyRequest
    response: StoredResponse


async def _begin_in(
    connection: AsyncConnection,
    request: KeyRequest,
    now: datetime,
    ttl_seconds: float,
    lock_seconds: float,
) -> KeyClaim:
    """`IdempotencyStore.begin`'s work inside a transaction."""
    values = {
        "principal": request.principal,
        "key": request.key,
        "fingerprint": request.fingerprint,
        "status": None,
        "headers": None,
        "body": None,
        "created_at": now,
        "locked_until": now + timedelta(seconds=lock_seconds),
        "expires_at": now + timedelta(seconds=ttl_seconds),
    }
    match = (_keys.c.principal == request.principal) & (_keys.c.key == request.key)
    for _ in range(3):
        inserted = await connection.execute(insert_ignoring_duplicates(connection, _keys), values)
        if inserted.rowcount == 1:
            return KeyClaim("started")
        row = (await connection.execute(_keys.select().where(match))).first()
        if row is None:  # deleted in between: insert again
            continue
        lapsed = row.status is None and (
            row.locked_until is None or as_utc(row.locked_until) <= now
        )
        if as_utc(row.expires_at) <= now or lapsed:
            # forgotten, or its first request died: this request takes the key
            await connection.execute(
                _keys.delete().where(match, _keys.c.created_at == row.created_at)
            )
            continue
        if row.fingerprint != request.fingerprint:
            return KeyClaim("mismatch")
        if row.status is None:
            return KeyClaim("in_progress")
        headers = [(str(k), str(v)) for k, v in json.loads(row.headers or "[]")]
        return KeyClaim("replay", StoredResponse(int(row.status), headers, bytes(row.body or b"")))
    return KeyClaim("in_progress")


class IdempotencyStore:
    """The `idempotency_keys` table."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._purged_at = 0.0

    async def begin(
        self,
        principal: str,
        key: str,
        fingerprint: str,
        *,
        ttl_seconds: float,
        lock_seconds: float,
    ) -> KeyClaim:
        """Hold `key` for this request, or say why not (see `KeyClaim`)."""
        (claim,) = await self.write_batch(
            [KeyRequest(principal, key, fingerprint)],
            (),
            ttl_seconds=ttl_seconds,
            lock_seconds=lock_seconds,
        )
        return claim

    async def finish(
        self, principal: str, key: str, fingerprint: str, response: StoredResponse
    ) -> None:
        """Record the response of the request holding `key`, for retries to replay."""
        await self.write_batch(
            (),
            [FinishedKey(KeyRequest(principal, key, fingerprint), response)],
            ttl_seconds=60.0,
            lock_seconds=60.0,
        )

    async def write_batch(
        self,
        begins: Sequence[KeyRequest],
        finishes: Sequence[FinishedKey],
        *,
        ttl_seconds: float,
        lock_seconds: float,
    ) -> list[KeyClaim]:
        """`finish` each of `finishes`, then `begin` each of `begins`, all in one
        transaction (a server writes the keys of concurrent requests together: one commit,
        not two per request); the claims of `begins`, in order."""
        now = utcnow()
        claims: list[KeyClaim] = []
        async with self.database.transaction() as connection:
            if begins and time.monotonic() - self._purged_at > PURGE_EVERY_SECONDS:
                self._purged_at = time.monotonic()
                await connection.execute(_keys.delete().where(_keys.c.expires_at <= now))
            for done in finishes:
                await connection.execute(
                    _FINISH,
                    {
                        "w_principal": done.request.principal,
                        "w_key": done.request.key,
                        "w_fingerprint": done.request.fingerprint,
                        "v_status": done.response.status,
                        "v_headers": json.dumps([list(pair) for pair in done.response.headers]),
                        "v_body": done.response.body,
                    },
                )
            for request in begins:
                claims.append(await _begin_in(connection, request, now, ttl_seconds, lock_seconds))
        return claims

    async def release(self, principal: str, key: str, fingerprint: str) -> None:
        """Let go of `key` without a response to replay (the request failed on the
        server's side, or its response is a stream): a retry runs again."""
        async with self.database.transaction() as connection:
            await connection.execute(
                _keys.delete().where(
                    _keys.c.principal == principal,
                    _keys.c.key == key,
                    _keys.c.fingerprint == fingerprint,
                    _keys.c.status.is_(None),
                )
            )

    async def purge(self) -> int:
        """Delete expired keys; how many."""
        async with self.database.transaction() as connection:
            done = await connection.execute(_keys.delete().where(_keys.c.expires_at <= utcnow()))
        return int(done.rowcount or 0)
