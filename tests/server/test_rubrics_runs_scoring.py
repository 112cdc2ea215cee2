"""Rubrics, runs and scoring through a real `rubricflow serve`: registering and reading
rubric versions by role, lint and diff, runs and judge usage for reviewers, scoring
without storage (JSON and NDJSON), and rubric documents treated as strangers' data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from review.conftest import run_blocking

from rubricflow import parse_rubric
from rubricflow.engine.executor import evaluate
from rubricflow.results import Evaluation, LLMCall
from rubricflow.runs import RunInfo
from rubricflow.store import Store
from rubricflow.store.evaluations import StoredEvaluation

from .conftest import issue_token

PROBLEM = "application/problem+json"
NDJSON = "application/x-ndjson"

TONE = """
id: tone
name: Tone
version: 1.0.0
criteria:
  - id: short
    name: Short
    weight: 0.5
    scoring: {method: deterministic, function: word_count_between, config: {min: 1, max: 5}}
  - id: polite
    name: Polite
    weight: 0.5
    scoring: {method: deterministic, function: contains_any, config: {terms: [please]}}
"""

OPENRUBRICRL = {
    "name": "code_quality",
    "version": "1.0.0",
    "domain": "code",
    "scale": {"min": 0, "max": 10},
    "criteria": [
        {"name": "correctness", "description": "The code is correct", "weight": 0.6},
        {"name": "readability", "description": "The code reads well", "weight": 0.4},
    ],
}


def test_rubric_versions_over_http_by_role(start_server, server_db) -> None:
    admin = issue_token(server_db, "admin", name="ops")
    submitter = issue_token(server_db, "submitter", name="bot")
    server = start_server(server_db)
    with server.client(admin) as ops, server.client(submitter) as bot:
        denied = bot.post("/v1/rubrics", json={"document": TONE})
        assert denied.status_code == 403 and "admin role" in denied.json()["detail"]

        created = ops.post("/v1/rubrics", json={"document": TONE})
        assert created.status_code == 201, created.text
        assert created.json()["format"] == "native"
        assert [(r["id"], r["version"], r["created"]) for r in created.json()["registered"]] == [
            ("tone", "1.0.0", True)
        ]
        again = ops.post("/v1/rubrics", json={"document": TONE}).json()
        assert again["registered"][0]["created"] is False
        clash = ops.post("/v1/rubrics", json={"document": TONE.replace("max: 5", "max: 9")})
        assert clash.status_code == 409 and clash.headers["content-type"] == PROBLEM
        newer = TONE.replace("1.0.0", "1.1.0").replace("max: 5", "max: 9")
        assert ops.post("/v1/rubrics", json={"document": newer}).status_code == 201
        # an importer's format, detected, as JSON text
        foreign = ops.post("/v1/rubrics", json={"document": json.dumps(OPENRUBRICRL)}).json()
        assert foreign["format"] == "openrubricrl"
        assert foreign["registered"][0]["id"] == "code_quality"

        # every role reads rubrics
        listed = bot.get("/v1/rubrics").json()["rubrics"]
        assert [(r["id"], r["version"]) for r in listed] == [
            ("code_quality", "1.0.0"),
            ("tone", "1.1.0"),
        ]
        latest = bot.get("/v1/rubrics/tone").json()
        assert latest["version"] == "1.1.0" and latest["criteria"] == 2
        exact = bot.get("/v1/rubrics/tone@1.0.0").json()
        assert exact["document"]["criteria"][0]["scoring"]["config"] == {"min": 1, "max": 5}
        versions = bot.get("/v1/rubrics/tone/versions").json()["versions"]
        assert [v["version"] for v in versions] == ["1.0.0", "1.1.0"]
        diff = bot.get("/v1/rubrics/tone/diff").json()
        assert diff["scoring_changed"] is True
        assert diff["criteria"][0]["fields"] == [
            {"path": "scoring.config.max", "kind": "changed", "before": 5, "after": 9}
        ]
        named = bot.get("/v1/rubrics/tone/diff", params={"from": "1.0.0", "to": "1.0.0"}).json()
        assert named["identical"] is True

        missing = bot.get("/v1/rubrics/nope@1.0.0")
        assert missing.status_code == 404 and "no version 1.0.0" in missing.json()["detail"]
        assert bot.get("/v1/rubrics/tone@").status_code == 422
        for tricky in ("/v1/rubrics/a%00b", "/v1/rubrics/a%00b/versions", "/v1/rubrics/%0a"):
            assert bot.get(tricky).status_code == 422, tricky  # PostgreSQL refuses NUL

        # lint: a report, valid or not (no store involved)
        lint = bot.post("/v1/rubrics/lint", json={"document": TONE}).json()
        assert lint["valid"] is True and lint["rubrics"][0]["meta_rubric"]["passed"] is True
        broken = TONE.replace("terms: [please]", "values: [please]")
        report = bot.post("/v1/rubrics/lint", json={"document": broken})
        assert report.status_code == 200 and report.json()["valid"] is False
        assert report.json()["errors"][0]["path"] == "criteria[1].scoring.config"
        # ... and what lint reports is not registered
        refused = ops.post("/v1/rubrics", json={"document": broken.replace("1.0.0", "2.0.0")})
        assert refused.status_code == 422
        assert refused.json()["errors"][0]["path"] == "criteria[1].scoring.config"

        assert bot.delete("/v1/rubrics/tone").status_code == 403
        assert ops.delete("/v1/rubrics/tone").json()["versions"][0]["deleted"] is True
        assert bot.get("/v1/rubrics/tone").status_code == 404
        assert bot.get("/v1/rubrics/tone@1.0.0").status_code == 200  # kept for audit


async def _run(store: Store, run_id: str, contents: list[tuple[str, str]]) -> None:
    """Store a finished run of TONE over (target id, content) pairs, each evaluation with
    one judge call in its ledger."""
    rubric = parse_rubric(
        {
            "id": "tone",
            "criteria": [
                {
                    "id": "polite",
                    "scoring": {
                        "method": "deterministic",
                        "function": "contains_any",
                        "config": {"terms": ["please"]},
                    },
                }
            ],
        }
    )

    await store.rubrics.register(rubric)
    await store.runs.start(RunInfo(id=run_id, rubric_id="tone", rubric_version="1.0.0"))
    items = []
    for target_id, content in contents:
        evaluation: Evaluation = await evaluate(rubric, {"id": target_id, "content": content})
        call = LLMCall(
            provider="openai", model="m", prompt_hash="p", input_tokens=10, output_tokens=2
        )
        first = evaluation.criteria[0].model_copy(update={"llm_calls": (call,)})
        evaluation = evaluation.model_copy(update={"criteria": (first,)})
        items.append(StoredEvaluation(evaluation, run_id=run_id))
    await store.evaluations.save_many(items)
    await store.runs.finish(run_id)


def test_runs_their_evaluations_and_judge_usage_for_reviewers(start_server, server_db) -> None:
    async def seed() -> None:
        async with await Store.open(server_db) as store:
            await _run(store, "run-a", [("t1", "please"), ("t2", "please"), ("t3", "no")])
            await _run(store, "run-b", [("t1", "please"), ("t2", "no"), ("t3", "no")])

    run_blocking(seed())
    reviewer = issue_token(server_db, "reviewer", name="rev")
    submitter = issue_token(server_db, "submitter", name="bot")
    server = start_server(server_db)
    with server.client(reviewer) as rev, server.client(submitter) as bot:
        for path in ("/v1/runs", "/v1/runs/run-a", "/v1/judge-usage"):
            assert bot.get(path).status_code == 403, path
        runs = rev.get("/v1/runs").json()["runs"]
        assert {r["id"] for r in runs} == {"run-a", "run-b"}
        one = rev.get("/v1/runs/run-a").json()
        assert one["status"] == "finished"
        assert (one["summary"]["total"], one["summary"]["passed"]) == (3, 2)
        assert one["summary"]["criteria"] == [
            {
                "id": "polite",
                "scored": 3,
                "passed": 2,
                "unscored": 0,
                "pass_rate": 2 / 3,
                "mean_score": 2 / 3,
            }
        ]
        first = rev.get("/v1/runs/run-a/evaluations", params={"limit": 2}).json()
        assert (first["total"], len(first["evaluations"]), first["next_offset"]) == (3, 2, 2)
        rest = rev.get("/v1/runs/run-a/evaluations", params={"limit": 2, "offset": 2}).json()
        assert len(rest["evaluations"]) == 1 and rest["next_offset"] is None
        seen = {e["target_id"] for e in first["evaluations"] + rest["evaluations"]}
        assert seen == {"t1", "t2", "t3"}
        assert rev.get("/v1/runs/nope/evaluations").status_code == 404
        assert rev.get("/v1/runs/a%00b").status_code == 422
        assert rev.get("/v1/judge-usage", params={"run": "a\x00b"}).status_code == 422

        compared = rev.get(
            "/v1/runs/compare", params={"a": "run-a", "b": "run-b", "threshold": 0.1}
        ).json()
        assert compared["flips"] == [
            {
                "target_id": "t2",
                "verdict_a": "pass",
                "verdict_b": "fail",
                "score_a": 1.0,
                "score_b": 0.0,
            }
        ]
        assert compared["regressed"] is True

        usage = rev.get("/v1/judge-usage").json()["usage"]
        assert [(u["run_id"], u["calls"], u["input_tokens"]) for u in usage] == [
            ("run-a", 3, 30),
            ("run-b", 3, 30),
        ]
        only_b = rev.get("/v1/judge-usage", params={"run": "run-b", "by_model": False}).json()
        assert only_b["usage"] == [
            {
                "run_id": "run-b",
                "provider": None,
                "model": None,
                "calls": 3,
                "cache_hits": 0,
                "input_tokens": 30,
                "output_tokens": 6,
                "cost": None,
            }
        ]
        rates = rev.get("/v1/rubrics/tone/pass-rates", params={"run": "run-b"}).json()["rates"]
        assert [(r["criterion_id"], r["passed"], r["failed"]) for r in rates] == [("polite", 1, 2)]
        assert bot.get("/v1/rubrics/tone/pass-rates").status_code == 403


def _count_evaluations(db_url: str) -> int:
    async def count() -> int:
        async with await Store.open(db_url) as store:
            return await store.evaluations.count()

    return int(run_blocking(count()))


def test_evaluate_scores_without_storing_as_json_or_ndjson(start_server, server_db) -> None:
    admin = issue_token(server_db, "admin", name="ops")
    submitter = issue_token(server_db, "submitter", name="bot")
    server = start_server(server_db)
    with server.client(admin) as ops, server.client(submitter) as bot:
        assert ops.post("/v1/rubrics", json={"document": TONE}).status_code == 201
        one = bot.post(
            "/v1/evaluate", json={"rubric": "tone@1.0.0", "target": {"content": "please do"}}
        )
        assert one.status_code == 200, one.text
        (evaluation,) = one.json()["evaluations"]
        assert (evaluation["verdict"], evaluation["score"], evaluation["coverage"]) == (
            "pass",
            1.0,
            1.0,
        )
        assert evaluation["criteria"][1]["evidence"] == ["found: please"]
        assert "PASSED" in evaluation["feedback"]

        targets = [
            {"id": f"t{i}", "content": "please" if i % 2 else "one two three four five six"}
            for i in range(12)
        ]
        many = bot.post("/v1/evaluate", json={"document": TONE, "targets": targets}).json()
        assert [e["target_id"] for e in many["evaluations"]] == [t["id"] for t in targets]
        assert many["summary"] == {"total": 12, "passed": 6, "failed": 6, "incomplete": 0}

        with bot.stream(
            "POST",
            "/v1/evaluate",
            json={"rubric": "tone", "targets": targets},
            headers={"Accept": NDJSON},
        ) as streamed:
            assert streamed.status_code == 200
            assert streamed.headers["content-type"].startswith(NDJSON)
            lines = [json.loads(line) for line in streamed.iter_lines() if line]
        assert sorted(line["index"] for line in lines) == list(range(12))
        for line in lines:
            assert line["target_id"] == targets[line["index"]]["id"]
            assert line["evaluation"]["verdict"] == ("pass" if line["index"] % 2 else "fail")

        too_many = bot.post(
            "/v1/evaluate", json={"rubric": "tone", "targets": [{"content": "x"}] * 1001}
        )
        assert too_many.status_code == 422
        assert "RUBRICFLOW_SERVER_MAX_EVALUATE_TARGETS" in too_many.json()["detail"]
        both = bot.post(
            "/v1/evaluate", json={"rubric": "tone", "document": TONE, "target": {"content": "x"}}
        )
        assert both.status_code == 422 and "either `rubric`" in both.json()["detail"]
        unknown = bot.post("/v1/evaluate", json={"rubric": "tone", "target": {"text": "x"}})
        assert unknown.status_code == 422 and unknown.headers["content-type"] == PROBLEM
        assert bot.post("/v1/evaluate", json={"rubric": "nope", "target": "x"}).status_code == 422
        gone = bot.post("/v1/evaluate", json={"rubric": "nope", "target": {"content": "x"}})
        assert gone.status_code == 404

        # OpenRubricRL's shapes on the same rubric: scores on its scale, keyed by name
        scored = bot.post("/score/tone", json={"task_input": "ask", "model_output": "please"})
        assert scored.json()["criterion_scores"] == {"Short": 1.0, "Polite": 1.0}
        assert scored.json()["rubric_name"] == "Tone"
        batch = bot.post(
            "/batch-score/tone@1.0.0",
            json={"items": [{"task_input": "q", "model_output": o} for o in ("please", "no")]},
        ).json()
        assert [r["overall_score"] for r in batch["results"]] == [1.0, 0.5]
        assert batch["summary"]["total_items"] == 2 and batch["summary"]["average_score"] == 0.75
    assert _count_evaluations(server_db) == 0  # scoring stores nothing


def _refused(response: Any, path: str) -> str:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert [item["path"] for item in body["errors"]] == [path], body
    return str(body["detail"])


def test_rubric_documents_over_http_are_strangers_data(
    start_server, sqlite_db, tmp_path: Path
) -> None:
    secret = tmp_path / "schema.json"
    secret.write_text('{"type": "object", "title": "server-side secret"}')
    reading = f"""
