"""One door for rubrics: the CLI, the HTTP API and the agent tools load a rubric through
`Core.load_rubrics` (registering through `Application.register_rubrics`), so the same
broken rubric is refused with the same problems whichever door it came through, on a
real SQLite file and an in-process server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from rubricflow.application import Application, ArtifactsAPI
from rubricflow.cli import app as cli_app
from rubricflow.core import Core, RubricText
from rubricflow.errors import RubricValidationError

pytest.importorskip("fastapi")


def _rubric(scoring: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "post",
        "name": "Post",
        "version": "1.0.0",
        "criteria": [{"id": "short", "description": "Short", "scoring": scoring}],
    }


#: a check whose options `validate` reports: it could never run
BROKEN = _rubric(
    {"method": "deterministic", "function": "word_count_between", "config": {"min": "abc"}}
)
#: a stranger's rubric that names code to import
IMPORTS_CODE = _rubric({"method": "deterministic", "function": "os:system"})


def _problem_lines(message: str) -> list[str]:
    """The `path: message` lines of a RubricValidationError's text, without its source."""
    return [line.strip() for line in message.splitlines()[1:] if line.strip()]


def _by_cli(db: str, path: Path) -> list[str]:
    result = CliRunner().invoke(cli_app, ["rubrics", "register", str(path), "--db", db])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {path}: invalid rubric")
    return _problem_lines(result.stderr)


def _by_http(db: str, document: str) -> list[str]:
    from fastapi.testclient import TestClient

    from rubricflow.server import ServerSettings, create_app

    settings = ServerSettings(db=db, auth=False, review_workers=0, webhooks=False, access_log=False)
    with TestClient(create_app(settings)) as client:
        response = client.post("/v1/rubrics", json={"document": document})
        listed = client.get("/v1/rubrics").json()
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["detail"].startswith("<request>: invalid rubric")
    assert listed["rubrics"] == []
    assert _problem_lines(problem["detail"]) == [
        f"{e['path']}: {e['message']}" for e in problem["errors"]
    ]
    return _problem_lines(problem["detail"])


def _by_tools(db: str, document: str) -> list[str]:
    from rubricflow.tools import ToolDispatcher

    async def call() -> dict[str, Any]:
        async with await Application.open(db) as application:
            outcome = await ToolDispatcher(application).run(
                "evaluate_text", {"content": "hello", "rubric_document": document}
            )
        return json.loads(outcome.content)

    refused = asyncio.run(call())
    assert refused["error"]["message"].startswith("<tool call>: invalid rubric"), refused
    return _problem_lines(refused["error"]["message"])


def test_a_broken_rubric_is_refused_alike_by_the_cli_http_and_tools(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'doors.db'}"
    document = yaml.safe_dump(BROKEN)
    path = tmp_path / "broken.yaml"
    path.write_text(document)

    cli, http, tools = _by_cli(db, path), _by_http(db, document), _by_tools(db, document)
    assert cli == http == tools
    assert len(cli) == 1 and cli[0].startswith("criteria[0].scoring.config.min: ")


def test_a_strangers_rubric_that_names_code_is_refused_alike(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'doors.db'}"
    document = json.dumps(IMPORTS_CODE)

    http, tools = _by_http(db, document), _by_tools(db, document)
    assert http == tools
    assert http[0].startswith("criteria[0].scoring.function: ")
    assert "sent over HTTP or in a tool call are data" in http[0]


async def test_a_stranger_gives_text_not_a_path_and_a_local_file_may_read_beside_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "post.schema.json").write_text(json.dumps({"type": "object"}))
    local = _rubric({"method": "schema", "schema_ref": "post.schema.json"})
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump(local))
    core = Core()

    (loaded,) = await core.load_rubrics([path])
    assert loaded.rubrics[0].criteria[0].scoring.schema_ == {"type": "object"}
    with pytest.raises(RubricValidationError, match=r"schema_ref"):
        await core.load_rubrics([RubricText(path.read_text(), "<upload>")], trust="stranger")
    from rubricflow.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="comes as text"):
        await core.load_rubrics([path], trust="stranger")


async def _scenario(api: ArtifactsAPI) -> list[Any]:
    """One command's worth of artifact work, written once against the protocol."""
    from rubricflow.application import ArtifactType, RubricBinding

    saved = await api.set_type(
        "note", ArtifactType(name="note", rubrics=(RubricBinding(rubric_id="post"),))
    )
    made = await api.create("note", "hello", title="first", artifact_id="n-1")
    listed = [a.id async for a in api.list(type="note", limit=5)]
    archived = await api.archive(made.id, reason="done with it")
    events = await api.history(made.id)
    submitted = await api.create_and_submit("note", '{"a": 1}', title="second")
    draft = await api.create("note", "not json", artifact_id="n-3")
    resubmitted = await api.submit_for_review(draft.id)
    queued = await api.create_and_submit("note", "[]", defer=True)
    outcomes = [
        (
            o.status,
            o.queued,
            [(e.rubric_id, e.verdict, e.passed, e.score) for e in o.evaluations],
            sorted(o.to_dict()),
        )
        for o in (submitted, resubmitted, queued)
    ]
    return [
        outcomes,
        saved.name,
        [t.name for t in await api.list_types()],
        (await api.get(made.id)).title,
        listed,
        archived.status,
        [(e.trigger, e.dest, e.reason) for e in events],
        await api.evaluations(made.id),
    ]


async def test_the_artifacts_api_is_one_path_in_process_and_over_http(tmp_path: Path) -> None:
    import httpx

    from rubricflow.client import AsyncClient
    from rubricflow.server import ServerSettings, create_app

    results = []
    for name in ("local", "remote"):
        db = f"sqlite+aiosqlite:///{tmp_path / name}.db"
        async with await Application.open(db) as application:
            await application.register_rubrics(
                [
                    RubricText(
                        json.dumps(_rubric({"method": "deterministic", "function": "valid_json"}))
                    )
                ]
            )
            if name == "local":
                results.append(await _scenario(application.artifacts_api("alice")))
        if name == "remote":
            settings = ServerSettings(
                db=db, auth=False, review_workers=0, webhooks=False, access_log=False
            )
            app = create_app(settings)
            async with app.router.lifespan_context(app):
                transport = httpx.ASGITransport(app=app)
                async with AsyncClient(
                    "http://127.0.0.1:8000", "unused", transport=transport
                ) as client:
                    results.append(await _scenario(client))
    local, remote = results
    assert local == remote
    assert local[5] == "archived" and local[4] == ["n-1"]
    assert [(status, queued) for status, queued, _, _ in local[0]] == [
        ("approved", False),
        ("needs_revision", False),
        ("pending_review", True),
    ]
