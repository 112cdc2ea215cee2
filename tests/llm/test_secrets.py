"""API keys never appear in logs, errors, reprs, ledger records, stored evaluations or CLI
reports, even when a server echoes them back."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rubricflow import evaluate
from rubricflow.cli import app
from rubricflow.llm import LLMSession, Secret, create_provider, redact

from .fixtures import fast, rubric
from .scripted import Reply, ScriptedServer

KEY = "sk-proj-SeCrEt0123456789abcdefXYZ"
RUBRIC = rubric({"id": "polite", "description": "The reply is polite."})


def echoing(request) -> Reply:  # type: ignore[no-untyped-def]
    """A misbehaving server that puts the key it received into its error body."""
    sent = request.headers.get("authorization", "")
    return Reply(500, {"error": {"message": f"upstream rejected {sent}; key={KEY}"}})


def assert_clean(*texts: str) -> None:
    for text in texts:
        assert KEY not in text
        assert KEY[8:20] not in text  # no recognisable fragment either


async def test_the_key_is_never_shown(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    with ScriptedServer(echoing) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")  # the key goes only there
        session = LLMSession(
            f"openai:judge@{server.url}/v1", cache=None, settings=fast(max_attempts=2)
        )
        async with session:
            provider = session.provider_now()
            evaluation = await evaluate(RUBRIC, "Thanks!", options={"llm": session})
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    result = evaluation.criteria[0]
    assert result.status == "unable_to_evaluate"
    assert "***" in result.notes
    assert_clean(
        repr(provider),
        provider.label,
        repr(session),
        repr(vars(provider)),
        result.notes,
        json.dumps(evaluation.to_dict()),
        *(record.getMessage() for record in caplog.records),
    )


async def test_an_auth_failure_body_is_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    body = {"error": {"message": f"Incorrect API key provided: {KEY[:8]}****{KEY[-4:]}"}}
    with ScriptedServer(lambda request: Reply(401, body)) as server:
        evaluation = await evaluate(
            RUBRIC,
            "Thanks!",
            options={"llm": f"openai:judge@{server.url}/v1", "llm_cache": None},
        )
        assert len(server.requests) == 1  # not retried
    notes = evaluation.criteria[0].notes
    assert "HTTP 401" in notes and "check OPENAI_API_KEY" in notes
    assert KEY[-4:] not in notes


def test_secrets_and_credentials_are_redacted() -> None:
    secret = Secret("my-very-own-token-42")
    assert repr(secret) == str(secret) == "Secret('***')"
    assert f"{secret}" == "Secret('***')"
    assert redact("x my-very-own-token-42 y") == "x *** y"
    assert redact("http://user:pw@host:1/v1") == "http://***@host:1/v1"
    assert redact("https://h/v1?key=abc123&x=1") == "https://h/v1?key=***&x=1"
    assert redact("Authorization: Bearer abcdefghijkl") == "Authorization: Bearer ***"
    assert redact("sk-ant-api03-abcdefghij") == "sk-ant-***"
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(secret)


def test_credentials_in_a_spec_url_are_not_shown() -> None:
    provider = create_provider("openai:m@http://alice:hunter2-password@127.0.0.1:9/v1")
    assert "hunter2" not in provider.label and "hunter2" not in repr(provider)


def test_the_cli_never_prints_the_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("RUBRICFLOW_LLM_MAX_ATTEMPTS", "1")
    rubric_file = tmp_path / "r.yaml"
    rubric_file.write_text("id: r\ncriteria:\n  - id: polite\n    description: polite\n")
    target = tmp_path / "t.json"
    target.write_text('{"id": "t1", "content": "Thanks!"}')
    runner = CliRunner()
    with ScriptedServer(echoing) as server:
        spec = f"openai:judge@{server.url}/v1"
        human = runner.invoke(app, ["eval", str(rubric_file), str(target), "--llm", spec])
        as_json = runner.invoke(
            app, ["eval", str(rubric_file), str(target), "--llm", spec, "--json"]
        )
        check = runner.invoke(app, ["llm", "check", spec, "--json"])
    assert human.exit_code == as_json.exit_code == 1
    assert check.exit_code == 1
    assert "***" in as_json.stdout
    assert_clean(human.output, as_json.output, check.output)
