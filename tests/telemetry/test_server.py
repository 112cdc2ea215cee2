"""`rubricflow serve` under an SDK tracer provider traces by itself: a submission over
real HTTP to a real uvicorn server gives the evaluation and criterion spans, and the
review's transitions as span events (the server attaches telemetry to its application's
event bus when tracing is on)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from server.artifact_setup import PASS, prepare
from server.conftest import spawn_server

HERE = Path(__file__).resolve().parent


def read_spans(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_served_review_is_traced_with_its_transitions(tmp_path: Path) -> None:
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'served.db'}"
    tokens = prepare(db_url)
    spans_file = tmp_path / "spans.jsonl"
    env = {
        "RUBRICFLOW_TEST_SPANS": str(spans_file),
        "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
    }
    server = spawn_server(
        db_url,
        log=tmp_path / "server.log",
        env=env,
        launcher=(str(HERE / "traced_serve.py"),),
    )
    try:
        with server.client(tokens.sub) as client:
            done = client.post("/v1/submissions", json={"type": "note", "content": PASS})
            assert done.status_code == 201, done.text
            artifact = done.json()["artifact"]
            assert artifact["status"] == "approved"
    finally:
        # uvicorn re-raises the SIGTERM it handled once shut down
        assert server.stop() in (0, -15), server.output()[-3000:]
        server.kill_group()
    spans = read_spans(spans_file)
    names = [span["name"] for span in spans]
    assert "evaluate gate" in names and "criterion clean" in names, names
    events = [event for span in spans for event in span.get("events", [])]
    transitions = [
        event["attributes"]
        for event in events
        if event["name"] == "rubricflow.artifact.transition"
        and event["attributes"]["rubricflow.artifact.id"] == artifact["id"]
    ]
    assert transitions, names
    assert transitions[-1]["rubricflow.transition.to"] == "approved"
    assert PASS not in spans_file.read_text()  # no content by default
