"""Webhook latency (issue 17, performance 3): the time from a review decision committed in
one process to its webhook arriving at a local receiver, delivered by a `rubricflow serve`
process's delivery worker on PostgreSQL (the outbox row is written in the decision's
transaction; NOTIFY wakes the deliverer).

This process reviews artifacts inline at a steady 50 decisions per second (the workload
of `benchmarks/live_status.py`: ten artifacts side by side, each submitted, reviewed and
approved, then revised for the next round); a lifecycle listener stamps each decision as
it commits, and the receiver (an HTTP server on 127.0.0.1 in this process, answering 200)
stamps each delivery as it arrives; both stamps come from this process's clock. Reported:
p50, p99 and max of that latency (target: p99 under 1 s) and deliveries missing after
10 s (bar 0).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks.live_status import ARTIFACTS, RATE, _percentiles, _Stamps, _start_server
from benchmarks.store_throughput import POSTGRES_ADMIN, _drop, _postgres_url
from rubricflow import parse_rubric
from rubricflow.application import Application
from rubricflow.plugins import create_plugin_manager
from rubricflow.store.artifacts import ArtifactType, RubricBinding

DECISIONS = 400
QUICK_DECISIONS = 40
DECISION_EVENTS = ("approved", "needs_revision", "rejected")


class _Receiver:
    """An HTTP server on 127.0.0.1 stamping each delivery (artifact id, event seq)."""

    def __init__(self) -> None:
        self.arrived: dict[tuple[str, int], float] = {}
        self.requests = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                now = time.perf_counter()
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                data = json.loads(body).get("data", {})
                key = (str(data.get("artifact_id")), int(data.get("event_seq", -1)))
                receiver.requests += 1
                receiver.arrived.setdefault(key, now)
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> _Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


async def run(quick: bool = False) -> dict[str, Any]:
    decisions = QUICK_DECISIONS if quick else DECISIONS
    postgres = await _postgres_url()
    if postgres is None:
        return {"webhook_p99_ms (target < 1000)": "skipped: no server at " + POSTGRES_ADMIN}
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
            with _Receiver() as receiver, tempfile.TemporaryDirectory() as folder:
                await app.webhooks.add(
                    receiver.url, DECISION_EVENTS, actor="bench", allow_private=True
                )
                server, _ = await _start_server(url, Path(folder) / "server.log")
                try:
                    figures = await _measure(app, ids, decisions, stamps, receiver)
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
    app: Application, ids: list[str], decisions: int, stamps: _Stamps, receiver: _Receiver
) -> dict[str, Any]:
    decided: list[tuple[str, int]] = []
    await asyncio.sleep(0.5)  # the server's deliverer is up and waiting
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
            decided.append((artifact_id, outcome.artifact.version))

    await asyncio.gather(*(decide(slot, aid) for slot, aid in enumerate(ids)))
    elapsed = time.perf_counter() - started
    deadline = time.perf_counter() + 10
    while time.perf_counter() < deadline and any(k not in receiver.arrived for k in decided):
        await asyncio.sleep(0.05)
    missing = sum(1 for key in decided if key not in receiver.arrived)
    latencies = [
        receiver.arrived[k] - stamps.committed[k] for k in decided if k in receiver.arrived
    ]
    figures: dict[str, Any] = {
        "decisions": len(decided),
        "decisions_per_s (target 50)": decisions / elapsed,
        "deliveries_received": receiver.requests,
        "missed_deliveries (bar 0)": missing,
    }
    for key, value in _percentiles(latencies).items():
        figures[f"webhook_{key}"] = value
    figures["webhook_p99_ms (target < 1000)"] = figures["webhook_p99_ms"]
    return figures


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(quick="--quick" in sys.argv)), indent=2))
