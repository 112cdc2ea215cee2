"""Issue 17, performance 1: the deterministic gate workload over HTTP.

The gate workload's artifacts and rubric (`benchmarks/gate_checks.py`: five deterministic
checks and a JSON Schema check, here as a check plugin, `benchmarks/http_server.py`),
reviewed on a SQLite file two ways in one run:

- in process: `ArtifactRegistry.create` + `submit_for_review`, one artifact after another
  (what workload 1 measures);
- over HTTP: `rubricflow serve` (one process, reviews inline), 16 concurrent clients each
  sending one request per artifact (`POST /v1/submissions`: create and submit in one
  call), with every middleware on: a submitter's bearer token checked against the store,
  an `Idempotency-Key` on every request, request ids, metrics and the body limit (the
  access log off: it goes to a terminal in neither figure). The clients are a lean
  keep-alive HTTP/1.1 load generator (`LoadClient`), so that the load they make on the
  shared CPU stays small, as a remote client's would.

Each side's figure is its best of the rounds (alternating sides). Bar: HTTP at least 0.6
of the in-process rate. Every artifact's decision must agree.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from benchmarks import http_server
from benchmarks.gate_checks import artifacts
from rubricflow import load_document
from rubricflow.plugins import create_plugin_manager
from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.store import Store

ARTIFACTS = 1000
QUICK_ARTIFACTS = 100
ROUNDS = 2
QUICK_ROUNDS = 1
CLIENTS = 16
SEED = 9
TYPE = "post"


async def prepare(url: str) -> Store:
    """A new store with the gate rubric and the `post` type bound to it."""
    store = await Store.open(url)
    (rubric,) = load_document(http_server.gate_rubric(), format="dataknobs").rubrics
    await store.rubrics.register(rubric, source_format="dataknobs")
    registry = ArtifactRegistry(store)
    await registry.set_type(ArtifactType(name=TYPE, rubrics=(RubricBinding(rubric_id=rubric.id),)))
    return store


async def in_process(folder: Path, contents: list[dict[str, Any]], index: int) -> dict[str, Any]:
    store = await prepare(f"sqlite+aiosqlite:///{folder / f'inproc-{index}.db'}")
    try:
        plugins = create_plugin_manager(plugins=[http_server.GateChecks()])
        registry = ArtifactRegistry(store, plugins=plugins)
        statuses = []
        started = time.perf_counter()
        for number, content in enumerate(contents):
            artifact = await registry.create(TYPE, content, actor="bench", title=f"post {number}")
            outcome = await registry.submit_for_review(artifact.id, actor="bench")
            statuses.append(outcome.artifact.status)
        seconds = time.perf_counter() - started
    finally:
        await store.close()
    return {"seconds": seconds, "statuses": statuses}


class LoadClient:
    """One client of the load: a keep-alive HTTP/1.1 connection that sends prepared
    requests and reads each response whole (Content-Length bodies, as the API sends).

    The benchmark measures the server, and on a two-core machine the load generator
    shares its CPU: an httpx client costs about a quarter of what the server spends on a
    request (most of it in building and parsing messages), which a remote client would
    not take from the server. This one does no more than the protocol needs, as a load
    tool (wrk, h2load) does."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, url: str) -> LoadClient:
        host, _, port = url.removeprefix("http://").partition(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer)

    async def post(self, path: str, body: bytes, headers: bytes) -> tuple[int, bytes]:
        """POST `body` (JSON) with `headers` (CRLF-ended lines); the status and body."""
        self.writer.write(
            b"POST %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n%s\r\n%s" % (path.encode(), len(body), headers, body)
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = None
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise RuntimeError(f"a response without Content-Length: {head[:300]!r}")
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def over_http(folder: Path, contents: list[dict[str, Any]], index: int) -> dict[str, Any]:
    url = f"sqlite+aiosqlite:///{folder / f'http-{index}.db'}"
    store = await prepare(url)
    try:
        issued = await store.tokens.create("bench-bot", role="submitter", created_by="bench")
    finally:
        await store.close()
    server = await asyncio.to_thread(http_server.start, url, "--review-workers", "0")
    try:
        bearer = f"Authorization: Bearer {issued.secret}\r\n".encode()
        # each request as the client sends it, built before the clock starts
        bodies = [
            json.dumps({"type": TYPE, "content": content, "title": f"post {number}"}).encode()
            for number, content in enumerate(contents)
        ]
        keys = [f"Idempotency-Key: {uuid.uuid4().hex}\r\n".encode() for _ in contents]
        statuses: list[str] = [""] * len(contents)
        failures: list[str] = []
        queue: asyncio.Queue[int] = asyncio.Queue()
        for number in range(len(contents)):
            queue.put_nowait(number)

        async def client(connection: LoadClient) -> None:
            while not queue.empty():
                number = queue.get_nowait()
                status, body = await connection.post(
                    "/v1/submissions", bodies[number], bearer + keys[number]
                )
                if status != 201:
                    failures.append(f"{status}: {body[:300]!r}")
                    continue
                statuses[number] = json.loads(body)["status"]

        # a warm-up request, so the server's first-use work is in no figure
        async with httpx.AsyncClient(
            base_url=server.url, headers={"Authorization": f"Bearer {issued.secret}"}
        ) as http:
            warm = await http.post(
                "/v1/submissions", json={"type": TYPE, "content": contents[0], "title": "warm"}
            )
            if warm.status_code != 201:
                raise RuntimeError(f"the warm-up submission failed: {warm.text[:500]}")
        connections = [await LoadClient.connect(server.url) for _ in range(CLIENTS)]
        started = time.perf_counter()
        await asyncio.gather(*(client(connection) for connection in connections))
        seconds = time.perf_counter() - started
        for connection in connections:
            await connection.close()
    finally:
        await asyncio.to_thread(server.stop)
    if failures:
        raise RuntimeError(f"{len(failures)} submissions failed, first: {failures[0]}")
    return {"seconds": seconds, "statuses": statuses}


async def run(quick: bool = False) -> dict[str, Any]:
    count = QUICK_ARTIFACTS if quick else ARTIFACTS
    rounds = QUICK_ROUNDS if quick else ROUNDS
    contents = artifacts(count, SEED)
    local_runs: list[dict[str, Any]] = []
    http_runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        await in_process(Path(folder), contents[:20], -1)  # warm-up: imports, caches
        for index in range(rounds):
            http_runs.append(await over_http(Path(folder), contents, index))
            local_runs.append(await in_process(Path(folder), contents, index))
    local = min(local_runs, key=lambda r: r["seconds"])
    remote = min(http_runs, key=lambda r: r["seconds"])
    local_rate = count / local["seconds"]
    http_rate = count / remote["seconds"]
    return {
        "artifacts": count,
        "clients": CLIENTS,
        "rounds": rounds,
        "in_process_per_s": local_rate,
        "http_per_s": http_rate,
        "in_process_rounds_s": [round(r["seconds"], 3) for r in local_runs],
        "http_rounds_s": [round(r["seconds"], 3) for r in http_runs],
        "same_decisions": local["statuses"] == remote["statuses"],
        "approved": local["statuses"].count("approved"),
        "http / in-process (bar >= 0.6)": http_rate / local_rate,
    }
