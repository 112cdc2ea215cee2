"""Server-Sent Events read from an httpx streaming response: each event's `id`,
`event` and `data` (comments and `retry:` skipped)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

__all__ = ["ServerSentEvent", "read_events"]


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str
    id: str | None = None


async def read_events(response: httpx.Response) -> AsyncIterator[ServerSentEvent]:
    """The events of a `text/event-stream` response, as each arrives."""
    event, event_id = "message", None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data or event != "message":
                yield ServerSentEvent(event, "\n".join(data), event_id)
            event, event_id, data = "message", None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            event_id = value
