"""Live status over HTTP (issue 17, item 6), through a real uvicorn process: the
Server-Sent Events stream of an artifact's transitions, fed by changes other processes
commit (here the test process and the server's embedded review worker), replaying what a
reconnecting client missed (`Last-Event-ID`), keeping quiet connections alive, ending
after a final state and when the server shuts down; a submitter streams only its own
artifacts."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from review.conftest import PASS, define, make_rubric

from rubricflow.application import Application

from .conftest import RunningServer, issue_token

PROMPT = {"postgresql": 0.5, "sqlite": 2.0}


class EventStream:
    """The events of an open `text/event-stream` response, one at a time."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines: AsyncIterator[str] = response.aiter_lines()

    async def next(self, timeout: float = 15.0) -> dict[str, Any]:
        """The next event or comment: {"id", "event", "data"} or {"comment"}, or {"retry"}."""
        fields: dict[str, Any] = {}
        while True:
            line = await asyncio.wait_for(anext(self._lines), timeout)
            if line == "":
                if fields:
                    return fields
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "":
                return {"comment": value}
            fields[name] = json.loads(value) if name == "data" else value

    async def event(self, timeout: float = 15.0) -> dict[str, Any]:
        """The next event, skipping comments."""
        while True:
            item = await self.next(timeout)
            if "event" in item:
                return item


async def _open(client: httpx.AsyncClient, path: str, **headers: str) -> EventStream:
    request = client.build_request("GET", path, headers=headers)
    response = await client.send(request, stream=True)
    assert response.status_code == 200, (await response.aread()).decode()
    assert response.headers["content-type"].startswith("text/event-stream")
    stream = EventStream(response)
    assert await stream.next() == {"retry": "1000"}
    return stream


async def _setup(db_url: str) -> Application:
    app = await Application.open(db_url)
    await define(app.artifacts, "doc", make_rubric("filled"))  # the built-in non_empty check
    return app


async def test_the_stream_carries_every_transition_live_and_replays_what_was_missed(
    start_server: Any, server_db: str
) -> None:
    backend = "sqlite" if server_db.startswith("sqlite") else "postgresql"
    token = issue_token(server_db, "submitter", name="bot")
    server: RunningServer = start_server(server_db)
    app = await _setup(server_db)
    try:
        artifact = await app.artifacts.create("doc", PASS, actor="bot")
        async with server.async_client(token) as client:
            stream = await _open(client, f"/v1/artifacts/{artifact.id}/events")
            first = await stream.event()
            assert (first["id"], first["event"]) == ("1", "artifact.transition")
            assert first["data"]["trigger"] == "create"
            assert first["data"]["kind"] == "artifact.transition"
            # deferred: the server's embedded worker reviews it, woken by the change feed
            await app.artifacts.submit_for_review(artifact.id, actor="bot", defer=True)
            committed = time.perf_counter()
            submitted = await stream.event()
            assert time.perf_counter() - committed < PROMPT[backend]
            seen = [submitted, await stream.event(), await stream.event()]
            assert [(e["id"], e["data"]["trigger"]) for e in seen] == [
                ("2", "submit"),
                ("3", "start_review"),
                ("4", "approve"),
            ]
            await stream.response.aclose()
            # while disconnected: a revision; reconnecting replays it, then goes live
            await app.artifacts.revise(artifact.id, PASS, actor="bot", reason="polish")
            stream = await _open(
                client, f"/v1/artifacts/{artifact.id}/events", **{"Last-Event-ID": "4"}
            )
            replayed = await stream.event()
            assert (replayed["id"], replayed["data"]["trigger"]) == ("5", "revise")
            await app.artifacts.archive(artifact.id, actor="bot")
            archived = await stream.event()
            assert (archived["id"], archived["data"]["dest"]) == ("6", "archived")
            assert (await stream.event())["event"] == "end"  # nothing can follow archived
            await stream.response.aclose()
            again = await client.get(
                f"/v1/artifacts/{artifact.id}/events", headers={"Last-Event-ID": "6"}
            )
            assert again.status_code == 204, "an EventSource is told to stop reconnecting"
            replay = await _open(client, f"/v1/artifacts/{artifact.id}/events?after=3")
            tail = [await replay.event() for _ in range(4)]
            assert [(e.get("id"), e["event"]) for e in tail] == [
                ("4", "artifact.transition"),
                ("5", "artifact.transition"),
                ("6", "artifact.transition"),
                (None, "end"),
            ]
            await replay.response.aclose()
    finally:
        await app.close()
    assert server.stop() in (0, -signal.SIGTERM)


async def test_a_submitter_streams_only_its_own_artifacts(
    start_server: Any, sqlite_db: str
) -> None:
    mine = issue_token(sqlite_db, "submitter", name="bot")
    stranger = issue_token(sqlite_db, "submitter", name="other-bot")
    reviewer = issue_token(sqlite_db, "reviewer", name="carol", types=["doc"])
    elsewhere = issue_token(sqlite_db, "reviewer", name="dave", types=["post"])
    server: RunningServer = start_server(sqlite_db, "--review-workers", "0")
    app = await _setup(sqlite_db)
    try:
        artifact = await app.artifacts.create("doc", PASS, actor="bot")
        path = f"/v1/artifacts/{artifact.id}/events"
        async with server.async_client() as anonymous:
            assert (await anonymous.get(path)).status_code == 401
        for token, allowed in [
            (mine, True),
            (reviewer, True),
            (stranger, False),
            (elsewhere, False),
        ]:
            async with server.async_client(token) as client:
                if allowed:
                    stream = await _open(client, path)
                    assert (await stream.event())["data"]["actor"] == "bot"
                    await stream.response.aclose()
                    continue
                refused = await client.get(path)
                assert refused.status_code == 404, "as if it did not exist"
                assert refused.headers["content-type"] == "application/problem+json"
                assert f"no artifact {artifact.id!r}" in refused.json()["detail"]
        async with server.async_client(mine) as client:
            missing = await client.get("/v1/artifacts/nope/events")
            assert missing.status_code == 404
            bad = await client.get(path, headers={"Last-Event-ID": "twelve"})
            assert bad.status_code == 422
    finally:
        await app.close()


async def test_a_quiet_stream_keeps_alive_and_ends_when_the_server_stops(
    start_server: Any, sqlite_db: str
) -> None:
    token = issue_token(sqlite_db, "submitter", name="bot")
    server: RunningServer = start_server(sqlite_db, env={"RUBRICFLOW_SSE_HEARTBEAT_SECONDS": "0.2"})
    app = await _setup(sqlite_db)
    try:
        artifact = await app.artifacts.create("doc", PASS, actor="bot")
        async with server.async_client(token) as client:
            stream = await _open(client, f"/v1/artifacts/{artifact.id}/events")
            assert (await stream.next())["id"] == "1"
            assert await stream.next(5) == {"comment": "keep-alive"}
            assert await stream.next(5) == {"comment": "keep-alive"}
            stopping = time.perf_counter()
            server.process.send_signal(signal.SIGTERM)
            assert (await stream.event(10))["event"] == "shutdown"
            await stream.response.aclose()
            assert await asyncio.to_thread(server.process.wait, 15) in (0, -signal.SIGTERM)
            assert time.perf_counter() - stopping < 10, "the open stream held the server up"
    finally:
        await app.close()
