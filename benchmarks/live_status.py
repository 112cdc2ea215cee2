"""Live status latency (issue 17, item 6 and its performance bar): the time from a review
decision committed in one process to a Server-Sent Events client seeing it, through a
`rubricflow serve` process on PostgreSQL (LISTEN/NOTIFY wakes its stream).

This process reviews artifacts inline (submit, start_review, approve: the decision) at a
steady 50 decisions per second, ten artifacts side by side, each followed by an SSE
stream (`GET /v1/artifacts/{id}/events`) served by the server process. A listener on the
lifecycle hook stamps each decision as it commits; the stream's reader stamps it when the
event arrives. Both stamps come from this process's clock. Reported: p50, p99 and max of
that latency over a few hundred decisions (bar: p99 under 200 ms), and the same for the
start of the review (the `submit`). The PostgreSQL server is $RUBRICFLOW_BENCH_PG (a
scratch database is made and dropped).
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.store_throughput import POSTGRES_ADMIN, _drop, _postgres_url
from rubricflow import hookimpl, parse_rubric
from rubricflow.application import Application
from rubricflow.plugins import create_plugin_manager
from rubricflow.store.artifacts import ArtifactType, RubricBinding

DECISIONS = 400
QUICK_DECISIONS = 40
ARTIFACTS = 10
RATE = 50.0  # decisions per second


class _Stamps:
    """A lifecycle listener stamping each committed transition of this process."""

    __name__ = "bench-stamps"

    def __init__(self) -> None:
        self.committed: dict[tuple[str, int], float] = {}

    @hookimpl
    def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
        if event["kind"] == "artifact.transition":
            self.committed[(event["artifact_id"], event["seq"])] = time.perf_counter()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _start_server(url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    handle = log.open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rubricflow",
            "serve",
            "--db",
            url,
            "--port",
            str(port),
            "--no-auth",
            "--review-workers",
            "0",
            "--no-access-log",
        ],
        stdout=handle,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                if (await client.get(f"{base}/healthz", timeout=1)).status_code == 200:
                    return process, base
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start within 60 s")


async def _follow(
    client: httpx.AsyncClient,
    artifact_id: str,
    seen: dict[tuple[str, int], float],
    ready: asyncio.Event,
) -> None:
    """Read the artifact's SSE stream, stamping each event as it arrives."""
    async with client.stream("GET", f"/v1/artifacts/{artifact_id}/events") as response:
        ready.set()
        event_id: int | None = None
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("data: ") and event_id is not None:
                seen[(artifact_id, event_id)] = time.perf_counter()
                json.loads(line[6:])  # a client parses what it gets
            elif line == "":
                event_id = None


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    quantiles = statistics.quantiles(ordered, n=100, method="inclusive")
    return {
        "p50_ms": quantiles[49] * 1000,
        "p99_ms": quantiles[98] * 1000,
        "max_ms": ordered[-1] * 1000,
    }


async def run(quick: bool = False) -> dict[str, Any]:
    decisions = QUICK_DECISIONS if quick else DECISIONS
    postgres = await _postgres_url()
    if postgres is None:
        return {"sse_p99_ms (bar < 200)": "skipped: no server at " + POSTGRES_ADMIN}
    url, name = postgres
    stamps = _Stamps()
    plugins = create_plugin_manager(plugins=[stamps], load_entry_points=False)
    try:
        app = await Application.open(url, plugins=plugins)
        try:
            rubric = parse_rubric(
                {
                    "id": "filled",
                    "name": "Filled",
                    "version": "1.0.0",
                    "criteria": [
                        {
                            "id": "filled",
                            "description": "there is text",
                            "scoring": {"method": "deterministic", "function": "non_empty"},
                        }
                    ],
                }
            )
            await app.store.rubrics.register(rubric)
            await app.artifacts.set_type(
                ArtifactType(name="doc", rubrics=(RubricBinding(rubric_id="filled"),))
            )
            ids = [
                (await app.artifacts.create("doc", {"text": "hello"}, actor="bench")).id
                for _ in range(ARTIFACTS)
            ]
            with tempfile.TemporaryDirectory() as folder:
                server, base = await _start_server(url, Path(folder) / "server.log")
                try:
                    figures = await _measure(app, base, ids, decisions, stamps)
                finally:
                    server.send_signal(signal.SIGTERM)
                    try:
                        server.wait(30)
                    except subprocess.TimeoutExpired:
                        server.kill()
        finally:
            await app.close()
    finally:
        await _drop(name)
    return figures


async def _measure(
    app: Application, base: str, ids: list[str], decisions: int, stamps: _Stamps
) -> dict[str, Any]:
    seen: dict[tuple[str, int], float] = {}
    decided: list[tuple[str, int]] = []
    submitted: list[tuple[str, int]] = []
    limits = httpx.Limits(max_connections=ARTIFACTS + 5)
    async with httpx.AsyncClient(base_url=base, timeout=None, limits=limits) as client:
        readies = [asyncio.Event() for _ in ids]
        followers = [
            asyncio.create_task(_follow(client, artifact_id, seen, ready))
            for artifact_id, ready in zip(ids, readies, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in readies)), 30)
        await asyncio.sleep(0.5)  # the streams have replayed `create` and wait
        started = time.perf_counter()
        per_artifact = decisions // len(ids)

        async def decide(slot: int, artifact_id: str) -> None:
            """This artifact's decisions, paced so that all slots together make RATE/s."""
            for round_ in range(per_artifact):
                due = started + (round_ * len(ids) + slot) / RATE
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                if round_:
                    await app.artifacts.revise(
                        artifact_id, {"text": f"v{round_}"}, actor="bench", reason="next"
                    )
                outcome = await app.artifacts.submit_for_review(artifact_id, actor="bench")
                version = outcome.artifact.version
                decided.append((artifact_id, version))  # approve
                submitted.append((artifact_id, version - 2))  # submit

        await asyncio.gather(*(decide(slot, aid) for slot, aid in enumerate(ids)))
        elapsed = time.perf_counter() - started
        deadline = time.perf_counter() + 10
        while time.perf_counter() < deadline and any(key not in seen for key in decided):
            await asyncio.sleep(0.05)
        for follower in followers:
            follower.cancel()
        await asyncio.gather(*followers, return_exceptions=True)
    missing = sum(1 for key in decided if key not in seen)
    latencies = [seen[key] - stamps.committed[key] for key in decided if key in seen]
    submit_latencies = [seen[key] - stamps.committed[key] for key in submitted if key in seen]
    figures: dict[str, Any] = {
        "decisions": len(decided),
        "decisions_per_s (target 50)": decisions / elapsed,
        "streams": len(ids),
        "missed_events (bar 0)": missing,
    }
    for prefix, values in (("sse", latencies), ("sse_submit", submit_latencies)):
        for key, value in _percentiles(values).items():
            figures[f"{prefix}_{key}"] = value
    figures["sse_p99_ms (bar < 200)"] = figures["sse_p99_ms"]
    return figures


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(quick="--quick" in sys.argv)), indent=2))
