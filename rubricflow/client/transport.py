"""How the client sends a request: one pooled httpx connection pool, a timeout, and
retries with exponential back-off (and jitter) when the request is safe to repeat and
the failure is one a retry can fix: the connection failed or dropped, the store could
not answer (503), or the same idempotency key is still being served (409
`idempotency-in-progress`). A state-changing request is safe to repeat because it
always carries an `Idempotency-Key`: the server replays the first answer."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

import httpx

__all__ = ["RetryPolicy", "retry_delay", "should_retry"]

#: failures before any answer: the request may or may not have reached the server, so a
#: retry is safe only because every change carries an idempotency key. A read timeout is
#: not retried: the server is working on it, and waiting again would double the wait.
RETRIED_ERRORS: tuple[type[Exception], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
    httpx.PoolTimeout,
)


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` in all (1: no retry), waiting `backoff` seconds doubled each time (with
    up to 50% jitter, at most `max_backoff`, or what the server's Retry-After asks)."""

    attempts: int = 4
    backoff: float = 0.2
    max_backoff: float = 5.0

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_backoff)
            except ValueError:
                pass
        base = min(self.backoff * 2.0**attempt, self.max_backoff)
        return float(base * (0.5 + random.random() / 2))


def should_retry(response: httpx.Response) -> bool:
    """An answer a retry can change: the store could not answer, or the request's key is
    still being served."""
    if response.status_code == 503:
        return True
    if response.status_code == 409:
        kind = response.headers.get("content-type", "")
        return "problem" in kind and b"idempotency-in-progress" in response.content
    return False


async def retry_delay(policy: RetryPolicy, attempt: int, retry_after: str | None) -> None:
    await asyncio.sleep(policy.delay(attempt, retry_after))
