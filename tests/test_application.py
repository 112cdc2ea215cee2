"""The application core every front door calls: one store, one plugin registry, and
the operations over them, on a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from rubricflow.application import Application
from rubricflow.cli import app as cli_app
from rubricflow.core import RubricText
from rubricflow.errors import NotFoundError
from rubricflow.review import ArtifactType, RubricBinding


def _rubric(version: str = "1.0.0", keys: tuple[str, ...] = ("title", "body")) -> dict[str, Any]:
    return {
        "id": "post",
        "name": "Complete post",
        "version": version,
        "pass_threshold": 0.7,
        "criteria": [
            {
                "id": "fields",
                "description": "The post has every field it needs",
                "scoring": {
                    "method": "deterministic",
                    "function": "json_has_keys",
                    "config": {"keys": list(keys)},
                },
            }
        ],
    }


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'core.db'}"


async def test_registers_lints_and_diffs_rubrics_given_as_text(db: str) -> None:
    async with await Application.open(db) as application:
        first = await application.register_rubrics(
            [RubricText(json.dumps(_rubric()), suffix=".json")]
        )
        assert [(r.rubric.id, r.created) for r in first] == [("post", True)]
        again = await application.register_rubrics(
            [RubricText(json.dumps(_rubric()), suffix=".json")]
        )
        assert [r.created for r in again] == [False]
        text = yaml.safe_dump(_rubric("1.1.0", ("title", "body", "tags")))
        await application.register_rubrics([RubricText(text, suffix=".yaml")])

        diff = await application.diff_rubric("post")
        assert (diff.before_version, diff.after_version) == ("1.0.0", "1.1.0")
        assert diff.scoring_changed
        fields = [str(f) for c in diff.criteria for f in c.fields]
        assert fields == ["scoring.config.keys[2]: added 'tags'"]

        report = await application.lint_rubric_text("id: [unclosed", source="upload.yaml")
        assert not report.valid
        assert report.path == "upload.yaml"
        assert "upload.yaml" in str(report.errors[0]) or report.errors[0].message


async def test_a_diff_needs_two_versions_and_says_which_exist(db: str) -> None:
    async with await Application.open(db) as application:
        await application.register_rubrics([RubricText(json.dumps(_rubric()), suffix=".json")])
        with pytest.raises(NotFoundError, match=r"no version before 1\.0\.0.*1\.0\.0"):
            await application.diff_rubric("post")
        with pytest.raises(NotFoundError, match="no rubric 'nope'"):
            await application.diff_rubric("nope")


async def test_evaluate_stores_nothing_and_the_gate_stores_its_review(db: str) -> None:
    async with await Application.open(db) as application:
        (registered,) = await application.register_rubrics(
            [RubricText(json.dumps(_rubric()), suffix=".json")]
        )
        evaluations = await application.evaluate(
            registered.rubric, [{"id": "a", "content": {"title": "t", "body": "b"}}, "plain"]
        )
        assert [e.verdict for e in evaluations] == ["pass", "fail"]
        assert await application.evaluations.count() == 0

        await application.artifacts.set_type(
            ArtifactType(name="blog", rubrics=(RubricBinding(rubric_id="post"),))
        )
        artifact = await application.artifacts.create(
            "blog", {"title": "t", "body": "b"}, actor="bot"
        )
        outcome = await application.artifacts.submit_for_review(artifact.id, actor="bot")
        assert outcome.artifact.status == "approved"
        assert await application.evaluations.count() == 1
        usage = await application.evaluations.judge_usage()
        assert sum(u.llm_calls for u in usage) == 0
        rates = await application.evaluations.criterion_pass_rates("post")
        assert [(r.criterion_id, r.passed, r.scored) for r in rates] == [("fields", 1, 1)]


async def test_a_store_the_caller_holds_stays_open(db: str) -> None:
    from rubricflow.store import Store

    store = await Store.open(db)
    try:
        async with Application(store) as application:
            await application.register_rubrics([RubricText(json.dumps(_rubric()), suffix=".json")])
        assert [r.id for r in await store.rubrics.list_latest()] == ["post"]
    finally:
        await store.close()


def test_cli_rubrics_diff(db: str, tmp_path: Path) -> None:
    runner = CliRunner()
    for version, keys in (("1.0.0", ("title",)), ("1.1.0", ("title", "body"))):
        path = tmp_path / f"post-{version}.yaml"
        path.write_text(yaml.safe_dump(_rubric(version, keys)))
        result = runner.invoke(cli_app, ["rubrics", "register", str(path), "--db", db])
        assert result.exit_code == 0, result.output
    result = runner.invoke(cli_app, ["rubrics", "diff", "post", "--db", db])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "post 1.0.0 -> 1.1.0: scoring changed",
        "  version: '1.0.0' -> '1.1.0'",
        "  criterion fields: changed",
        "    scoring.config.keys[1]: added 'body'",
    ]
    result = runner.invoke(
        cli_app,
        ["rubrics", "diff", "post", "--from", "1.1.0", "--to", "1.1.0", "--db", db, "--json"],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["identical"] is True
    result = runner.invoke(cli_app, ["rubrics", "diff", "post", "--from", "9.9.9", "--db", db])
    assert result.exit_code == 2
    assert "rubric 'post' has no version 9.9.9" in result.stderr


def test_a_refused_submit_of_new_content_creates_nothing(db: str, tmp_path: Path) -> None:
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(cli_app, [*args, "--db", db])

    rubric = tmp_path / "post.yaml"
    rubric.write_text(yaml.safe_dump(_rubric()))
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "required": ["title"]}))
    assert run("rubrics", "register", str(rubric)).exit_code == 0
    result = run("types", "set", "blog", "--rubric", "post", "--content-schema", str(schema))
    assert result.exit_code == 0, result.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"body": "no title"}))

    result = run("artifacts", "submit", "--type", "blog", "--defer", str(bad))
    assert result.exit_code == 2
    assert "nothing was created" in result.stderr
    assert "$/: 'title' is a required property" in result.stderr

    assert run("rubrics", "delete", "post").exit_code == 0
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"title": "t", "body": "b"}))
    result = run("artifacts", "submit", "--type", "blog", "--defer", str(good))
    assert result.exit_code == 2
    assert "register it (or bind another)" in result.stderr
    assert "nothing was created" in result.stderr

    listed = run("artifacts", "list", "--json")
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout)["artifacts"] == []


def test_runs_stored_with_a_credential_show_it_masked(db: str) -> None:
    from datetime import datetime, timezone

    from rubricflow.runs import RunInfo
    from rubricflow.store import Store

    secret_spec = "openai:judge@http://bot:hunter2secret@judge.local/v1?key=sk-abcdef123456"

    async def store_old_run() -> None:
        async with await Store.open(db) as store:
            info = RunInfo(
                id="run-old",
                rubric_id="post",
                rubric_version="1.0.0",
                source="targets.jsonl",
                started_at=datetime.now(timezone.utc).isoformat(),
                options={"llm": secret_spec},
            )
            await store.runs.start(info)

    import asyncio

    asyncio.run(store_old_run())
    runner = CliRunner()
    for args in (["runs", "show", "run-old", "--json"], ["runs", "list", "--json"]):
        result = runner.invoke(cli_app, [*args, "--db", db])
        assert result.exit_code == 0, result.output
        assert "hunter2secret" not in result.stdout and "sk-abcdef123456" not in result.stdout
        assert "judge.local" in result.stdout


def test_a_rubric_whose_check_options_are_broken_is_not_registered(db: str, tmp_path: Path) -> None:
    from rubricflow.errors import RubricValidationError

    broken = _rubric()
    broken["criteria"][0]["scoring"] = {
        "method": "deterministic",
        "function": "word_count_between",
        "config": {"min": "abc"},
    }
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(broken))
    runner = CliRunner()
    result = runner.invoke(cli_app, ["rubrics", "register", str(path), "--db", db])
    assert result.exit_code == 2, result.output
    assert "criteria[0].scoring.config.min" in result.stderr
    assert f"{path}: invalid rubric" in result.stderr
    listed = runner.invoke(cli_app, ["rubrics", "list", "--json", "--db", db])
    assert json.loads(listed.stdout)["rubrics"] == []

    async def register_text() -> None:
        async with await Application.open(db) as application:
            with pytest.raises(RubricValidationError, match=r"scoring\.config\.min"):
                await application.register_rubrics([RubricText(json.dumps(broken), suffix=".json")])
            assert await application.rubrics.list_latest() == []

    import asyncio

    asyncio.run(register_text())
