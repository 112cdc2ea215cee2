"""Scoring with the server's judge (`rubricflow serve --llm`), a scripted judge on
127.0.0.1: judged evaluations and OpenRubricRL scores on the rubric's scale, and an
NDJSON client that goes away stops the judging."""

from __future__ import annotations

import json
import time

from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, schema_of, verdict

from .conftest import issue_token

NDJSON = "application/x-ndjson"

JUDGED = """
id: helpful
criteria:
  - id: answers
    description: The reply answers the question
    scoring: {method: llm_verdict}
"""

CODE_QUALITY = {
    "name": "code_quality",
    "version": "1.0.0",
    "domain": "code",
    "scale": {"min": 0, "max": 10},
    "criteria": [
        {"name": "correctness", "description": "The code is correct", "weight": 0.5},
        {"name": "readability", "description": "The code reads well", "weight": 0.5},
    ],
}


def judge(delay: float = 0.0) -> ScriptedServer:
    """A judge that says MET to verdict questions and 8 to score questions."""

    def respond(request: Recorded) -> Reply:
        properties = (schema_of(request) or {}).get("properties", {})
        answer = verdict("MET") if "verdict" in properties else {"reasoning": "ok", "score": 8}
        return openai_reply(answer, delay=delay)

    return ScriptedServer(respond)


def test_the_servers_judge_scores_and_a_gone_client_stops_the_work(start_server, sqlite_db) -> None:
    admin = issue_token(sqlite_db, "admin", name="ops")
    with judge(delay=0.5) as scripted:
        server = start_server(sqlite_db, "--llm", f"openai:judge@{scripted.url}/v1")
        with server.client(admin) as ops:
            done = ops.post(
                "/v1/evaluate",
                json={"document": JUDGED, "target": {"content": "Paris.", "query": "Capital?"}},
            )
            assert done.status_code == 200, done.text
            (evaluation,) = done.json()["evaluations"]
            assert evaluation["verdict"] == "pass"
            (call,) = evaluation["criteria"][0]["llm_calls"]
            assert (call["provider"], call["model"]) == ("openai", "scripted-judge")
            assert len(scripted.requests) == 1 and "Paris." in scripted.requests[0].text

            registered = ops.post("/v1/rubrics", json={"document": json.dumps(CODE_QUALITY)})
            assert registered.status_code == 201
            scored = ops.post(
                "/score/code_quality",
                json={"task_input": "add", "model_output": "def add(a, b): return a + b"},
            ).json()
            assert scored["overall_score"] == 8.0
            assert scored["criterion_scores"] == {"correctness": 8.0, "readability": 8.0}
            assert scored["criterion_explanations"]["correctness"] == "ok"

            # 64 judged targets, 8 at a time, half a second per answer: 4 s of work; the
            # client reads one line and goes
            before = len(scripted.requests)
            targets = [{"id": f"t{i}", "content": f"answer {i}"} for i in range(64)]
            with ops.stream(
                "POST",
                "/v1/evaluate",
                json={"document": JUDGED, "targets": targets},
                headers={"Accept": NDJSON},
            ) as streamed:
                first = json.loads(next(streamed.iter_lines()))
                assert first["evaluation"]["verdict"] == "pass"
            time.sleep(1.5)  # without the stop, 3 more rounds of 8 would have been asked
            asked = len(scripted.requests) - before
            assert asked <= 12, f"the judge was asked {asked} times after the client left"
