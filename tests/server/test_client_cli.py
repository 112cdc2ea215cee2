"""The CLI with --server: the same output as with --db for the store commands, the
token never shown, and commands the API has no equivalent for refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_assertions import assert_error
from typer.testing import CliRunner

from rubricflow.cli import app

from .artifact_setup import FAIL, PASS, Tokens, prepare
from .conftest import RunningServer

runner = CliRunner()
CLEAN_ENV = {"RUBRICFLOW_SERVER_URL": None, "RUBRICFLOW_TOKEN": None}


def _run(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={**CLEAN_ENV, **(env or {})})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def prepared(module_sqlite_db: str, request: pytest.FixtureRequest) -> tuple[RunningServer, Tokens]:
    """One server on a store prepared before it starts, shared by this module's two tests
    (the second changes nothing: every command it runs is refused)."""
    tokens = prepare(module_sqlite_db)
    server: RunningServer = request.getfixturevalue("module_sqlite_server")
    return server, tokens


def test_server_commands_print_what_db_commands_print(
    prepared: tuple[RunningServer, Tokens], tmp_path: Path
) -> None:
    server, tokens = prepared
    sqlite_db = server.db_url
    remote = ("--server", server.url, "--token", tokens.admin)
    local = ("--db", sqlite_db)
    content = tmp_path / "post.json"
    content.write_text(f'{{"text": "{FAIL}"}}')

    code, made, _ = _run("artifacts", "submit", str(content), "--type", "note", "--json", *remote)
    assert code == 1  # needs revision: not approved
    artifact_id = re.search(r'"id": "([0-9a-f]+)"', made).group(1)  # type: ignore[union-attr]
    fixed = tmp_path / "fixed.json"
    fixed.write_text(f'{{"text": "{PASS}"}}')
    code, _, _ = _run("artifacts", "revise", artifact_id, str(fixed), "--reason", "fixed", *remote)
    assert code == 0
    assert _run("artifacts", "submit", artifact_id, *remote)[0] == 0

    for command in (
        ("artifacts", "show", artifact_id, "--json"),
        ("artifacts", "show", artifact_id),
        ("artifacts", "history", artifact_id),
        ("artifacts", "history", artifact_id, "--json"),
        ("artifacts", "evaluations", artifact_id, "--json"),
        ("artifacts", "list"),
        ("types", "list", "--json"),
        ("types", "show", "note"),
        ("rubrics", "list", "--json"),
        ("rubrics", "list"),
        ("rubrics", "show", "gate"),
        ("rubrics", "history", "gate", "--json"),
    ):
        here = _run(*command, *local)
        there = _run(*command, *remote)
        assert here[0] == 0, here
        assert there == here, command

    # the actor is the token's name
    code, history, _ = _run("artifacts", "history", artifact_id, *remote)
    assert " by admin" in history
    # a decision over the server, and the refusal a person reads
    code, _, error = _run("artifacts", "reject", artifact_id, "--reason", "no", *remote)
    assert code == 2 and "approved" in error and "reject" in error


def test_the_token_is_never_shown_and_what_cannot_run_remotely_is_refused(
    prepared: tuple[RunningServer, Tokens],
) -> None:
    server, tokens = prepared
    sqlite_db = server.db_url
    secret = tokens.sub
    env: dict[str, str | None] = {"RUBRICFLOW_SERVER_URL": server.url, "RUBRICFLOW_TOKEN": secret}
    outputs: list[str] = []
    for args in (
        ("artifacts", "show", "missing"),
        ("artifacts", "approve", "missing", "--reason", "r"),
        ("types", "set", "note", "--rubric", "gate"),
        ("artifacts", "list", "--db", sqlite_db),
        ("evaluations", "list"),
        ("artifacts", "create", "x.json", "--type", "note", "--actor", "someone"),
    ):
        code, out, err = _run(*args, env=env)
        assert code == 2, (args, out, err)
        assert "Traceback" not in out + err
        outputs.append(out + err)
    code, out, err = _run("artifacts", "show", "x", "--token", "rf_wrong-secret", env=env)
    outputs.append(out + err)
    assert code == 2 and "token" in err
    code, out, err = _run(
        "artifacts", "show", "x", "--server", "http://127.0.0.1:9", "--token", secret
    )
    outputs.append(out + err)
    assert code == 2 and "cannot reach" in err
    for text in outputs:
        assert secret not in text and "rf_wrong-secret" not in text
    assert "no artifact 'missing'" in outputs[0]
    assert "may not" in outputs[2] or "role" in outputs[2]
    assert "not both" in outputs[3]
    assert "no equivalent in the HTTP API" in outputs[4]
    assert "--actor" in outputs[5]
    result = runner.invoke(app, ["evaluations", "show", "e1"], env={**CLEAN_ENV, **env})
    assert_error(result, "evaluations show", "--server")
