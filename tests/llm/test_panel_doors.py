"""A panel is a judge at every door (issue 28, item 2): `eval --llm A --llm B --panel`,
`types set --llm ... --panel` (the type's reviews use it), and the refusals that name the
fix. Judges are model names on the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from rubricflow.application import Application
from rubricflow.cli import app
from rubricflow.model import parse_rubric

from .fixtures import clean_llm_env, server
from .scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

__all__ = ["clean_llm_env", "server"]

RUBRIC = {
    "id": "sources",
    "version": "1.0.0",
    "pass_threshold": 0.5,
    "criteria": [{"id": "cites", "description": "Cites a source.", "scoring": {"method": "llm"}}],
}
SAID = {"a": "MET", "b": "UNMET", "c": "MET"}


def by_model(request: Recorded) -> Reply:
    model = str(request.json["model"])
    return openai_reply(verdict(SAID[model], f"{model} read it"))


def judges(server: ScriptedServer, *models: str) -> list[str]:
    return [arg for m in models for arg in ("--llm", f"openai:{m}@{server.url}/v1")]


def test_eval_takes_a_panel_and_prints_its_confidence_and_margin(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.responder = by_model
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(yaml.safe_dump(RUBRIC))
    target = tmp_path / "target.json"
    target.write_text(json.dumps({"id": "t1", "content": "Per the census, ..."}))
    args = ["eval", str(rubric), str(target), "--json", "--no-cache"]
    result = CliRunner().invoke(app, [*args, *judges(server, "a", "b", "c"), "--panel", "majority"])
    assert result.exit_code == 0, result.output
    line = json.loads(result.stdout.splitlines()[0])
    assert line["margin"] == 0.5 and line["threshold"] == 0.5
    (criterion,) = line["criteria"]
    assert criterion["verdict"] == "MET" and criterion["confidence_source"] == "panel"
    assert abs(criterion["confidence"] - 2 / 3) < 1e-9
    assert sorted(str(r.json["model"]) for r in server.requests) == ["a", "b", "c"]

    refused = CliRunner().invoke(app, [*args, *judges(server, "a", "b")])
    assert refused.exit_code == 2 and "--panel" in refused.output
    refused = CliRunner().invoke(app, [*args, *judges(server, "a"), "--panel", "plurality"])
    assert refused.exit_code == 2 and "unknown panel policy 'plurality'" in refused.output


async def _register(db: str) -> None:
    async with await Application.open(db) as application:
        await application.store.rubrics.register(parse_rubric(RUBRIC))


async def _submit(db: str) -> Any:
    async with await Application.open(db) as application:
        outcome = await application.create_and_submit("note", "Per the census, ...", actor="bot")
        return (await application.artifacts.evaluations(outcome.artifact.id))[0]


def test_a_types_judge_panel_reviews_its_artifacts(server: ScriptedServer, tmp_path: Path) -> None:
    server.responder = by_model
    db = f"sqlite+aiosqlite:///{tmp_path / 'rf.db'}"
    asyncio.run(_register(db))
    result = CliRunner().invoke(
        app,
        [
            "types",
            "set",
            "note",
            "--rubric",
            "sources",
            *judges(server, "a", "b", "c"),
            "--panel",
            "any_unmet",
            "--db",
            db,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    saved = json.loads(result.stdout)
    assert saved["judge"].startswith("panel:any_unmet(openai:a@")
    evaluation = asyncio.run(_submit(db))
    cites = evaluation.criterion("cites")
    assert cites.verdict == "UNMET" and cites.confidence_source == "panel"  # b saw it
    assert {call.judge.split("@")[0] for call in cites.llm_calls} == {
        "openai:a",
        "openai:b",
        "openai:c",
    }


def test_llm_check_checks_each_judge_of_a_panel(server: ScriptedServer) -> None:
    def respond(request: Recorded) -> Reply:
        if request.json["model"] == "b":
            return Reply(400, {"error": {"message": "no such model"}})
        return openai_reply(verdict("MET"))

    server.responder = respond
    spec = f"panel:majority(openai:a@{server.url}/v1 | openai:b@{server.url}/v1)"
    result = CliRunner().invoke(app, ["llm", "check", spec, "--json"])
    assert result.exit_code == 1, result.output
    reports = json.loads(result.stdout)
    assert [r["ok"] for r in reports] == [True, False]
    assert reports[1]["provider"].startswith("openai:b@")


async def _queue(db: str) -> str:
    from rubricflow.review import ArtifactType, RubricBinding

    async with await Application.open(db) as application:
        await application.store.rubrics.register(parse_rubric(RUBRIC))
        binding = (RubricBinding(rubric_id="sources"),)
        await application.artifacts.set_type(ArtifactType(name="note", rubrics=binding))
        outcome = await application.create_and_submit("note", "text", actor="bot", defer=True)
        return outcome.artifact.id


async def _evaluations(db: str, artifact_id: str) -> Any:
    async with await Application.open(db) as application:
        return await application.artifacts.evaluations(artifact_id)


def test_a_worker_judges_with_its_panel(server: ScriptedServer, tmp_path: Path) -> None:
    server.responder = by_model
    db = f"sqlite+aiosqlite:///{tmp_path / 'rf.db'}"
    artifact_id = asyncio.run(_queue(db))
    result = CliRunner().invoke(
        app,
        ["worker", "--once", "--db", db, *judges(server, "a", "c"), "--panel", "unanimous"],
    )
    assert result.exit_code == 0, result.output
    (evaluation,) = asyncio.run(_evaluations(db, artifact_id))
    cites = evaluation.criterion("cites")
    assert cites.verdict == "MET" and cites.confidence == 1.0
    assert cites.confidence_source == "panel"
