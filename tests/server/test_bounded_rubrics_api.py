"""A stranger's rubric cannot stall the server (issue 27, findings 1 and 8): a prompt
template that asks for gigabytes is refused at the door (422 naming the criterion and
the budget), a template that runs past its budget while judging a target is that
criterion's `error`, and an oversized rubric is refused by its cap; all the while
`/healthz` answers. A real server with a scripted judge on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply

from rubricflow.model import limit_setting

from .conftest import RunningServer, issue_token

HOSTILE = (
    "{{ '%0999999999d'|format(1) }}",
    "{{ ('a'*3000000000)|length }}",
    "{{ 'x'*100000000 }}",
)
HEALTH_SECONDS = 5.0  # the issue asks for 1 s; slack for a loaded machine


def decoded(template: str, *, rubric_id: str = "hostile") -> str:
    return json.dumps(
        {
            "id": rubric_id,
            "criteria": [
                {
                    "id": "graded",
                    "levels": [{"id": "low", "score": 0}, {"id": "high", "score": 1}],
                    "scoring": {"method": "llm_decode", "template": template},
                }
            ],
        }
    )


def judge() -> ScriptedServer:
    def respond(request: Recorded) -> Reply:
        return openai_reply({"reasoning": "fine", "level_id": "high"})

    return ScriptedServer(respond)


@contextmanager
def watching_health(server: RunningServer) -> Iterator[list[tuple[float, float]]]:
    """Ask /healthz over and over in a thread; yields the (sent at, seconds taken) of
    every answer (a timeout or an error counts as HEALTH_SECONDS * 10)."""
    answers: list[tuple[float, float]] = []
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(base_url=server.url, timeout=HEALTH_SECONDS * 10) as client:
            while not stop.is_set():
                sent = time.monotonic()
                try:
                    ok = client.get("/healthz").status_code == 200
                except httpx.HTTPError:
                    ok = False
                answers.append((sent, time.monotonic() - sent if ok else HEALTH_SECONDS * 10))
                time.sleep(0.05)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield answers
    finally:
        stop.set()
        thread.join(HEALTH_SECONDS * 10)


def timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float, float]:
    started = time.monotonic()
    response = call()
    return response, started, time.monotonic()


def assert_healthy(answers: list[tuple[float, float]]) -> None:
    assert answers, "/healthz was never answered"
    slowest = max(seconds for _, seconds in answers)
    assert slowest < HEALTH_SECONDS, f"/healthz took {slowest:.1f} s"


def test_hostile_templates_are_refused_at_the_door_and_health_answers(
    start_server: Callable[..., RunningServer], sqlite_db: str
) -> None:
    admin = issue_token(sqlite_db, "admin", name="ops")
    submitter = issue_token(sqlite_db, "submitter", name="stranger")
    with judge() as scripted:
        server = start_server(sqlite_db, "--llm", f"openai:judge@{scripted.url}/v1")
        with (
            server.client(submitter) as stranger,
            server.client(admin) as ops,
            watching_health(server) as answers,
        ):
            for template in HOSTILE:
                evaluated = stranger.post(
                    "/v1/evaluate",
                    json={"document": decoded(template), "target": {"content": "hello"}},
                )
                assert evaluated.status_code == 422, evaluated.text
                detail = evaluated.json()["detail"]
                assert "criteria[0].scoring.template" in detail and "'graded'" in detail
                assert "16,000,000 characters built per render" in detail
                registered = ops.post("/v1/rubrics", json={"document": decoded(template)})
                assert registered.status_code == 422, registered.text
                assert "characters built per render" in registered.json()["detail"]
                linted = stranger.post("/v1/rubrics/lint", json={"document": decoded(template)})
                assert linted.status_code == 200 and linted.json()["valid"] is False
                assert "characters built per render" in json.dumps(linted.json()["errors"])
            assert ops.get("/v1/rubrics").json()["rubrics"] == []
            time.sleep(0.3)
        assert_healthy(answers)
        assert scripted.requests == []  # no judge was asked about a refused rubric


def test_a_template_over_budget_on_a_target_is_an_error_naming_it_and_health_answers(
    start_server: Callable[..., RunningServer], sqlite_db: str
) -> None:
    """The template loops over the target's content: fine on the empty trial render at
    the door, a million iterations on this target. The render runs off the event loop,
    so /healthz is answered while the evaluation is in flight."""
    submitter = issue_token(sqlite_db, "submitter", name="stranger")
    loops = "{% for a in items %}{% for b in items %}{% endfor %}{% endfor %}{{ items|length }}"
    with judge() as scripted:
        server = start_server(sqlite_db, "--llm", f"openai:judge@{scripted.url}/v1")
        with server.client(submitter) as stranger, watching_health(server) as answers:
            body: dict[str, Any] = {
                "document": decoded(loops),
                "target": {"content": {"items": list(range(1001))}},
            }
            evaluated, started, finished = timed(lambda: stranger.post("/v1/evaluate", json=body))
            fine = stranger.post(
                "/v1/evaluate",
                json={"document": decoded(loops), "target": {"content": {"items": [1, 2]}}},
            )
            time.sleep(0.3)
        assert evaluated.status_code == 200, evaluated.text
        (criterion,) = evaluated.json()["evaluations"][0]["criteria"]
        assert criterion["status"] == "error"
        assert "1,000,000 loop iterations per render" in criterion["notes"]
        assert fine.status_code == 200 and fine.json()["evaluations"][0]["verdict"] == "pass"
        assert len(scripted.requests) == 1 and "2" in scripted.requests[0].text
        assert_healthy(answers)
        during = [sent for sent, _ in answers if started <= sent <= finished]
        assert during or finished - started < 0.2, "no /healthz was sent during the evaluation"


def test_oversized_rubrics_are_refused_by_their_caps_and_health_answers(
    start_server: Callable[..., RunningServer], sqlite_db: str
) -> None:
    admin = issue_token(sqlite_db, "admin", name="ops")
    server = start_server(sqlite_db)
    huge = json.dumps(
        {
            "id": "huge",
            "criteria": [
                {"id": f"c{i}", "description": f"criterion {i} of a huge rubric"}
                for i in range(50_000)
            ],
        }
    )
    compact = json.dumps({"id": "compact", "criteria": [{"id": f"c{i}"} for i in range(50_000)]})
    many_levels = {
        "id": "graded",
        "criteria": [{"id": "q", "levels": [{"id": f"l{i}", "score": i / 21} for i in range(21)]}],
    }
    with server.client(admin) as ops, watching_health(server) as answers:
        cases = (
            (huge, f"the limit is 2,097,152 bytes (setting {limit_setting('max_rubric_bytes')})"),
            (compact, f"the limit is 500 (setting {limit_setting('max_criteria')})"),
            (json.dumps(many_levels), f"the limit is 20 (setting {limit_setting('max_levels')})"),
        )
        for document, expected in cases:
            for path in ("/v1/rubrics", "/v1/evaluate"):
                body: dict[str, Any] = {"document": document}
                if path == "/v1/evaluate":
                    body["target"] = {"content": "x"}
                refused = ops.post(path, json=body)
                assert refused.status_code == 422, refused.text
                assert expected in refused.json()["detail"]
            linted = ops.post("/v1/rubrics/lint", json={"document": document})
            assert linted.status_code == 200 and linted.json()["valid"] is False
            assert expected in json.dumps(linted.json()["errors"])
        time.sleep(0.3)
    assert_healthy(answers)