id: reads
criteria:
  - id: shape
    scoring: {{method: schema, schema_ref: {secret}}}
"""
    importing = TONE.replace("function: word_count_between", "function: os:system")
    judging = TONE.replace(
        "scoring: {method: deterministic, function: word_count_between, config: {min: 1, max: 5}}",
        "scoring: {method: llm_verdict, model: 'python:os:system'}",
    )
    needs_judge = """
id: judged
criteria:
  - id: helpful
    description: The reply helps
    scoring: {method: llm_verdict}
"""
    admin = issue_token(sqlite_db, "admin", name="ops")
    server = start_server(sqlite_db)
    with server.client(admin) as ops:
        for document, path in (
            (reading, "criteria[0].scoring.schema_ref"),
            (importing, "criteria[0].scoring.function"),
            (judging, "criteria[0].scoring.model"),
        ):
            for route, body in (
                ("/v1/rubrics", {"document": document}),
                ("/v1/rubrics/lint", {"document": document}),
                ("/v1/evaluate", {"document": document, "target": {"content": "{}"}}),
            ):
                detail = _refused(ops.post(route, json=body), path)
                assert "server-side secret" not in detail
        assert ops.get("/v1/rubrics").json()["rubrics"] == []

        # no judge on this server: a rubric that needs one is refused, naming the setting
        for body in (
            {"document": needs_judge, "target": {"content": "hi"}},
            {"document": needs_judge, "targets": [{"content": "hi"}]},
        ):
            refused = ops.post("/v1/evaluate", json=body)
            assert refused.status_code == 422
            assert "rubricflow serve --llm" in refused.json()["detail"]
        streamed = ops.post(
            "/v1/evaluate",
            json={"document": needs_judge, "target": {"content": "hi"}},
            headers={"Accept": NDJSON},
        )
        assert streamed.status_code == 422 and streamed.headers["content-type"] == PROBLEM
        # registering it is fine: the judge is needed only to score
        assert ops.post("/v1/rubrics", json={"document": needs_judge}).status_code == 201
        assert (
            ops.post("/score/judged", json={"task_input": "", "model_output": "x"}).status_code
            == 422
        )
