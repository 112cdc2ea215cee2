"""A judge that learns (issue 28, item 6): `propose_revision` and `rubricflow calibrate
--propose` draft the rubric's next version from the disagreements, through a real HTTP
judge (the scripted OpenAI-compatible server of tests/llm).

The scripted judge calls every reply with "thanks" polite, so it passes the curt
"Thanks. No." replies people fail, until the criterion's description says that a curt
reply is not polite: the clarification it writes when asked says exactly that (or, in
the judge that cannot learn, repeats the old description)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, schema_of
from typer.testing import CliRunner

from rubricflow import parse_rubric
from rubricflow.calibration.propose import next_version, propose_revision
from rubricflow.cli import app
from rubricflow.formats import load_rubric
from rubricflow.llm import LLMSession

RUBRIC = """\
id: replies
version: 1.2.0
criteria:
  - id: polite
    description: The reply is polite.
  - id: length
    description: The reply is short.
    scoring: {method: deterministic, function: char_count_between, config: {max: 400}}
"""
CLEARER = "The reply is polite; a curt reply (a bare 'Thanks. No.') is not polite."

POLITE = [f"Thanks for asking! We can help with order {i}." for i in range(8)]
RUDE = [f"Go away, order {i} is not our problem." for i in range(8)]
CURT = [f"Thanks. No. (order {i})" for i in range(8)]


def examples() -> list[dict[str, Any]]:
    rows = [(text, "MET") for text in POLITE] + [(text, "UNMET") for text in RUDE + CURT]
    return [
        {"id": f"x{index}", "content": text, "labels": {"polite": label}}
        for index, (text, label) in enumerate(rows)
    ]


def judge(learns: bool) -> Any:
    def answer(request: Recorded) -> Reply:
        properties = (schema_of(request) or {}).get("properties", {})
        text = request.text
        if "levels" in properties:  # asked to clarify the criterion
            wording = CLEARER if learns else "The reply is polite."
            return openai_reply({"reasoning": "r", "description": wording, "levels": []})
        content = text.rsplit("<content>", 1)[1]
        requirement = re.search(r"Requirement: (.*)", text)
        strict = requirement is not None and "curt" in requirement[1]
        polite = "Thanks" in content and not (strict and "Thanks. No." in content)
        return openai_reply({"reasoning": "r", "verdict": "MET" if polite else "UNMET"})

    return answer


@pytest.fixture
def learning_judge() -> Any:
    with ScriptedServer(judge(True)) as running:
        yield running


@pytest.fixture
def stubborn_judge() -> Any:
    with ScriptedServer(judge(False)) as running:
        yield running


def spec(server: ScriptedServer) -> str:
    return f"openai:judge@{server.url}/v1"


def test_next_version_bumps_the_minor() -> None:
    assert next_version("1.2.3") == "1.3.0"
    assert next_version("2.0.0-rc.1+b7") == "2.1.0"


async def test_the_draft_learns_and_improves_on_held_out_labels(
    learning_judge: ScriptedServer,
) -> None:
    rubric = parse_rubric(yaml.safe_load(RUBRIC))
    async with LLMSession(spec(learning_judge), cache=None) as session:
        proposal = await propose_revision(rubric, examples(), llm=session, resamples=300)
    polite = proposal.criteria[0]
    assert (polite.criterion_id, polite.labelled, polite.disagreements) == ("polite", 24, 8)
    assert polite.description_changed and polite.examples_added == 4
    # the deterministic criterion has no labels and cannot learn
    assert proposal.criteria[1].examples_added == 0
    draft = proposal.draft
    assert draft.version == "1.3.0" and draft.criteria[0].description == CLEARER
    # the disagreements come first among the few-shot examples, graded as people did
    shots = draft.criteria[0].examples
    assert [shot.label for shot in shots[:2]] == ["UNMET", "UNMET"]
    assert all("Thanks. No." in shot.output for shot in shots if shot.label == "UNMET")
    assert "the judge had said MET" in (shots[0].explanation or "")
    assert {shot.label for shot in shots} == {"MET", "UNMET"}
    # baseline: 16 of 24 agree, kappa 0.4 exactly; each fold's draft learned from the
    # other folds' curt replies, so every held-out label agrees
    assert proposal.baseline.value == pytest.approx(0.4)
    assert proposal.held_out.value == pytest.approx(1.0)
    assert proposal.difference.value == pytest.approx(0.6)
    assert proposal.difference.interval is not None and proposal.difference.interval.low > 0
    assert proposal.improved and "improved by +0.600" in proposal.verdict()
    document = proposal.to_dict()
    assert document["improved"] is True and document["rubric"]["draft_version"] == "1.3.0"
    # 48 judgments (24 now, 24 held out), and one clarification per fold and the final
    assert proposal.usage["llm_calls"] == 48 + 5 + 1
    assert len(learning_judge.requests) == 48 + 5 + 1


async def test_a_draft_that_does_not_help_is_not_an_improvement(
    stubborn_judge: ScriptedServer,
) -> None:
    rubric = parse_rubric(yaml.safe_load(RUBRIC))
    async with LLMSession(spec(stubborn_judge), cache=None) as session:
        proposal = await propose_revision(rubric, examples(), llm=session, resamples=200)
    assert proposal.difference.value == pytest.approx(0.0)
    assert not proposal.improved
    assert "not an improvement" in proposal.verdict()
    assert not proposal.criteria[0].description_changed  # the same words came back


def test_cli_writes_the_draft_and_registers_only_an_improvement(
    tmp_path: Path, learning_judge: ScriptedServer
) -> None:
    rubric_file = tmp_path / "replies.yaml"
    rubric_file.write_text(RUBRIC, encoding="utf-8")
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(e) + "\n" for e in examples()), encoding="utf-8")
    draft = tmp_path / "draft.yaml"
    db = tmp_path / "rf.db"
    result = CliRunner().invoke(
        app,
        [
            "calibrate", str(rubric_file), str(labels), "--llm", spec(learning_judge),
            "--no-cache", "--propose", "-o", str(draft), "--resamples", "200",
            "--register", "--db", f"sqlite:///{db}", "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["improved"] is True and report["registered"] is True
    assert report["difference"]["value"] == pytest.approx(0.6)
    written = load_rubric(draft)
    assert written.version == "1.3.0" and written.criteria[0].description == CLEARER
    shown = CliRunner().invoke(app, ["rubrics", "show", "replies", "--db", f"sqlite:///{db}"])
    assert shown.exit_code == 0 and "1.3.0" in shown.output


def test_cli_keeps_a_draft_that_does_not_improve_out_of_the_registry(
    tmp_path: Path, stubborn_judge: ScriptedServer
) -> None:
    rubric_file = tmp_path / "replies.yaml"
    rubric_file.write_text(RUBRIC, encoding="utf-8")
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(e) + "\n" for e in examples()), encoding="utf-8")
    draft = tmp_path / "draft.yaml"
    db = tmp_path / "rf.db"
    result = CliRunner().invoke(
        app,
        [
            "calibrate", str(rubric_file), str(labels), "--llm", spec(stubborn_judge),
            "--no-cache", "--propose", "-o", str(draft), "--resamples", "100",
            "--register", "--db", f"sqlite:///{db}",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # the console may wrap a long line
    assert "not registered" in said and "not an improvement" in said
    assert draft.exists()  # the draft is written for people to read either way


def test_the_api_proposes_and_registers_with_the_server_s_judge(
    tmp_path: Path, learning_judge: ScriptedServer
) -> None:
    from fastapi.testclient import TestClient

    from rubricflow.server import ServerSettings, create_app

    db = f"sqlite+aiosqlite:///{tmp_path / 'rf.db'}"
    settings = ServerSettings(
        db=db,
        auth=False,
        review_workers=0,
        webhooks=False,
        access_log=False,
        judge=spec(learning_judge),
    )
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/rubrics", json={"document": RUBRIC}).status_code == 201
        answer = client.post(
            "/v1/rubrics/replies/proposals",
            json={"examples": examples(), "register": True, "resamples": 200},
        )
        assert answer.status_code == 200, answer.text
        found = answer.json()
        assert found["registered"] is True and found["proposal"]["improved"] is True
        assert found["draft"]["version"] == "1.3.0"
        assert client.get("/v1/rubrics/replies").json()["version"] == "1.3.0"
        bad = client.post(
            "/v1/rubrics/replies/proposals",
            json={"examples": [{"content": "x", "labels": {"tone": "MET"}}]},
        )
        assert bad.status_code == 422 and "no criterion 'tone'" in bad.json()["detail"]
    without = ServerSettings(db=db, auth=False, review_workers=0, webhooks=False)
    with TestClient(create_app(without)) as client:
        refused = client.post("/v1/rubrics/replies/proposals", json={})
        assert refused.status_code == 422 and "no judge" in refused.json()["detail"]
